//! Per isolate and cluster: the placements this isolate's verbs named that the node facts do not
//! show yet (`aco_core::assumed`), so that pods scored one after another — a Job's, a
//! Deployment's — see each other before the reporter's next push does.
//!
//! The trade, as `filter_memory.rs`'s: nothing is stored anywhere else, so the verbs make no
//! extra binding operation, and an isolate sees only what it named itself. kube-scheduler keeps
//! its connection, so one scheduler's consecutive pods mostly reach the same isolate; those
//! scored elsewhere count from the next facts push (`FACTS_CACHE_MS` plus the reporter's
//! interval), as every pod did before.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use aco_core::assumed::{AssumedPlacements, WithAssumed};
use aco_core::config::Config;
use aco_core::demand::PodDemand;
use aco_core::wire::HostPriority;

use crate::facts::client::ClusterFacts;

#[derive(Default)]
struct Cluster {
    placements: AssumedPlacements,
    /// The facts copy `placements` was last brought up to.
    facts: Weak<ClusterFacts>,
}

thread_local! {
    static CLUSTERS: RefCell<HashMap<String, Cluster>> = RefCell::new(HashMap::new());
}

fn with_cluster<T>(
    cluster: &str,
    facts: &Rc<ClusterFacts>,
    now_ms: u64,
    config: &Config,
    f: impl FnOnce(&mut AssumedPlacements) -> T,
) -> T {
    CLUSTERS.with(|c| {
        let mut clusters = c.borrow_mut();
        let entry = clusters.entry(cluster.to_string()).or_default();
        let new_copy = !std::ptr::eq(entry.facts.as_ptr(), Rc::as_ptr(facts));
        if new_copy || entry.placements.expires_by(now_ms) {
            entry.placements.refresh(&**facts, now_ms, config);
            entry.facts = Rc::downgrade(facts);
        }
        f(&mut entry.placements)
    })
}

/// Runs a verb over `facts` with this isolate's assumed placements of `cluster` in place.
pub fn read<T>(
    cluster: &str,
    facts: &Rc<ClusterFacts>,
    now_ms: u64,
    config: &Config,
    verb: impl FnOnce(&WithAssumed<'_, ClusterFacts>) -> T,
) -> T {
    with_cluster(cluster, facts, now_ms, config, |placements| {
        verb(&placements.over(&**facts))
    })
}

/// The verb named `node` for `pod`: kube-scheduler binds it there.
pub fn assume(
    cluster: &str,
    node: &str,
    pod: &PodDemand,
    facts: &Rc<ClusterFacts>,
    now_ms: u64,
    config: &Config,
) {
    with_cluster(cluster, facts, now_ms, config, |placements| {
        placements.assume(node, pod, &**facts, now_ms, config);
    })
}

/// [`assume`] on the one node alone at the top of a prioritize answer, if there is one
/// (`colony::single_out_top`; every score 0 names none).
pub fn assume_top(
    cluster: &str,
    priorities: &[HostPriority],
    pod: &PodDemand,
    facts: &Rc<ClusterFacts>,
    now_ms: u64,
    config: &Config,
) {
    let Some(max) = priorities.iter().map(|p| p.score).max() else {
        return;
    };
    let mut top = priorities.iter().filter(|p| p.score == max);
    if let (Some(only), None) = (top.next(), top.next()) {
        if max > 0 {
            assume(cluster, &only.host, pod, facts, now_ms, config);
        }
    }
}
