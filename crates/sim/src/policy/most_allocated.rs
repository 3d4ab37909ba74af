//! kube-scheduler's bin-packing profile: `NodeResourcesFit` with `MostAllocated` over cpu,
//! memory and GPUs (weight 1 each, GPU as whole-GPU-equivalent milli), each resource scored
//! `requested × 100 / allocatable` after placing the pod (integer arithmetic), resources a node
//! does not have skipped, weighted mean — as `pkg/scheduler/framework/plugins/noderesources`
//! (`mostRequestedScore`, `resource_allocation.go`) computes it. This is the cost-minded baseline
//! (GKE's optimize-utilization profile).

use aco_core::node_state::NodeState;

use super::{dims, Policy, ScoreCtx};

pub struct MostAllocated;

impl Policy for MostAllocated {
    fn name(&self) -> String {
        "k8s-mostallocated".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        candidates
            .iter()
            .map(|c| {
                let (mut sum, mut weights) = (0i64, 0i64);
                for (req, cap) in dims(ctx, *c) {
                    let (req, cap) = (req as i64, cap as i64);
                    if cap == 0 {
                        continue;
                    }
                    sum += if req > cap { 0 } else { req * 100 / cap };
                    weights += 1;
                }
                if weights == 0 {
                    0.0
                } else {
                    (sum / weights) as f64
                }
            })
            .collect()
    }
}
