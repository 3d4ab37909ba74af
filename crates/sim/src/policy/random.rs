//! Uniformly random among feasible nodes (all scores equal; the tie-break decides).

use aco_core::node_state::NodeState;

use super::{Policy, ScoreCtx};

/// Uniformly random among feasible nodes (all scores equal; the tie-break decides).
pub struct RandomPolicy;
impl Policy for RandomPolicy {
    fn name(&self) -> String {
        "random".into()
    }
    fn score(&mut self, _: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        vec![0.0; candidates.len()]
    }
}
