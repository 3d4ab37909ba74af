//! kube-scheduler's default scoring of resources: `NodeResourcesFit` with `LeastAllocated`

use aco_core::node_state::NodeState;

use super::{dims, Policy, ScoreCtx};

/// kube-scheduler's default scoring of resources: `NodeResourcesFit` with `LeastAllocated`
/// (cpu and memory, weight 1 each) plus `NodeResourcesBalancedAllocation` (cpu and memory),
/// both 0–100 in integer arithmetic as in `pkg/scheduler/framework/plugins/noderesources`,
/// summed with equal plugin weights. (Other default plugins — topology spread, image locality,
/// taints — have nothing to act on in this trace.)
pub struct KubeDefault;
impl Policy for KubeDefault {
    fn name(&self) -> String {
        "k8s-default".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        candidates
            .iter()
            .map(|c| {
                let d = dims(ctx, *c);
                let least = |(req, cap): (f64, f64)| -> i64 {
                    let (req, cap) = (req as i64, cap as i64);
                    if cap == 0 || req > cap {
                        0
                    } else {
                        (cap - req) * 100 / cap
                    }
                };
                let least_allocated = (least(d[0]) + least(d[1])) / 2;
                let f: Vec<f64> = d[..2]
                    .iter()
                    .map(|(req, cap)| {
                        if *cap > 0.0 {
                            (req / cap).min(1.0)
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let std = ((f[0] - f[1]).abs()) / 2.0;
                let balanced = ((1.0 - std) * 100.0) as i64;
                (least_allocated + balanced) as f64
            })
            .collect()
    }
}
