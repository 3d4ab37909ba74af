//! Everything a Worker isolate keeps between requests, in one place — the crate's only
//! `thread_local!` — and what bounds each part. An isolate has 128 MB (DESIGN.md §10); what it
//! keeps is a cache or an outbox, never the only copy of anything a restart would lose for good
//! (the decisions outbox is the exception the colony's protocol covers: they are sent again or
//! count as unknown, never twice).
//!
//! | part | what | bound |
//! |---|---|---|
//! | `config`, `auth` | the vars and credentials, validated once | a few KB |
//! | `given_clock_ms` | the latest time a request gave (only under `TEST_CLOCK_HEADER`) | 8 B |
//! | `clusters` | per cluster: its extender pipeline (facts copy, assumed placements, outlook, colony copies) | facts copies of ≤ [`FACTS_NODE_BUDGET`] nodes in all (least recently used clusters dropped first; the one in use is always kept), colony copies ≤ 256 (`colony/copy.rs`) |
//! | `filter_memory` | filter's rejections for the pod's next prioritize | ≤ 256 pods × ≤ 16 KB (`aco_core::pipeline::FilterMemory`) |
//! | `decisions` | decisions scored here, not yet durable in their colony | ≤ 10,000 per colony (`aco_core::pipeline::DecisionOutbox`) |
//! | `names` | names the Registry admitted, "full" per kind | the registry's limits (`aco_core::registry::AdmittedNames`) |
//! | `telemetry`, `telemetry_flush_scheduled` | counters and unacknowledged batches, colonies' reports | `aco_core::telemetry` (series, `MAX_PENDING` batches) |
//!
//! Each part is borrowed only inside [`with`], never across an await: a request that needs a
//! value across one clones what it needs (an `Rc` of the facts, a `Vec` of decisions).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use aco_core::access::ExtenderAuth;
use aco_core::config::Config;
use aco_core::pipeline::{DecisionOutbox, FilterMemory};
use aco_core::registry::AdmittedNames;
use aco_core::telemetry::outbox::Outbox;

use crate::colony::api::ColonyName;
use crate::pipeline::ClusterState;

/// Nodes of facts copies an isolate keeps across its clusters. The Facts object's rows for 5,000
/// nodes are 2.9 MB of JSON (docs/cost.md); read into records a node takes a few KB, so 40,000
/// nodes stay well inside 128 MB beside the other parts. A cluster above it alone is still kept
/// (it is the one being served); others are dropped least recently used first and fetched again
/// when their scheduler calls.
pub const FACTS_NODE_BUDGET: usize = 40_000;

/// What an isolate keeps: see the module docs for each part's bound.
#[derive(Default)]
pub struct Isolate {
    pub config: RefCell<Option<Rc<Config>>>,
    pub auth: RefCell<Option<Rc<ExtenderAuth>>>,
    pub given_clock_ms: Cell<Option<u64>>,
    pub clusters: RefCell<Clusters>,
    pub filter_memory: RefCell<FilterMemory>,
    pub decisions: RefCell<DecisionOutbox<ColonyName>>,
    pub names: RefCell<AdmittedNames>,
    pub telemetry: RefCell<Option<Outbox>>,
    pub telemetry_flush_scheduled: Cell<bool>,
}

/// The clusters' pipelines and when each was last used (a counter, not a clock: only the order
/// matters).
#[derive(Default)]
pub struct Clusters {
    pub states: HashMap<String, ClusterState>,
    last_used: HashMap<String, u64>,
    uses: u64,
}

impl Clusters {
    /// `cluster`'s state (made empty on first use), marked as the most recently used.
    pub fn get(&mut self, cluster: &str) -> &mut ClusterState {
        self.uses += 1;
        self.last_used.insert(cluster.to_string(), self.uses);
        self.states.entry(cluster.to_string()).or_default()
    }

    /// Drops the least recently used clusters other than `keep` while the facts copies hold more
    /// than `budget` nodes.
    pub fn bound(&mut self, keep: &str, budget: usize) {
        let mut total: usize = self.states.values().map(|s| s.pipeline.facts().len()).sum();
        while total > budget {
            // A cluster made outside `get` (a colony copy arriving first) counts as never used.
            let Some(oldest) = self
                .states
                .keys()
                .filter(|name| name.as_str() != keep)
                .min_by_key(|name| self.last_used.get(*name).copied().unwrap_or(0))
                .cloned()
            else {
                return;
            };
            self.last_used.remove(&oldest);
            if let Some(state) = self.states.remove(&oldest) {
                total -= state.pipeline.facts().len();
            }
        }
    }
}

thread_local! {
    static ISOLATE: Isolate = Isolate::default();
}

/// Runs `f` on this isolate's state. `f` must not await, nor borrow a part already borrowed
/// by its caller.
pub fn with<T>(f: impl FnOnce(&Isolate) -> T) -> T {
    ISOLATE.with(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aco_core::facts::NodeFacts;

    fn with_nodes(clusters: &mut Clusters, cluster: &str, n: usize) {
        let nodes = (0..n)
            .map(|i| NodeFacts {
                name: format!("{cluster}-{i}"),
                ..NodeFacts::default()
            })
            .collect();
        clusters.get(cluster).pipeline.update(|facts, _| {
            facts.replace_shard(0, nodes, &Default::default(), &Default::default())
        });
    }

    #[test]
    fn the_least_recently_used_clusters_go_first_and_the_one_in_use_stays() {
        let mut clusters = Clusters::default();
        with_nodes(&mut clusters, "a", 4);
        with_nodes(&mut clusters, "b", 4);
        with_nodes(&mut clusters, "c", 4);
        clusters.get("a");
        clusters.bound("c", 12);
        assert_eq!(clusters.states.len(), 3, "within the budget");
        clusters.bound("c", 8);
        assert!(
            !clusters.states.contains_key("b"),
            "b was used least recently"
        );
        assert!(clusters.states.contains_key("a") && clusters.states.contains_key("c"));
        clusters.bound("c", 1);
        assert_eq!(
            clusters.states.keys().collect::<Vec<_>>(),
            ["c"],
            "kept above the budget"
        );
        // A cluster made outside `get` counts as never used.
        let mut d = ClusterState::default();
        d.pipeline.update(|facts, _| {
            let node = NodeFacts {
                name: "d-0".into(),
                ..NodeFacts::default()
            };
            facts.replace_shard(0, vec![node], &Default::default(), &Default::default())
        });
        clusters.states.insert("d".into(), d);
        with_nodes(&mut clusters, "e", 2);
        clusters.bound("e", 6);
        assert!(!clusters.states.contains_key("d"));
        assert!(clusters.states.contains_key("c") && clusters.states.contains_key("e"));
    }
}
