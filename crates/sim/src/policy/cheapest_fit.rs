//! The cheapest feasible node by `aco/cost-per-hour` (ties at random).

use aco_core::node_state::NodeState;

use super::{Policy, ScoreCtx};

/// The cheapest feasible node by `aco/cost-per-hour` (ties at random).
pub struct CheapestFit;
impl Policy for CheapestFit {
    fn name(&self) -> String {
        "cheapest-fit".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        candidates
            .iter()
            .map(|c| -ctx.world.nodes[*c].price)
            .collect()
    }
}
