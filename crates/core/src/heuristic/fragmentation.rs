//! Fragmentation factor: FGD's measure (Weng et al., "Beware of Fragmentation", USENIX ATC '23).
//!
//! A node's GPU fragmentation `F(n)` is measured against the workload's *typical pod shapes*
//! (CPU, GPUs, milli-GPU per GPU, the GPU models the shape may use, with their frequencies): for
//! each shape, the idle milli-GPU of the node that the shape could not use — all of it when the
//! shape does not fit (too little CPU, not enough GPUs with room, a CPU-only shape, which can use
//! no GPU, or a shape that names GPU models the node's model is not among), else the idle milli
//! on GPUs whose free share is below the shape's per-GPU request — weighted by frequency.
//! A placement's gradient is `ΔF = F(before) − F(after)` (positive: the placement removes
//! fragments); FGD scores `sigmoid(ΔF / 1000)`, and so does this factor.
//!
//! GPU models: a typical shape is keyed by its GPU-model constraint as well as its size (the
//! OpenB `gpu_spec`, the pod annotation `alibabacloud.com/gpu-card-model`, e.g.
//! `V100M16|V100M32`), so `F(n)` depends on the node's GPU model: for a node of another model, or
//! one without a model label, all its idle GPU is a fragment for a constrained shape. This is how
//! the ATC '23 authors' simulator counts it (hkust-adsl/kubernetes-scheduler-simulator:
//! `PodResource` carries `GpuType`, so `GetTypicalPods` counts shapes per type, and
//! `GetNodePodFrag` in `pkg/utils/frag.go` classes such a node `NoAccess`, whose idle GPUs
//! `NodeGpuShareFragAmount` counts whole); matched here, not copied.
//!
//! Inputs: the node's free milli-GPU per physical GPU (`NodeFacts.gpu_free_milli`, sent by the
//! reporter as `gpuFreeMilli` where the cluster exposes it; the simulator knows it), its free
//! CPU (allocatable − requested) and its GPU model (`NodeState::gpu_model`, from the configured
//! GPU-type labels). Without per-GPU facts the factor is neutral (1.0).
//!
//! Typical shapes: the Worker has no view of the workload, so it uses [`OPENB_DEFAULT_SHAPES`],
//! derived once from the OpenB default trace (the 35 most frequent `(cpu, GPUs, milli)` shapes,
//! covering 95.3% of its 8,152 pods, FGD's 95% popularity threshold, frequencies renormalised;
//! that trace constrains no GPU model, so none of them names one, and for them the node's model
//! does not matter). The simulator passes the shapes of the trace it runs (same rule,
//! [`typical_shapes`]).

use std::collections::HashMap;

use rustc_hash::FxHashMap;

/// One typical pod shape and its frequency (frequencies of a shape list sum to 1).
#[derive(Debug, Clone, PartialEq)]
pub struct PodShape {
    pub cpu_milli: i64,
    /// 0 for CPU-only pods.
    pub num_gpu: u32,
    /// Per GPU: 1000 for whole GPUs, less for a share (then `num_gpu` = 1).
    pub gpu_milli: u32,
    /// The GPU models the shape may run on (the pod's allowed list, in its annotation's order);
    /// `None`: any model. Always `None` for CPU-only shapes.
    pub gpu_models: Option<Vec<String>>,
    pub freq: f64,
}

impl PodShape {
    pub fn is_share(&self) -> bool {
        self.num_gpu == 1 && self.gpu_milli < 1000
    }

    /// Whether the shape may use the GPUs of a node of `node_model` (`None`: the node has no
    /// GPU-model label, which no constrained shape accepts).
    pub fn accepts_model(&self, node_model: Option<&str>) -> bool {
        match &self.gpu_models {
            None => true,
            Some(models) => node_model.is_some_and(|m| models.iter().any(|a| a == m)),
        }
    }
}

/// The node's model as far as `shapes` tell models apart: `None` when no shape names a model,
/// since `F` then does not depend on it — memo keys use this so that nodes of different models
/// in the same state share one entry.
pub fn model_that_matters<'a>(node_model: Option<&'a str>, shapes: &[PodShape]) -> Option<&'a str> {
    node_model.filter(|_| shapes.iter().any(|s| s.gpu_models.is_some()))
}

/// The fragmentation `F(n)` in milli-GPU of a node of GPU model `node_model` with `cpu_free`
/// milli-CPU and `gpu_free` milli-GPU free per physical GPU, against `shapes`.
pub fn fragmentation(
    cpu_free: i64,
    gpu_free: &[u32],
    node_model: Option<&str>,
    shapes: &[PodShape],
) -> f64 {
    let idle: u32 = gpu_free.iter().sum();
    if idle == 0 {
        return 0.0;
    }
    let mut f = 0.0;
    for s in shapes {
        if s.num_gpu == 0 || s.gpu_milli == 0 || !s.accepts_model(node_model) {
            // A CPU-only pod can use no GPU, nor can a pod that may not run on this model:
            // every idle GPU milli is a fragment for it.
            f += s.freq * idle as f64;
            continue;
        }
        let room = gpu_free.iter().filter(|g| **g >= s.gpu_milli).count();
        if room >= s.num_gpu as usize && cpu_free >= s.cpu_milli {
            let small: u32 = gpu_free.iter().filter(|g| **g < s.gpu_milli).sum();
            f += s.freq * small as f64;
        } else {
            f += s.freq * idle as f64;
        }
    }
    f
}

/// The pod to place, as FGD sees it. Its GPU-model constraint is not here: whether the pod may
/// use the node's model is the fit check's business (kube-scheduler's filter, the extender's
/// `filter`), done before any gradient is asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodGpus {
    pub cpu_milli: i64,
    pub num_gpu: u32,
    /// Per GPU (1000 = whole GPUs).
    pub gpu_milli: u32,
}

/// [`fragmentation_delta`]'s value per node state for one pod: within one decision many
/// candidates share a state (idle nodes of one shape, equally filled ones), and the gradient over
/// the typical shapes is the expensive part of scoring a GPU node. Keyed by the exact inputs, so
/// a hit returns the value the computation would.
#[derive(Debug, Default)]
pub struct FragmentationMemo {
    /// Nodes whose model does not matter ([`model_that_matters`] is `None`): free CPU → per-GPU
    /// free shares → gradient. Apart from the by-model ones so that the common case (no shape
    /// names a model) compares no model string.
    any_model: FxHashMap<i64, GradientByGpus>,
    /// GPU model → the same (nested so that a hit borrows the model and the slice and allocates
    /// nothing).
    by_model: FxHashMap<String, FxHashMap<i64, GradientByGpus>>,
}

/// Per-GPU free shares → gradient (`None`: the pod does not fit).
type GradientByGpus = FxHashMap<Vec<u32>, Option<f64>>;

impl FragmentationMemo {
    /// The gradient of placing `pod` on a node of `node_model` with `cpu_free` and `gpu_free`,
    /// computed once per distinct state. Only valid for one pod and one shape list: make one memo
    /// per decision.
    pub fn delta(
        &mut self,
        cpu_free: i64,
        gpu_free: &[u32],
        node_model: Option<&str>,
        pod: PodGpus,
        shapes: &[PodShape],
    ) -> Option<f64> {
        let by_cpu = match model_that_matters(node_model, shapes) {
            None => &mut self.any_model,
            Some(model) => {
                if !self.by_model.contains_key(model) {
                    self.by_model
                        .insert(model.to_string(), FxHashMap::default());
                }
                self.by_model.get_mut(model)?
            }
        };
        let by_gpus = by_cpu.entry(cpu_free).or_default();
        if let Some(v) = by_gpus.get(gpu_free) {
            return *v;
        }
        let v = fragmentation_delta(cpu_free, gpu_free, node_model, pod, shapes).map(|(d, _)| d);
        by_gpus.insert(gpu_free.to_vec(), v);
        v
    }
}

#[cfg(test)]
impl FragmentationMemo {
    /// How many states the memo holds a gradient for.
    fn entries(&self) -> usize {
        std::iter::once(&self.any_model)
            .chain(self.by_model.values())
            .flat_map(|by_cpu| by_cpu.values())
            .map(|by_gpus| by_gpus.len())
            .sum()
    }
}

/// `ΔF = F(before) − F(after)` for placing `pod` on a node of `node_model`, with the GPU(s) FGD
/// would take: a share goes to the GPU with the largest ΔF (lowest index on ties; see
/// [`share_deltas`] for every GPU's), whole GPUs to the first fully free ones. `None` when the
/// pod does not fit (CPU or GPUs; the GPU model is the caller's check, see [`PodGpus`]).
pub fn fragmentation_delta(
    cpu_free: i64,
    gpu_free: &[u32],
    node_model: Option<&str>,
    pod: PodGpus,
    shapes: &[PodShape],
) -> Option<(f64, Vec<usize>)> {
    if cpu_free < pod.cpu_milli {
        return None;
    }
    let before = fragmentation(cpu_free, gpu_free, node_model, shapes);
    let cpu_after = cpu_free - pod.cpu_milli;
    let mut after = gpu_free.to_vec();
    if pod.num_gpu == 0 || pod.gpu_milli == 0 {
        let d = before - fragmentation(cpu_after, &after, node_model, shapes);
        return Some((d, Vec::new()));
    }
    if pod.num_gpu == 1 && pod.gpu_milli < 1000 {
        let mut best: Option<(usize, f64)> = None;
        for (i, d) in share_deltas(cpu_free, gpu_free, node_model, pod, shapes) {
            if best.is_none_or(|(_, b)| d > b) {
                best = Some((i, d));
            }
        }
        return best.map(|(i, d)| (d, vec![i]));
    }
    let free: Vec<usize> = (0..gpu_free.len())
        .filter(|i| gpu_free[*i] >= 1000)
        .take(pod.num_gpu as usize)
        .collect();
    if free.len() < pod.num_gpu as usize {
        return None;
    }
    for i in &free {
        after[*i] = 0;
    }
    let d = before - fragmentation(cpu_after, &after, node_model, shapes);
    Some((d, free))
}

/// For a share (`pod` on one GPU, below 1000 milli): `(GPU index, ΔF)` of putting it on each GPU
/// with room, in index order — what a policy that chooses the GPU by its own rounding of the
/// score needs (FGD as its authors code it picks the first GPU of the best *integer* score).
/// Empty when the CPU or no GPU fits.
pub fn share_deltas(
    cpu_free: i64,
    gpu_free: &[u32],
    node_model: Option<&str>,
    pod: PodGpus,
    shapes: &[PodShape],
) -> Vec<(usize, f64)> {
    if cpu_free < pod.cpu_milli {
        return Vec::new();
    }
    let before = fragmentation(cpu_free, gpu_free, node_model, shapes);
    let cpu_after = cpu_free - pod.cpu_milli;
    let mut after = gpu_free.to_vec();
    let mut out = Vec::new();
    for i in 0..gpu_free.len() {
        if gpu_free[i] < pod.gpu_milli {
            continue;
        }
        after[i] -= pod.gpu_milli;
        out.push((
            i,
            before - fragmentation(cpu_after, &after, node_model, shapes),
        ));
        after[i] += pod.gpu_milli;
    }
    out
}

/// FGD's score of a gradient, in (0, 1).
pub fn sigmoid_score(delta_milli: f64) -> f64 {
    1.0 / (1.0 + (-delta_milli / 1000.0).exp())
}

/// Typical shapes of a workload by FGD's rule: each pod's shape `(cpu, GPUs, milli, allowed GPU
/// models)` — the models as the pod lists them, `None` when it names none; CPU-only pods never
/// carry models — counted over the pods, most frequent first, taken until they cover `coverage`
/// of the pods, frequencies renormalised over the taken ones. Ties in count go to the larger
/// `(cpu, milli, GPUs, models joined by '|')` first: the order the authors' simulator sorts its
/// target pods in (`SortTargetPodInDecreasingCount`, a reversed sort on count then
/// `PodResource.Less`), which decides which of equally frequent shapes the cut-off keeps.
pub fn typical_shapes<'a>(
    pods: impl IntoIterator<Item = (PodGpus, Option<&'a [String]>)>,
    coverage: f64,
) -> Vec<PodShape> {
    type Key = (i64, u32, u32, Option<Vec<String>>);
    let mut counts: HashMap<Key, usize> = HashMap::new();
    let mut total = 0usize;
    for (p, models) in pods {
        let (num_gpu, milli) = if p.num_gpu == 0 || p.gpu_milli == 0 {
            (0, 0)
        } else {
            (p.num_gpu, p.gpu_milli)
        };
        let models = models
            .filter(|m| num_gpu > 0 && !m.is_empty())
            .map(<[String]>::to_vec);
        *counts
            .entry((p.cpu_milli, num_gpu, milli, models))
            .or_default() += 1;
        total += 1;
    }
    let joined = |m: &Option<Vec<String>>| m.as_ref().map_or(String::new(), |m| m.join("|"));
    let mut sorted: Vec<(Key, usize)> = counts.into_iter().collect();
    sorted.sort_by(|(a, na), (b, nb)| {
        nb.cmp(na)
            .then(b.0.cmp(&a.0))
            .then(b.2.cmp(&a.2))
            .then(b.1.cmp(&a.1))
            .then_with(|| joined(&b.3).cmp(&joined(&a.3)))
    });
    let mut taken = Vec::new();
    let mut cum = 0usize;
    for (k, n) in sorted {
        if cum as f64 >= coverage * total as f64 {
            break;
        }
        cum += n;
        taken.push((k, n));
    }
    taken
        .into_iter()
        .map(
            |((cpu_milli, num_gpu, gpu_milli, gpu_models), n)| PodShape {
                cpu_milli,
                num_gpu,
                gpu_milli,
                gpu_models,
                freq: n as f64 / cum as f64,
            },
        )
        .collect()
}

/// The OpenB default trace's typical shapes (see the module docs): the Worker's default.
pub const OPENB_DEFAULT_SHAPES: [PodShape; 35] = [
    PodShape {
        cpu_milli: 3152,
        num_gpu: 1,
        gpu_milli: 810,
        gpu_models: None,
        freq: 0.134818,
    },
    PodShape {
        cpu_milli: 11300,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.112542,
    },
    PodShape {
        cpu_milli: 11400,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.077131,
    },
    PodShape {
        cpu_milli: 3152,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.060520,
    },
    PodShape {
        cpu_milli: 11908,
        num_gpu: 1,
        gpu_milli: 470,
        gpu_models: None,
        freq: 0.049961,
    },
    PodShape {
        cpu_milli: 12500,
        num_gpu: 0,
        gpu_milli: 0,
        gpu_models: None,
        freq: 0.047129,
    },
    PodShape {
        cpu_milli: 8000,
        num_gpu: 1,
        gpu_milli: 470,
        gpu_models: None,
        freq: 0.046356,
    },
    PodShape {
        cpu_milli: 12000,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.041978,
    },
    PodShape {
        cpu_milli: 32000,
        num_gpu: 0,
        gpu_milli: 0,
        gpu_models: None,
        freq: 0.037342,
    },
    PodShape {
        cpu_milli: 18708,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.032835,
    },
    PodShape {
        cpu_milli: 11908,
        num_gpu: 1,
        gpu_milli: 650,
        gpu_models: None,
        freq: 0.030518,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 320,
        gpu_models: None,
        freq: 0.029874,
    },
    PodShape {
        cpu_milli: 9810,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.025109,
    },
    PodShape {
        cpu_milli: 8000,
        num_gpu: 0,
        gpu_milli: 0,
        gpu_models: None,
        freq: 0.023822,
    },
    PodShape {
        cpu_milli: 8000,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.021118,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.020474,
    },
    PodShape {
        cpu_milli: 15700,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.020345,
    },
    PodShape {
        cpu_milli: 11908,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.019701,
    },
    PodShape {
        cpu_milli: 16000,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.019315,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 230,
        gpu_models: None,
        freq: 0.015710,
    },
    PodShape {
        cpu_milli: 6000,
        num_gpu: 1,
        gpu_milli: 460,
        gpu_models: None,
        freq: 0.015452,
    },
    PodShape {
        cpu_milli: 15400,
        num_gpu: 0,
        gpu_milli: 0,
        gpu_models: None,
        freq: 0.015452,
    },
    PodShape {
        cpu_milli: 16500,
        num_gpu: 0,
        gpu_milli: 0,
        gpu_models: None,
        freq: 0.012233,
    },
    PodShape {
        cpu_milli: 14200,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.011975,
    },
    PodShape {
        cpu_milli: 24200,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.010816,
    },
    PodShape {
        cpu_milli: 3152,
        num_gpu: 1,
        gpu_milli: 590,
        gpu_models: None,
        freq: 0.009657,
    },
    PodShape {
        cpu_milli: 4152,
        num_gpu: 1,
        gpu_milli: 550,
        gpu_models: None,
        freq: 0.009271,
    },
    PodShape {
        cpu_milli: 8000,
        num_gpu: 1,
        gpu_milli: 320,
        gpu_models: None,
        freq: 0.009271,
    },
    PodShape {
        cpu_milli: 11900,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.007082,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 160,
        gpu_models: None,
        freq: 0.006953,
    },
    PodShape {
        cpu_milli: 4152,
        num_gpu: 1,
        gpu_milli: 370,
        gpu_models: None,
        freq: 0.005794,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 220,
        gpu_models: None,
        freq: 0.005537,
    },
    PodShape {
        cpu_milli: 8200,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.005279,
    },
    PodShape {
        cpu_milli: 15200,
        num_gpu: 1,
        gpu_milli: 1000,
        gpu_models: None,
        freq: 0.004636,
    },
    PodShape {
        cpu_milli: 4152,
        num_gpu: 1,
        gpu_milli: 810,
        gpu_models: None,
        freq: 0.003992,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(cpu: i64, n: u32, m: u32, freq: f64) -> PodShape {
        PodShape {
            cpu_milli: cpu,
            num_gpu: n,
            gpu_milli: m,
            gpu_models: None,
            freq,
        }
    }

    fn on(models: &[&str], s: PodShape) -> PodShape {
        PodShape {
            gpu_models: Some(models.iter().map(|m| m.to_string()).collect()),
            ..s
        }
    }

    fn gpus(cpu: i64, n: u32, m: u32) -> PodGpus {
        PodGpus {
            cpu_milli: cpu,
            num_gpu: n,
            gpu_milli: m,
        }
    }

    #[test]
    fn idle_gpus_are_fragments_only_for_shapes_that_cannot_use_them() {
        let half = [shape(1000, 1, 500, 1.0)];
        // Two GPUs: one with 300 free (too small for a 500 share), one fully free.
        assert_eq!(fragmentation(8000, &[300, 1000], None, &half), 300.0);
        // Not enough CPU: every idle milli is a fragment.
        assert_eq!(fragmentation(500, &[300, 1000], None, &half), 1300.0);
        // A CPU-only shape uses no GPU at all.
        assert_eq!(
            fragmentation(8000, &[300, 1000], None, &[shape(1000, 0, 0, 1.0)]),
            1300.0
        );
        // Whole-GPU shape of 2: only one free GPU → all idle is fragment.
        assert_eq!(
            fragmentation(8000, &[300, 1000], None, &[shape(1000, 2, 1000, 1.0)]),
            1300.0
        );
        // Frequencies weight the shapes; no idle GPU, no fragment.
        assert_eq!(
            fragmentation(
                8000,
                &[300, 1000],
                None,
                &[shape(1000, 1, 500, 0.5), shape(1000, 0, 0, 0.5)]
            ),
            150.0 + 650.0
        );
        assert_eq!(fragmentation(8000, &[0, 0], None, &half), 0.0);
        // Shapes that name no model do not look at the node's model.
        assert_eq!(fragmentation(8000, &[300, 1000], Some("T4"), &half), 300.0);
    }

    #[test]
    fn a_shape_that_names_models_can_use_no_gpu_of_another_model() {
        let v100 = [on(&["V100M16", "V100M32"], shape(1000, 1, 500, 1.0))];
        // Its model: only the 300 left on GPU 0 is a fragment, as for an unconstrained shape.
        assert_eq!(
            fragmentation(8000, &[300, 1000], Some("V100M32"), &v100),
            300.0
        );
        // Another model, or no model label: all 1300 idle milli are fragments.
        assert_eq!(fragmentation(8000, &[300, 1000], Some("T4"), &v100), 1300.0);
        assert_eq!(fragmentation(8000, &[300, 1000], None, &v100), 1300.0);
        assert!(v100[0].accepts_model(Some("V100M16")));
        assert!(
            !v100[0].accepts_model(Some("V100")),
            "exact names, no prefix"
        );
        assert!(!v100[0].accepts_model(None));
        assert!(shape(1, 1, 500, 1.0).accepts_model(None));
    }

    #[test]
    fn the_gradient_depends_on_the_node_model_when_shapes_name_models() {
        // Half the workload is T4-only shares of 500, half whole GPUs on any model.
        let shapes = [
            on(&["T4"], shape(1000, 1, 500, 0.5)),
            shape(1000, 1, 1000, 0.5),
        ];
        let pod = gpus(1000, 1, 500);
        // On a T4 node [500, 1000]: F = 0.5·0 + 0.5·500 = 250; after filling GPU 0, 0.
        let (t4, g) = fragmentation_delta(8000, &[500, 1000], Some("T4"), pod, &shapes).unwrap();
        assert_eq!((t4, g), (250.0, vec![0]));
        // On a P100 node the T4 shape can use nothing: F = 0.5·1500 + 0.5·500 = 1000 before,
        // 0.5·1000 after: the same placement removes twice the fragments.
        let (p100, g) =
            fragmentation_delta(8000, &[500, 1000], Some("P100"), pod, &shapes).unwrap();
        assert_eq!((p100, g), (500.0, vec![0]));
        // And a whole GPU taken from a P100 node removes the T4 shape's share of it too.
        let whole = gpus(1000, 1, 1000);
        let (a, _) = fragmentation_delta(8000, &[1000, 1000], Some("T4"), whole, &shapes).unwrap();
        let (b, _) = fragmentation_delta(8000, &[1000, 1000], None, whole, &shapes).unwrap();
        assert_eq!((a, b), (0.0, 500.0));
    }

    #[test]
    fn node_features_read_the_node_model_from_its_gpu_type_label() {
        use crate::config::Config;
        use crate::demand::{PodDemand, WorkloadClass};
        use crate::k8s::ResourceAmounts;
        use crate::node_state::NodeState;
        let config = Config::default();
        let amounts = |cpu: i64| ResourceAmounts::from([("cpu", cpu)]);
        let node = |label: Option<&str>| {
            let labels: std::collections::BTreeMap<_, _> = label
                .map(|m| (config.node_keys.gpu_type_labels[0].clone(), m.to_string()))
                .into_iter()
                .collect();
            NodeState {
                name: "n".into(),
                profile: std::borrow::Cow::Owned(crate::node_labels::NodeProfile::of(
                    &labels,
                    &config.node_keys,
                    &config.spot,
                )),
                labels: std::borrow::Cow::Owned(labels),
                allocatable: Some(std::borrow::Cow::Owned(amounts(8000))),
                requested: Some(std::borrow::Cow::Owned(amounts(0))),
                latency_us: None,
                load: None,
                gpu_free_milli: Some(vec![500, 1000]),
                stale_facts: false,
                unknown: false,
                committed_share: None,
            }
        };
        let pod = PodDemand {
            key: "p".into(),
            tenant: "t".into(),
            workload: WorkloadClass::Batch,
            request: amounts(1000),
            gpus: vec![("alibabacloud.com/gpu-milli".into(), 500)],
            allowed_gpu_models: None,
            latency_target_us: None,
            scheduler_preferences: false,
        };
        let shapes = [
            on(&["T4"], shape(1000, 1, 500, 0.5)),
            shape(1000, 1, 1000, 0.5),
        ];
        let delta = |label| {
            crate::heuristic::NodeFeatures::for_pod_memo(
                &node(label),
                &pod,
                &config.node_keys,
                &config.spot,
                &Default::default(),
                &shapes,
                &mut FragmentationMemo::default(),
            )
            .fragmentation_delta
        };
        // The figures of `the_gradient_depends_on_the_node_model_when_shapes_name_models`.
        assert_eq!(delta(Some("T4")), Some(250.0));
        assert_eq!(delta(Some("P100")), Some(500.0));
        assert_eq!(delta(None), Some(500.0), "no label: no model");
    }

    #[test]
    fn a_share_goes_to_the_gpu_that_removes_fragments() {
        let shapes = [shape(1000, 1, 500, 0.5), shape(1000, 1, 1000, 0.5)];
        // GPU 0 has 500 free: filling it removes a fragment for the whole-GPU shape; splitting
        // GPU 1 would create one.
        let pod = gpus(1000, 1, 500);
        let (d, chosen) = fragmentation_delta(8000, &[500, 1000], None, pod, &shapes).unwrap();
        assert_eq!(chosen, vec![0]);
        assert!(d > 0.0, "{d}");
        let per_gpu = share_deltas(8000, &[500, 1000], None, pod, &shapes);
        assert_eq!(
            per_gpu.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert_eq!(per_gpu[0].1, d, "the chosen GPU's own gradient");
        assert!(per_gpu[1].1 < d);
        let (d1, _) = fragmentation_delta(8000, &[1000, 1000], None, pod, &shapes).unwrap();
        assert!(
            d1 < d,
            "splitting a free GPU is worse than filling a partial one"
        );
        assert!(sigmoid_score(d) > sigmoid_score(d1));
        assert!(fragmentation_delta(8000, &[400, 300], None, pod, &shapes).is_none());
        assert!(share_deltas(8000, &[400, 300], None, pod, &shapes).is_empty());
        assert!(share_deltas(500, &[1000], None, pod, &shapes).is_empty());
        assert!(fragmentation_delta(500, &[1000], None, gpus(1000, 0, 0), &shapes).is_none());
        let (_, whole) =
            fragmentation_delta(8000, &[0, 1000, 1000], None, gpus(1, 2, 1000), &shapes).unwrap();
        assert_eq!(whole, vec![1, 2]);
    }

    #[test]
    fn typical_shapes_cover_the_threshold_and_sum_to_one() {
        let pods = (0..10).map(|i| {
            let milli = if i < 6 {
                1000
            } else if i < 9 {
                500
            } else {
                250
            };
            (gpus(1000, 1, milli), None)
        });
        let s = typical_shapes(pods, 0.9);
        assert_eq!(s.len(), 2);
        assert!((s.iter().map(|s| s.freq).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!((s[0].gpu_milli, s[0].freq), (1000, 6.0 / 9.0));
        let openb: f64 = OPENB_DEFAULT_SHAPES.iter().map(|s| s.freq).sum();
        assert!((openb - 1.0).abs() < 1e-4, "{openb}");
    }

    #[test]
    fn typical_shapes_keep_gpu_model_constraints_apart() {
        let t4 = vec!["T4".to_string()];
        let v100 = vec!["V100M16".to_string(), "V100M32".to_string()];
        let mut pods = Vec::new();
        pods.extend((0..4).map(|_| (gpus(1000, 1, 500), None)));
        pods.extend((0..3).map(|_| (gpus(1000, 1, 500), Some(t4.as_slice()))));
        pods.extend((0..2).map(|_| (gpus(1000, 1, 500), Some(v100.as_slice()))));
        // A CPU-only pod's models are dropped: it joins the other CPU-only pod's shape.
        pods.push((gpus(2000, 0, 0), Some(t4.as_slice())));
        pods.push((gpus(2000, 0, 0), None));
        let s = typical_shapes(pods, 1.0);
        let seen: Vec<(u32, Option<Vec<String>>, f64)> = s
            .iter()
            .map(|s| (s.num_gpu, s.gpu_models.clone(), s.freq * 11.0))
            .collect();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert_eq!(seen.len(), 4);
        assert!(seen[0].1.is_none() && close(seen[0].2, 4.0));
        assert_eq!(seen[1].1.as_ref(), Some(&t4));
        assert!(close(seen[1].2, 3.0));
        // Two shapes of count 2: the larger CPU request first (the authors' tie order).
        assert_eq!((seen[2].0, seen[2].1.as_ref()), (0, None));
        assert_eq!(seen[3].1.as_ref(), Some(&v100));
        // The cut-off keeps the first of equally frequent shapes in that order.
        let cut = typical_shapes(
            [
                (gpus(1000, 1, 500), None),
                (gpus(1000, 1, 500), None),
                (gpus(3000, 1, 1000), None),
                (gpus(4000, 1, 1000), None),
            ],
            0.75,
        );
        assert_eq!(
            cut.iter().map(|s| s.cpu_milli).collect::<Vec<_>>(),
            vec![1000, 4000]
        );
    }

    #[test]
    fn the_memo_returns_what_the_computation_returns_for_every_state() {
        let pod = gpus(4000, 1, 500);
        let mut shapes = OPENB_DEFAULT_SHAPES.to_vec();
        shapes[0].gpu_models = Some(vec!["T4".into()]);
        let mut memo = FragmentationMemo::default();
        let states: [(i64, Vec<u32>, Option<&str>); 7] = [
            (64_000, vec![1000; 8], None),
            (8_000, vec![1000, 1000], Some("T4")),
            (64_000, vec![1000; 8], None),
            (2_000, vec![1000], None),
            (16_000, vec![0, 250, 1000, 1000], Some("P100")),
            (8_000, vec![1000, 1000], Some("P100")),
            (8_000, vec![1000, 1000], Some("T4")),
        ];
        for _ in 0..2 {
            for (cpu, free, model) in &states {
                let expected =
                    fragmentation_delta(*cpu, free, *model, pod, &shapes).map(|(d, _)| d);
                assert_eq!(
                    memo.delta(*cpu, free, *model, pod, &shapes),
                    expected,
                    "{cpu} {free:?} {model:?}"
                );
            }
        }
        assert_ne!(
            memo.delta(8_000, &[1000, 1000], Some("T4"), pod, &shapes),
            memo.delta(8_000, &[1000, 1000], Some("P100"), pod, &shapes),
            "the model is part of the state"
        );
        assert_eq!(memo.entries(), 5, "one entry per distinct state");
        // Shapes that name no model: nodes of every model in one state share one entry.
        let mut plain = FragmentationMemo::default();
        for model in [None, Some("T4"), Some("P100")] {
            plain.delta(8_000, &[1000, 1000], model, pod, &OPENB_DEFAULT_SHAPES);
        }
        assert_eq!(plain.entries(), 1);
        assert_eq!(model_that_matters(Some("T4"), &OPENB_DEFAULT_SHAPES), None);
        assert_eq!(model_that_matters(Some("T4"), &shapes), Some("T4"));
    }
}
