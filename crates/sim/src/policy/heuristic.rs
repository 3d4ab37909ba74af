//! The heuristic alone: `η^β` mapped to the extender's 0–10 scores (no trail, no learning), each
//! relative to the best candidate as the colony's prioritize computes it.

use aco_core::colony::{relative_desirabilities, single_out_top, to_scores};
use aco_core::heuristic::eta_terms;
use aco_core::node_state::NodeState;

use super::{features, Policy, ScoreCtx};

/// The heuristic alone: `η^β` mapped to the extender's 0–10 scores (no trail, no learning).
pub struct Heuristic;
impl Policy for Heuristic {
    fn name(&self) -> String {
        "heuristic".into()
    }
    fn is_extender(&self) -> bool {
        true
    }
    fn score(&mut self, ctx: &ScoreCtx, _: &[usize], states: &[&NodeState]) -> Vec<f64> {
        let totals: Vec<f64> = features(states, &ctx.pod.demand, ctx.config, ctx.outlook)
            .iter()
            .map(|f| eta_terms(f, ctx.pod.demand.workload, None, ctx.config).total())
            .collect();
        let untrailed = vec![1.0; totals.len()];
        let d = relative_desirabilities(&untrailed, &totals, ctx.config);
        let mut scores = to_scores(&d);
        single_out_top(&mut scores, &d, |i| &states[i].name, &ctx.pod.demand.key);
        scores.into_iter().map(|s| s as f64).collect()
    }
}
