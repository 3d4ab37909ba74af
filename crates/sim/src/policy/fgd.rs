//! FGD (fragmentation gradient descent, ATC '23) in the cost/QoS replay: the saturation
//! protocol's score `int(sigmoid((F_before − F_after)/1000) × 100)` from the core's
//! `fragmentation_delta`, on the simulated kube-scheduler's exact per-GPU allocation, against the
//! trace's typical shapes (FGD's 95% rule, computed once per world). The replay's device plugin
//! still puts a share on its best-fit GPU (FGD's GPU choice is not passed down), and ties go to
//! the replay's random tie-break, not a seeded node order.

use std::collections::HashMap;

use aco_core::heuristic::{fragmentation_delta, model_that_matters, sigmoid_score, PodShape};
use aco_core::node_state::NodeState;

use super::{Policy, ScoreCtx};
use crate::saturate::policy::{pod_gpus, MAX_NODE_SCORE};

#[derive(Default)]
pub struct Fgd {
    /// Typical shapes of the world's trace; computed on the first decision.
    shapes: Option<Vec<PodShape>>,
    /// Per decision: (GPU model, free CPU, free milli per GPU) → score (nodes in the same state
    /// score alike).
    memo: HashMap<(Option<String>, i64, Vec<u32>), f64>,
}

impl Policy for Fgd {
    fn name(&self) -> String {
        "fgd".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        let shapes = self
            .shapes
            .get_or_insert_with(|| crate::saturate::shapes_of(ctx.world));
        let pod = pod_gpus(&ctx.pod.trace);
        self.memo.clear();
        candidates
            .iter()
            .map(|c| {
                let a = &ctx.alloc[*c];
                let key = (
                    model_that_matters(ctx.world.nodes[*c].model.as_deref(), shapes)
                        .map(String::from),
                    ctx.world.nodes[*c].cpu_milli - a.cpu_used,
                    a.gpu_used.iter().map(|u| 1000 - u).collect::<Vec<u32>>(),
                );
                if let Some(s) = self.memo.get(&key) {
                    return *s;
                }
                let s = fragmentation_delta(key.1, &key.2, key.0.as_deref(), pod, shapes)
                    .map_or(0.0, |(d, _)| {
                        (sigmoid_score(d) * MAX_NODE_SCORE as f64) as i64 as f64
                    });
                self.memo.insert(key, s);
                s
            })
            .collect()
    }
}

/// Best-fit as the ATC '23 authors code it (the saturation protocol's `best-fit`):
/// `int((1 − Σ 0.5·(free − request)/maxSpec) × 100)` over CPU (128 cores) and GPU (8 GPUs),
/// memory ignored — unlike this replay's `best-fit` (mean free fraction over CPU, memory, GPU).
pub struct BestFitAtc;

impl Policy for BestFitAtc {
    fn name(&self) -> String {
        "best-fit-atc".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        use crate::saturate::policy::{MAX_SPEC_CPU, MAX_SPEC_GPU};
        let p = pod_gpus(&ctx.pod.trace);
        let req_gpu = (p.num_gpu * p.gpu_milli) as f64;
        candidates
            .iter()
            .map(|c| {
                let (n, a) = (&ctx.world.nodes[*c], &ctx.alloc[*c]);
                let gpu_free = (n.gpus * 1000 - a.gpu_used_milli()) as f64;
                let s = 0.5 * (n.cpu_milli - a.cpu_used - p.cpu_milli) as f64 / MAX_SPEC_CPU
                    + 0.5 * (gpu_free - req_gpu) / MAX_SPEC_GPU;
                ((1.0 - s) * MAX_NODE_SCORE as f64) as i64 as f64
            })
            .collect()
    }
}
