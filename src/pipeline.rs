//! Per isolate and cluster: the cluster's `aco_core::pipeline::ExtenderPipeline` — this
//! isolate's copy of the cluster's node facts, the placements its verbs answered that the facts
//! do not show yet, the cluster outlook, its copies of the tenants' colonies — and how fresh the
//! facts copy is. The verbs run the pipeline; this file only keeps it between requests (in the
//! isolate's state, `isolate.rs`, which bounds the copies an isolate holds).
//!
//! What an isolate keeps is its own: assumed placements and colony copies make no binding
//! operation, and an isolate sees only the pods it answered itself. kube-scheduler keeps its
//! connection, so one scheduler's consecutive pods mostly reach the same isolate; those scored
//! elsewhere count from the next facts push (`FACTS_CACHE_MS` plus the reporter's interval).
//!
//! A pipeline is borrowed only inside [`with`], which never awaits: a request that reads the
//! facts across an await holds its own `Rc` of them (`ExtenderPipeline::facts`).

use std::collections::HashMap;
use std::rc::Rc;

use aco_core::config::Config;
use aco_core::pipeline::{ClusterFacts, ExtenderPipeline};

use aco_core::cluster::ClusterId;

use crate::isolate::{self, FACTS_NODE_BUDGET};

/// One cluster's pipeline in this isolate, and where its facts copy stands.
#[derive(Default)]
pub struct ClusterState {
    pub pipeline: ExtenderPipeline<ClusterFacts>,
    /// Instance and sequence number of the Facts object the copy is from.
    pub facts_version: Option<(u64, u64)>,
    /// When the copy was last brought up to date (None: stale, fetch before reading).
    pub fetched_at_ms: Option<u64>,
    /// Bumped by a `PUT` through this isolate; a fetch that began before it does not make the
    /// copy fresh (it may predate the write).
    pub generation: u64,
    /// The config the records' labels were read under.
    pub read_with: Option<Rc<Config>>,
}

impl ClusterState {
    /// Makes the copy's label readings `config`'s. The isolate's config never changes, so this
    /// reads nothing again after its first call (on an empty copy).
    pub fn read_under(&mut self, config: &Rc<Config>) {
        if !self
            .read_with
            .as_ref()
            .is_some_and(|c| Rc::ptr_eq(c, config))
        {
            self.pipeline
                .update(|facts, _| facts.read_again(&config.node_keys, &config.spot));
            self.read_with = Some(config.clone());
        }
    }
}

/// Runs `f` on `cluster`'s state (made empty on first use); then, if the isolate's facts copies
/// outgrew their budget, drops the least recently used other clusters. `f` must not call back
/// into this module.
pub fn with<T>(cluster: &ClusterId, f: impl FnOnce(&mut ClusterState) -> T) -> T {
    isolate::with(|i| {
        let mut clusters = i.clusters.borrow_mut();
        let out = f(clusters.get(cluster.as_str()));
        clusters.bound(cluster.as_str(), FACTS_NODE_BUDGET);
        out
    })
}

/// Runs `f` on every cluster's state (what bounds the colony copies across clusters).
pub fn with_all<T>(f: impl FnOnce(&mut HashMap<String, ClusterState>) -> T) -> T {
    isolate::with(|i| f(&mut i.clusters.borrow_mut().states))
}
