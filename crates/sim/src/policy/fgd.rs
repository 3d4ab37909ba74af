//! FGD (fragmentation gradient descent, ATC '23) in the cost/QoS replay: the saturation
//! protocol's score `int(sigmoid((F_before − F_after)/1000) × 100)` from the core's
//! `fragmentation_delta`, on the simulated kube-scheduler's exact per-GPU allocation, against the
//! trace's typical shapes (FGD's 95% rule, computed once per world). The replay's device plugin
//! still puts a share on its best-fit GPU (FGD's GPU choice is not passed down), and ties go to
//! the replay's random tie-break, not a seeded node order.

use aco_core::heuristic::PodShape;
use aco_core::node_state::NodeState;

use super::{Policy, ScoreCtx};
use crate::saturate::policy::fgd::{fgd_score, state_verdict, FgdMemo, NodeFree, ShareGpu};
use crate::saturate::policy::pod_gpus;

#[derive(Default)]
pub struct Fgd {
    /// Typical shapes of the world's trace; computed on the first decision.
    shapes: Option<Vec<PodShape>>,
    /// Per decision: node state → verdict (nodes in the same state score alike).
    memo: FgdMemo,
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
                let free: Vec<u32> = a.gpu_used.iter().map(|u| 1000 - u).collect();
                let node = NodeFree {
                    model: ctx.world.nodes[*c].model.as_deref(),
                    cpu_left: ctx.world.nodes[*c].cpu_milli - a.cpu_used,
                    gpu_free: &free,
                };
                // ΔF of the best-gradient GPU for a share (the GPU itself is not passed down).
                state_verdict(&mut self.memo, node, pod, shapes, ShareGpu::BestGradient)
                    .map_or(0.0, |(d, _)| fgd_score(d) as f64)
            })
            .collect()
    }
}
