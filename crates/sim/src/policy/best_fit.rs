//! The node left with the least free capacity (mean free fraction over CPU, memory and, on GPU

use aco_core::node_state::NodeState;

use super::{dims, Policy, ScoreCtx};

/// The node left with the least free capacity (mean free fraction over CPU, memory and, on GPU
/// nodes, GPU) after placing the pod.
pub struct BestFit;
impl Policy for BestFit {
    fn name(&self) -> String {
        "best-fit".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        candidates
            .iter()
            .map(|c| {
                let d = dims(ctx, *c);
                let used: Vec<f64> = d
                    .iter()
                    .filter(|(_, cap)| *cap > 0.0)
                    .map(|(req, cap)| 1.0 - req / cap)
                    .collect();
                -used.iter().sum::<f64>() / used.len() as f64
            })
            .collect()
    }
}
