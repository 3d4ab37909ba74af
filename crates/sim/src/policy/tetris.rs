//! Tetris (Grandl et al., SIGCOMM 2014): the dot product of the pod's demand and the node's free

use aco_core::node_state::NodeState;

use super::{dims, Policy, ScoreCtx};

/// Tetris (Grandl et al., SIGCOMM 2014): the dot product of the pod's demand and the node's free
/// capacity, both as fractions of the node's allocatable, over CPU, memory and GPU.
pub struct Tetris;
impl Policy for Tetris {
    fn name(&self) -> String {
        "tetris".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        let p = &ctx.pod.trace;
        let pod_gpu = if p.num_gpu == 0 {
            0.0
        } else {
            p.num_gpu as f64 * p.gpu_milli.min(1000) as f64
        };
        let demand = [p.cpu_milli as f64, p.memory_mib as f64, pod_gpu];
        candidates
            .iter()
            .map(|c| {
                let d = dims(ctx, *c);
                (0..3)
                    .filter(|i| d[*i].1 > 0.0)
                    .map(|i| {
                        let cap = d[i].1;
                        let free_before = cap - (d[i].0 - demand[i]);
                        (demand[i] / cap) * (free_before / cap)
                    })
                    .sum()
            })
            .collect()
    }
}
