//! The Colony object's part, as the simulator plays it. The pipeline scores each pod from the
//! tenant's colony (`ColonySource::Held`: the simulator holds the colonies themselves, where the
//! Worker's isolate holds copies) and the decision is remembered here until the pod's placement
//! is reported; placements and outcomes then go through `TenantColony::report`, the Worker's
//! path: a placement is confirmed on the node the simulated kube-scheduler really bound (never
//! the colony's own argmax), and the pod's later outcome is deposited once on that node's trail
//! (its reliability and slowdown).

use std::collections::BTreeMap;

use aco_core::colony::{Decision, Outcome, PodRecord};
use aco_core::config::{Config, CostModel};
use aco_core::pipeline::ColonyCopies;

use super::{TenantSlowdowns, TenantTrails};
use crate::cluster::SimPod;

#[derive(Debug, Default)]
pub struct ColonyReports {
    /// The last pod's decision, until its placement.
    pending: Option<(String, Decision)>,
    /// Per pod (trace index): what the Colony object would remember until the outcome.
    records: BTreeMap<usize, PodRecord>,
}

impl ColonyReports {
    /// Prioritize decided for a pod of `tenant` (the Worker sends it to the colony).
    pub fn decided(&mut self, tenant: &str, decision: Decision) {
        self.pending = Some((tenant.to_string(), decision));
    }

    /// `pod` was bound to `node`. `scored` is false when there was a single feasible node and
    /// kube-scheduler did not call prioritize: no decision, nothing remembered.
    pub fn placed(
        &mut self,
        colonies: &mut ColonyCopies,
        pod: &SimPod,
        node: &str,
        scored: bool,
        now_ms: u64,
        cost: &CostModel,
    ) {
        let tenant = &pod.demand.tenant;
        let decision = self
            .pending
            .take()
            .filter(|(t, _)| scored && t == tenant)
            .map(|(_, d)| d);
        let mut record = PodRecord {
            decision,
            confirmed: None,
        };
        let colony = colonies.colony_mut(tenant, now_ms);
        let _ = colony.report(&mut record, node, None, now_ms, cost);
        if record.confirmed.is_some() {
            self.records.insert(pod.idx, record);
        }
    }

    /// `pod`'s outcome on `node`. An unscored pod (one feasible node) has no record, and the
    /// Colony object forgets a confirmed pod after `CONFIRMED_TTL_MS`: the Worker answers both
    /// as unknown pods, and learns nothing from them. Takes the whole Config: its two groups
    /// (retention, prices) would make eight arguments.
    pub fn outcome(
        &mut self,
        colonies: &mut ColonyCopies,
        pod: &SimPod,
        node: &str,
        outcome: Outcome,
        now_ms: u64,
        config: &Config,
    ) {
        let Some(mut record) = self.records.remove(&pod.idx) else {
            return;
        };
        let since = now_ms.saturating_sub(config.retention.confirmed_ttl_ms);
        if record
            .confirmed
            .as_ref()
            .is_some_and(|c| c.confirmed_ms < since)
        {
            record = PodRecord::default();
        }
        let colony = colonies.colony_mut(&pod.demand.tenant, now_ms);
        let _ = colony.report(&mut record, node, Some(outcome), now_ms, &config.cost);
    }
}

/// Per tenant (by name), its trail as (node, τ at `now_ms`), as `PheromoneTable::snapshot`
/// orders them.
pub fn trails(colonies: &ColonyCopies, now_ms: u64, cost: &CostModel) -> TenantTrails {
    let mut out: TenantTrails = colonies
        .iter()
        .map(|(t, c)| (t.to_string(), c.pheromones.snapshot(now_ms, cost)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Per tenant (by name), each node's learned slowdown, by node name.
pub fn slowdowns(colonies: &ColonyCopies) -> TenantSlowdowns {
    let mut out: TenantSlowdowns = colonies
        .iter()
        .map(|(t, c)| {
            let learned = c
                .pheromones
                .trails
                .iter()
                .filter_map(|(node, stats)| Some((node.clone(), stats.slowdown()?)))
                .collect();
            (t.to_string(), learned)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
