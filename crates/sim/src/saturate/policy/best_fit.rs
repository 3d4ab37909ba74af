//! Best-fit as the authors code it: `Σ_i w_i (free_i − request_i) / maxSpec_i` over (CPU, GPU)
//! with w = (0.5, 0.5), maxSpec = (128 cores, 8 GPUs), memory ignored; score
//! `int((1 − that) × 100)`, higher is better. One policy for both benches: `best-fit` in the
//! saturation protocol, `best-fit-atc` in the cost/QoS replay — whose own `best-fit` is another
//! policy (mean free fraction over CPU, memory and GPU, `crate::policy::BestFit`).

use aco_core::heuristic::PodGpus;
use aco_core::node_state::NodeState;

use super::{pod_gpus, Ctx, SatPolicy, Verdict, MAX_NODE_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU};
use crate::policy::{Policy, ScoreCtx};

pub struct BestFitAtc;

/// The score of a node with `cpu_left` milli-CPU and `gpu_left` milli-GPU free before the pod.
fn score(cpu_left: i64, gpu_left: u32, p: PodGpus) -> f64 {
    let req_gpu = (p.num_gpu * p.gpu_milli) as f64;
    let s = 0.5 * (cpu_left - p.cpu_milli) as f64 / MAX_SPEC_CPU
        + 0.5 * (gpu_left as f64 - req_gpu) / MAX_SPEC_GPU;
    ((1.0 - s) * MAX_NODE_SCORE as f64) as i64 as f64
}

impl SatPolicy for BestFitAtc {
    fn name(&self) -> &'static str {
        "best-fit"
    }
    fn score(&mut self, ctx: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        let p = ctx.pod_gpus();
        candidates
            .iter()
            .map(|c| {
                let n = &ctx.nodes[*c];
                Verdict::of(score(n.cpu_left, n.gpu_left(), p))
            })
            .collect()
    }
}

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
                score(
                    n.cpu_milli - a.cpu_used,
                    n.gpus * 1000 - a.gpu_used_milli(),
                    p,
                )
            })
            .collect()
    }
}
