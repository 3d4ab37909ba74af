//! GPU Packing as the authors code it (`getPackingScore`), for GPU pods (CPU pods score 0):
//! 1. uses only already-shared GPUs: `100 − Σ freeRatio%(used GPUs)/10`, at least 50;
//! 2. needs fully free GPUs on a partly used node: `50 − fully-free GPUs used`, at least 33;
//! 3. an idle node: `33 − its GPU count`, at least its GPU count.

use super::{Ctx, SatPolicy, Verdict, MAX_NODE_SCORE};

pub struct GpuPacking;

impl SatPolicy for GpuPacking {
    fn name(&self) -> &'static str {
        "gpu-packing"
    }
    fn score(&mut self, ctx: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        let p = ctx.pod_gpus();
        candidates
            .iter()
            .map(|c| {
                if p.num_gpu == 0 {
                    return Verdict::of(0.0);
                }
                let n = &ctx.nodes[*c];
                let fully_free = n.fully_free_gpus() as i64;
                if fully_free == n.gpu_free.len() as i64 {
                    return Verdict::of((MAX_NODE_SCORE / 3 - fully_free).max(fully_free) as f64);
                }
                // Least free GPU first (stable by index), as SortedMilliGpuLeftIndexList(true).
                let mut order: Vec<usize> = (0..n.gpu_free.len()).collect();
                order.sort_by_key(|i| (n.gpu_free[*i], *i));
                let mut need = p.num_gpu;
                let (mut fully_used, mut used) = (0i64, Vec::new());
                for i in order {
                    if need == 0 {
                        break;
                    }
                    if p.gpu_milli <= n.gpu_free[i] {
                        need -= 1;
                        used.push(i);
                        fully_used += (n.gpu_free[i] == 1000) as i64;
                    }
                }
                if need != 0 {
                    return Verdict::of(0.0);
                }
                let gpu = (p.num_gpu == 1 && p.gpu_milli < 1000).then(|| used[0]);
                if fully_used > 0 {
                    return Verdict {
                        score: (MAX_NODE_SCORE / 2 - fully_used).max(MAX_NODE_SCORE / 3) as f64,
                        gpu,
                    };
                }
                let free_ratio: i64 = used
                    .iter()
                    .map(|i| n.gpu_free[*i] as i64 * 100 / 1000)
                    .sum();
                Verdict {
                    score: (MAX_NODE_SCORE - free_ratio / 10).max(MAX_NODE_SCORE / 2) as f64,
                    gpu,
                }
            })
            .collect()
    }
}
