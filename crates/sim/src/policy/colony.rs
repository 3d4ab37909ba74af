//! The full colony: one `TenantColony` per tenant, scores `τ^α·η^β` mapped to 0–10 exactly as

use std::collections::BTreeMap;

use aco_core::colony::{Decision, Outcome, PodRecord, TenantColony};
use aco_core::config::Config;
use aco_core::node_state::NodeState;
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::{features, Policy, ScoreCtx, TenantTrails};

/// The full colony: one `TenantColony` per tenant, scores `τ^α·η^β` mapped to 0–10 exactly as
/// the Worker's `/v1/prioritize` does; deposits only through `confirm` on the node the simulated
/// kube-scheduler really bound (never on the colony's own argmax). Placements and outcomes go
/// through `TenantColony::report`, the Worker's path: a placement deposits `Q × η then`, the
/// pod's later outcome revises that deposit to `Q × observed quality` once.
pub struct Colony {
    pub colonies: BTreeMap<String, TenantColony>,
    pending: Option<(String, Decision)>,
    /// Per pod (trace index): what the Worker's colony object would remember until the outcome.
    records: BTreeMap<usize, PodRecord>,
    rng: StdRng,
}

impl Colony {
    pub fn new(seed: u64) -> Self {
        Self {
            colonies: BTreeMap::new(),
            pending: None,
            records: BTreeMap::new(),
            rng: StdRng::seed_from_u64(seed ^ 0xC010_4E11),
        }
    }
}

impl Policy for Colony {
    fn name(&self) -> String {
        "colony".into()
    }
    fn is_extender(&self) -> bool {
        true
    }
    fn score(&mut self, ctx: &ScoreCtx, _: &[usize], states: &[&NodeState]) -> Vec<f64> {
        let tenant = ctx.pod.demand.tenant.clone();
        let colony = self.colonies.entry(tenant.clone()).or_default();
        let p = colony.score(
            &features(states, &ctx.pod.demand, ctx.config, ctx.outlook),
            ctx.pod.demand.workload,
            &ctx.pod.demand.key,
            ctx.now_ms,
            ctx.config,
            &mut self.rng,
        );
        self.pending = Some((tenant, p.decision));
        p.scores.iter().map(|s| *s as f64).collect()
    }
    fn placed(&mut self, ctx: &ScoreCtx, node: usize, scored: bool) {
        let tenant = ctx.pod.demand.tenant.clone();
        let pending = self
            .pending
            .take()
            .filter(|(t, _)| scored && *t == tenant)
            .map(|(_, d)| d);
        let colony = self.colonies.entry(tenant).or_default();
        let mut record = PodRecord {
            decision: pending,
            confirmed: None,
        };
        let _ = colony.report(
            &mut record,
            &ctx.world.nodes[node].name,
            None,
            ctx.now_ms,
            ctx.config,
        );
        if record.confirmed.is_some() {
            self.records.insert(ctx.pod.idx, record);
        }
    }
    fn outcome(&mut self, ctx: &ScoreCtx, node: usize, outcome: Outcome) {
        // An unscored pod (one feasible node) has no record: the Worker answers UnknownPod.
        let Some(mut record) = self.records.remove(&ctx.pod.idx) else {
            return;
        };
        let colony = self
            .colonies
            .entry(ctx.pod.demand.tenant.clone())
            .or_default();
        let _ = colony.report(
            &mut record,
            &ctx.world.nodes[node].name,
            Some(outcome),
            ctx.now_ms,
            ctx.config,
        );
    }
    fn pheromones(&self, config: &Config) -> TenantTrails {
        self.colonies
            .iter()
            .map(|(t, c)| (t.clone(), c.pheromones.snapshot(config)))
            .collect()
    }
}
