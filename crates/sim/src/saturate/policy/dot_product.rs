//! Dot-product (Tetris, Grandl et al. 2014) as the authors' baseline: the dot product of the
//! node's free vector and the pod's request over (CPU, GPU), each normalised by maxSpec
//! (128 cores, 8 GPUs), divided by the dimension count; score `int((1 − dp) × 100)` (the larger
//! the product, the lower the score). Simplification: the authors evaluate one match group per
//! candidate GPU for a share; here the share takes the device plugin's best-fit GPU.

use super::{Ctx, SatPolicy, Verdict, MAX_NODE_SCORE, MAX_SPEC_CPU, MAX_SPEC_GPU};

pub struct DotProduct;

impl SatPolicy for DotProduct {
    fn name(&self) -> &'static str {
        "dot-product"
    }
    fn score(&mut self, ctx: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        let p = ctx.pod_gpus();
        let req = [
            p.cpu_milli as f64 / MAX_SPEC_CPU,
            (p.num_gpu * p.gpu_milli) as f64 / MAX_SPEC_GPU,
        ];
        candidates
            .iter()
            .map(|c| {
                let n = &ctx.nodes[*c];
                let free = [
                    n.cpu_left as f64 / MAX_SPEC_CPU,
                    n.gpu_left() as f64 / MAX_SPEC_GPU,
                ];
                let dp = (free[0] * req[0] + free[1] * req[1]) / 2.0;
                Verdict::of(((1.0 - dp) * MAX_NODE_SCORE as f64) as i64 as f64)
            })
            .collect()
    }
}
