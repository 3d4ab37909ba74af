//! Best-fit as the ATC '23 authors code it (the saturation protocol's `best-fit`, whose
//! [`score`](crate::saturate::policy::best_fit::score) it uses) on the replay's allocation: CPU
//! and GPU against 128 cores and 8 GPUs, memory ignored — unlike this replay's `best-fit` (mean
//! free fraction over CPU, memory, GPU).

use aco_core::node_state::NodeState;

use super::{Policy, ScoreCtx};
use crate::saturate::policy::{best_fit, pod_gpus};

pub struct BestFitAtc;

impl Policy for BestFitAtc {
    fn name(&self) -> String {
        "best-fit-atc".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        let p = pod_gpus(&ctx.pod.trace);
        candidates
            .iter()
            .map(|c| {
                let (n, a) = (&ctx.world.nodes[*c], &ctx.alloc[*c]);
                best_fit::score(
                    n.cpu_milli - a.cpu_used,
                    n.gpus * 1000 - a.gpu_used_milli(),
                    p,
                )
            })
            .collect()
    }
}
