//! The first feasible node in cluster order, scored as the saturation protocol's first-fit.

use aco_core::node_state::NodeState;

use super::{Policy, ScoreCtx};
use crate::saturate::policy::first_fit;

/// The first feasible node in cluster order.
pub struct FirstFit;
impl Policy for FirstFit {
    fn name(&self) -> String {
        "first-fit".into()
    }
    fn score(&mut self, _: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        candidates.iter().map(|c| first_fit::score(*c)).collect()
    }
}
