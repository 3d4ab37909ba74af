//! Per isolate: what the filter verb rejected for recent pods, for the explanation of the pod's
//! decision. kube-scheduler sends prioritize only the nodes that passed filter, so the rejected
//! ones (and why) are known only to the isolate that served filter. Filter remembers them here,
//! and the next prioritize of the same pod in this isolate takes them into its decision.
//!
//! The trade: zero extra binding operations on filter and prioritize (nothing is stored
//! anywhere else), at the price of completeness: when prioritize lands in another isolate (or
//! this one was evicted in between), the explanation says `filterReasons: null`.

use std::cell::RefCell;
use std::collections::VecDeque;

use aco_core::colony::FilterRejections;

/// Pods remembered per isolate; the oldest is dropped beyond it. kube-scheduler runs one
/// scheduling cycle at a time and calls prioritize right after filter, so a few are enough;
/// each entry is at most `FILTER_REJECTIONS_KEPT` names and reasons (about 16 KB).
const MAX_PODS: usize = 256;

/// A filter older than this belongs to an earlier scheduling attempt: not attached.
const MAX_AGE_MS: u64 = 60_000;

struct Entry {
    cluster: String,
    key: String,
    at_ms: u64,
    rejections: FilterRejections,
}

thread_local! {
    static MEMORY: RefCell<VecDeque<Entry>> = const { RefCell::new(VecDeque::new()) };
}

/// Filter served the pod `key` of `cluster`: a later attempt replaces an earlier one.
pub fn remember(cluster: &str, key: &str, now_ms: u64, rejections: FilterRejections) {
    MEMORY.with(|m| {
        let mut m = m.borrow_mut();
        m.retain(|e| !(e.cluster == cluster && e.key == key));
        if m.len() >= MAX_PODS {
            m.pop_front();
        }
        m.push_back(Entry {
            cluster: cluster.to_string(),
            key: key.to_string(),
            at_ms: now_ms,
            rejections,
        });
    })
}

/// The pod's rejections from this isolate's recent filter call, removed (one decision each).
pub fn take(cluster: &str, key: &str, now_ms: u64) -> Option<FilterRejections> {
    MEMORY.with(|m| {
        let mut m = m.borrow_mut();
        let i = m
            .iter()
            .position(|e| e.cluster == cluster && e.key == key)?;
        let e = m.remove(i)?;
        (now_ms.saturating_sub(e.at_ms) <= MAX_AGE_MS).then_some(e.rejections)
    })
}
