//! The first feasible node in cluster order.

use aco_core::node_state::NodeState;

use super::{Policy, ScoreCtx};

/// The first feasible node in cluster order.
pub struct FirstFit;
impl Policy for FirstFit {
    fn name(&self) -> String {
        "first-fit".into()
    }
    fn score(&mut self, _: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        candidates.iter().map(|c| -(*c as f64)).collect()
    }
}
