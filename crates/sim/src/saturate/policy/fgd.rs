//! FGD (fragmentation gradient descent): `int(sigmoid((F_before − F_after)/1000) × 100)` with
//! the core's fragmentation measure (`aco_core::heuristic::fragmentation_delta`, the same code
//! the colony's η uses); a share goes to the GPU with the best gradient. Nodes in the same state
//! get the same verdict, so it is computed once per distinct state per decision.

use std::collections::HashMap;

use aco_core::heuristic::{fragmentation_delta, sigmoid_score};

use super::{Ctx, SatPolicy, Verdict, MAX_NODE_SCORE};

/// Per decision: node state `(free CPU, free milli per GPU)` → `(ΔF, share GPU)`, `None` if the pod does not fit.
pub type FgdMemo = HashMap<(i64, Vec<u32>), Option<(f64, Option<usize>)>>;

#[derive(Default)]
pub struct Fgd {
    memo: FgdMemo,
}

/// `(FGD score, share GPU)` of one candidate, memoised per distinct node state in `memo`.
pub fn fgd_verdict(memo: &mut FgdMemo, ctx: &Ctx, node: usize) -> Option<(f64, Option<usize>)> {
    let n = &ctx.nodes[node];
    let key = (n.cpu_left, n.gpu_free.clone());
    if let Some(v) = memo.get(&key) {
        return *v;
    }
    let p = ctx.pod_gpus();
    let v = fragmentation_delta(n.cpu_left, &n.gpu_free, p, ctx.shapes).map(|(d, gpus)| {
        let gpu = (p.num_gpu == 1 && p.gpu_milli < 1000).then(|| gpus[0]);
        (d, gpu)
    });
    memo.insert(key, v);
    v
}

impl SatPolicy for Fgd {
    fn name(&self) -> &'static str {
        "fgd"
    }
    fn score(&mut self, ctx: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        self.memo.clear();
        candidates
            .iter()
            .map(|c| match fgd_verdict(&mut self.memo, ctx, *c) {
                Some((d, gpu)) => Verdict {
                    score: (sigmoid_score(d) * MAX_NODE_SCORE as f64) as i64 as f64,
                    gpu,
                },
                None => Verdict::of(0.0),
            })
            .collect()
    }
}
