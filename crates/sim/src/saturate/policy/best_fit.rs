//! Best-fit as the authors code it: `Σ_i w_i (free_i − request_i) / maxSpec_i` over (CPU, GPU)
//! with w = (0.5, 0.5), maxSpec = (128 cores, 8 GPUs), memory ignored; score
//! `int((1 − that) × 100)`, higher is better.

use super::{Ctx, SatPolicy, Verdict, MAX_NODE_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU};

pub struct BestFit;

impl SatPolicy for BestFit {
    fn name(&self) -> &'static str {
        "best-fit"
    }
    fn score(&mut self, ctx: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        let p = ctx.pod_gpus();
        let req_gpu = (p.num_gpu * p.gpu_milli) as f64;
        candidates
            .iter()
            .map(|c| {
                let n = &ctx.nodes[*c];
                let s = 0.5 * (n.cpu_left - p.cpu_milli) as f64 / MAX_SPEC_CPU
                    + 0.5 * (n.gpu_left() as f64 - req_gpu) / MAX_SPEC_GPU;
                Verdict::of(((1.0 - s) * MAX_NODE_SCORE as f64) as i64 as f64)
            })
            .collect()
    }
}
