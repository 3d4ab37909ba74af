//! Best-fit as the authors code it: `Σ_i w_i (free_i − request_i) / maxSpec_i` over (CPU, GPU)
//! with w = (0.5, 0.5), maxSpec = (128 cores, 8 GPUs), memory ignored; score
//! `int((1 − that) × 100)`, higher is better. The replay's `best-fit-atc`
//! (`crate::policy::BestFitAtc`) scores with the same [`score`]; the replay's own `best-fit` is
//! another policy (mean free fraction over CPU, memory and GPU).

use aco_core::heuristic::PodGpus;

use super::{Ctx, SatPolicy, Verdict, MAX_NODE_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU};

pub struct BestFit;

/// The score of a node with `cpu_left` milli-CPU and `gpu_left` milli-GPU free before the pod.
pub fn score(cpu_left: i64, gpu_left: u32, p: PodGpus) -> f64 {
    let req_gpu = (p.num_gpu * p.gpu_milli) as f64;
    let s = 0.5 * (cpu_left - p.cpu_milli) as f64 / MAX_SPEC_CPU
        + 0.5 * (gpu_left as f64 - req_gpu) / MAX_SPEC_GPU;
    ((1.0 - s) * MAX_NODE_SCORE as f64) as i64 as f64
}

impl SatPolicy for BestFit {
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
