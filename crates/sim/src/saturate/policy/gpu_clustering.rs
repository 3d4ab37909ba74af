//! GPU Clustering as the authors code it: GPU pods prefer nodes already hosting their class
//! (no GPU / share / k GPUs): only that class (75, 100], several classes including it (50, 75],
//! an idle node (25, 50], other classes only (0, 25]; within a band, less GPU left is better
//! (`25 × (8000 − gpuLeft) / 8000`, integer arithmetic). CPU pods score 0.

use super::super::node::PodClass;
use super::{Ctx, SatPolicy, Verdict, MAX_NODE_SCORE, MAX_SPEC_GPU};

pub struct GpuClustering;

impl SatPolicy for GpuClustering {
    fn name(&self) -> &'static str {
        "gpu-clustering"
    }
    fn score(&mut self, ctx: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        let class = PodClass::of(ctx.pod);
        let max_gpu = MAX_SPEC_GPU as i64;
        candidates
            .iter()
            .map(|c| {
                if class == PodClass::NoGpu {
                    return Verdict::of(0.0);
                }
                let n = &ctx.nodes[*c];
                // The authors' affinity map counts GPU-pod classes only.
                let gpu_classes: Vec<PodClass> = n
                    .classes
                    .iter()
                    .filter(|(k, m)| *k != PodClass::NoGpu && *m > 0)
                    .map(|(k, _)| *k)
                    .collect();
                let fill = MAX_NODE_SCORE / 4 * (max_gpu - n.gpu_left() as i64) / max_gpu;
                let band = if gpu_classes.contains(&class) {
                    if gpu_classes.len() == 1 {
                        MAX_NODE_SCORE * 3 / 4
                    } else {
                        MAX_NODE_SCORE * 2 / 4
                    }
                } else if gpu_classes.is_empty() {
                    MAX_NODE_SCORE / 4
                } else {
                    0
                };
                Verdict::of((fill + band) as f64)
            })
            .collect()
    }
}
