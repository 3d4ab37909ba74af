//! Who decides: the [`Scheduler`] trait, implemented by the native extender pipeline
//! (`crate::native`) and by the live Worker over HTTP (`crate::replay`).

use aco_core::colony::Outcome;
use rand::rngs::StdRng;

use crate::alloc::NodeAlloc;
use crate::cluster::{SimPod, World};
use crate::facts_report::ReportBatch;
use crate::trace::Error;
use aco_core::api::nodes::NodeReport;

pub use crate::policy::TenantTrails;

/// Who decides: the native extender pipeline or the Worker over HTTP.
pub trait Scheduler {
    fn name(&self) -> String;
    /// Delivers fact reports (the in-cluster reporter's `PUT /v1/nodes`).
    fn report(&mut self, world: &World, reports: &[NodeReport], now_ms: u64) -> Result<(), Error>;
    /// One reporter round in the simulator's terms; by default its wire reports go to
    /// [`Scheduler::report`]. The native pipeline folds it directly (same facts, no strings).
    fn report_batch(
        &mut self,
        world: &World,
        batch: &ReportBatch,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.report(world, &batch.to_wire(world), now_ms)
    }
    /// Filters and scores the candidates (kube-scheduler's feasible nodes, cluster order) and
    /// returns the node to bind, picking the best score with `tie` for ties.
    fn schedule(
        &mut self,
        world: &World,
        alloc: &[NodeAlloc],
        pod: &SimPod,
        candidates: &[usize],
        now_ms: u64,
        tie: &mut StdRng,
    ) -> Result<Option<usize>, Error>;
    /// The binding happened (the reporter's `POST /v1/placements`).
    fn placed(
        &mut self,
        world: &World,
        alloc: &[NodeAlloc],
        pod: &SimPod,
        node: usize,
        now_ms: u64,
    ) -> Result<(), Error>;
    /// The pod's observed outcome on `node` (the reporter's later `POST /v1/placements` with an
    /// `outcome`): whether it ran within its QoS, and what the placement cost. Default: ignored.
    fn outcome(
        &mut self,
        _world: &World,
        _pod: &SimPod,
        _node: usize,
        _outcome: Outcome,
        _now_ms: u64,
    ) -> Result<(), Error> {
        Ok(())
    }
    /// A spot node was reclaimed with pods on it (the reporter's `PUT /v1/nodes` `reclaimed`):
    /// its pool's interruption history learns it. Default: ignored.
    fn reclaimed(&mut self, _world: &World, _node: usize, _now_ms: u64) -> Result<(), Error> {
        Ok(())
    }
    /// Per-tenant (node, τ) best first, for the report and the demo.
    fn pheromones(&mut self, world: &World) -> Result<TenantTrails, Error>;
    /// (decisions whose best score was shared by ≥ 2 nodes, total size of those top sets).
    fn tie_stats(&self) -> (usize, usize) {
        (0, 0)
    }
}

/// Counts decisions whose top score is shared, and how many nodes share it.
pub fn count_top_ties(scores: &[f64], stats: &mut (usize, usize)) {
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let n = scores.iter().filter(|s| **s == max).count();
    if n >= 2 {
        stats.0 += 1;
        stats.1 += n;
    }
}
