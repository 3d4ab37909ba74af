//! FGD (fragmentation gradient descent): `int(sigmoid((F_before − F_after)/1000) × 100)` with
//! the core's fragmentation measure (`aco_core::heuristic::fragmentation_delta`, the same code
//! the colony's η uses), against typical shapes that carry their GPU-model constraint and a
//! node's GPU model. A share goes to the first GPU of the best *integer* score, as the authors'
//! `calculateGpuShareFragExtendScore` (`pkg/simulator/plugin/fgd_score.go`,
//! hkust-adsl/kubernetes-scheduler-simulator) picks it — not the GPU of the best unrounded
//! gradient, which differs when two GPUs round to the same score. Nodes in the same state get
//! the same verdict, so it is computed once per distinct state per decision.

use std::collections::HashMap;

use aco_core::heuristic::{
    fragmentation_delta, model_that_matters, share_deltas, sigmoid_score, PodGpus, PodShape,
};

use super::{Ctx, SatPolicy, Verdict, MAX_NODE_SCORE};

/// Per decision: node state `(GPU model as far as the shapes tell models apart, free CPU, free
/// milli per GPU)` → `(ΔF, share GPU)`, `None` if the pod does not fit.
pub type FgdMemo = HashMap<(Option<String>, i64, Vec<u32>), Option<(f64, Option<usize>)>>;

#[derive(Default)]
pub struct Fgd {
    memo: FgdMemo,
}

/// FGD's integer node score of a gradient (0–100, truncated as the authors' Go does).
pub fn fgd_score(delta: f64) -> i64 {
    (sigmoid_score(delta) * MAX_NODE_SCORE as f64) as i64
}

/// Which GPU a share takes among those with room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareGpu {
    /// The first GPU of the best integer FGD score (the authors' FGD).
    FirstBestScore,
    /// The GPU of the best unrounded gradient, lowest index on ties (the core's
    /// `fragmentation_delta`; the colony's FGD-aware device plugin).
    BestGradient,
}

/// `(ΔF, share GPU)` of one candidate, memoised per distinct node state in `memo` (one memo per
/// policy: the choice is not part of the key). For a share, ΔF is that of the GPU it takes.
pub fn fgd_verdict(
    memo: &mut FgdMemo,
    ctx: &Ctx,
    node: usize,
    choice: ShareGpu,
) -> Option<(f64, Option<usize>)> {
    let n = &ctx.nodes[node];
    state_verdict(
        memo,
        NodeFree {
            model: n.model.as_deref(),
            cpu_left: n.cpu_left,
            gpu_free: &n.gpu_free,
        },
        ctx.pod_gpus(),
        ctx.shapes,
        choice,
    )
}

/// What FGD reads of a node: its GPU model, free milli-CPU and free milli per GPU.
pub struct NodeFree<'a> {
    pub model: Option<&'a str>,
    pub cpu_left: i64,
    pub gpu_free: &'a [u32],
}

/// [`fgd_verdict`] of a node state, whichever bench holds it (the replay's FGD scores with it
/// too, `crate::policy::Fgd`).
pub fn state_verdict(
    memo: &mut FgdMemo,
    node: NodeFree,
    p: PodGpus,
    shapes: &[PodShape],
    choice: ShareGpu,
) -> Option<(f64, Option<usize>)> {
    let model = model_that_matters(node.model, shapes);
    let key = (
        model.map(String::from),
        node.cpu_left,
        node.gpu_free.to_vec(),
    );
    if let Some(v) = memo.get(&key) {
        return *v;
    }
    let share = p.num_gpu == 1 && p.gpu_milli < 1000;
    let v = if share && choice == ShareGpu::FirstBestScore {
        let mut best: Option<(i64, usize, f64)> = None;
        for (gpu, d) in share_deltas(node.cpu_left, node.gpu_free, model, p, shapes) {
            let s = fgd_score(d);
            if best.is_none_or(|(b, _, _)| s > b) {
                best = Some((s, gpu, d));
            }
        }
        best.map(|(_, gpu, d)| (d, Some(gpu)))
    } else {
        fragmentation_delta(node.cpu_left, node.gpu_free, model, p, shapes)
            .map(|(d, gpus)| (d, share.then(|| gpus[0])))
    };
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
            .map(
                |c| match fgd_verdict(&mut self.memo, ctx, *c, ShareGpu::FirstBestScore) {
                    Some((d, gpu)) => Verdict {
                        score: fgd_score(d) as f64,
                        gpu,
                    },
                    None => Verdict::of(0.0),
                },
            )
            .collect()
    }
}
