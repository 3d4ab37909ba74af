//! The heuristic alone: `η^β` mapped to the extender's 0–10 scores (no trail, no learning).

use aco_core::colony::to_scores;
use aco_core::heuristic::eta;
use aco_core::node_state::NodeState;

use super::{features, Policy, ScoreCtx};

/// The heuristic alone: `η^β` mapped to the extender's 0–10 scores (no trail, no learning).
pub struct Heuristic;
impl Policy for Heuristic {
    fn name(&self) -> String {
        "heuristic".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, _: &[usize], states: &[&NodeState]) -> Vec<f64> {
        let d: Vec<f64> = features(states, &ctx.pod.demand, ctx.config, ctx.outlook)
            .iter()
            .map(|f| eta(f, ctx.pod.demand.workload, None, ctx.config).powf(ctx.config.beta))
            .collect();
        to_scores(&d).into_iter().map(|s| s as f64).collect()
    }
}
