//! What the filter verb rejected for recent pods, for the explanation of the pod's decision.
//! kube-scheduler sends prioritize only the nodes that passed filter, so the rejected ones (and
//! why) are known only to whoever served filter. Filter remembers them here, and the next
//! prioritize of the same pod takes them into its decision.
//!
//! In the Worker this is per isolate: zero extra binding operations on filter and prioritize,
//! at the price of completeness — when prioritize lands in another isolate (or this one was
//! evicted in between), the explanation says `filterReasons: null`.

use std::collections::VecDeque;

use crate::colony::FilterRejections;

/// Pods remembered; the oldest is dropped beyond it. kube-scheduler runs one scheduling cycle at
/// a time and calls prioritize right after filter, so a few are enough; each entry is at most
/// `FILTER_REJECTIONS_KEPT` names and reasons (about 16 KB): ≤ 4 MB in all.
pub const MAX_PODS: usize = 256;

/// A filter older than this belongs to an earlier scheduling attempt: not attached.
pub const MAX_AGE_MS: u64 = 60_000;

#[derive(Debug)]
struct Entry {
    cluster: String,
    key: String,
    at_ms: u64,
    rejections: FilterRejections,
}

/// Recent filter rejections by cluster and pod key, at most [`MAX_PODS`].
#[derive(Debug, Default)]
pub struct FilterMemory {
    entries: VecDeque<Entry>,
}

impl FilterMemory {
    /// Filter served the pod `key` of `cluster`: a later attempt replaces an earlier one.
    pub fn remember(
        &mut self,
        cluster: &str,
        key: &str,
        now_ms: u64,
        rejections: FilterRejections,
    ) {
        self.entries
            .retain(|e| !(e.cluster == cluster && e.key == key));
        if self.entries.len() >= MAX_PODS {
            self.entries.pop_front();
        }
        self.entries.push_back(Entry {
            cluster: cluster.to_string(),
            key: key.to_string(),
            at_ms: now_ms,
            rejections,
        });
    }

    /// The pod's rejections from a recent filter call, removed (one decision each).
    pub fn take(&mut self, cluster: &str, key: &str, now_ms: u64) -> Option<FilterRejections> {
        let i = self
            .entries
            .iter()
            .position(|e| e.cluster == cluster && e.key == key)?;
        let e = self.entries.remove(i)?;
        (now_ms.saturating_sub(e.at_ms) <= MAX_AGE_MS).then_some(e.rejections)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony::RejectedNode;

    fn rejections(node: &str) -> FilterRejections {
        FilterRejections {
            passed: 3,
            rejected: 1,
            by_reason: [("insufficient_cpu".to_string(), 1)].into(),
            nodes: vec![RejectedNode {
                node: node.to_string(),
                code: "insufficient_cpu".to_string(),
                reason: "too small".to_string(),
                unresolvable: false,
            }],
        }
    }

    #[test]
    fn taken_once_by_cluster_and_key_and_only_while_recent() {
        let mut m = FilterMemory::default();
        m.remember("c1", "ns/p", 1_000, rejections("a"));
        m.remember("c2", "ns/p", 1_000, rejections("b"));
        m.remember("c1", "ns/p", 2_000, rejections("c"));
        assert_eq!(
            m.take("c1", "ns/p", 2_000),
            Some(rejections("c")),
            "the later attempt"
        );
        assert_eq!(m.take("c1", "ns/p", 2_000), None, "taken once");
        assert_eq!(
            m.take("c2", "ns/p", 1_000 + MAX_AGE_MS + 1),
            None,
            "too old"
        );
    }

    #[test]
    fn the_oldest_pod_goes_beyond_the_bound() {
        let mut m = FilterMemory::default();
        for i in 0..=MAX_PODS {
            m.remember("c", &format!("ns/p{i}"), 0, rejections("a"));
        }
        assert_eq!(m.take("c", "ns/p0", 0), None);
        assert!(m.take("c", "ns/p1", 0).is_some());
        assert!(m.take("c", &format!("ns/p{MAX_PODS}"), 0).is_some());
    }
}
