//! Fragmentation factor: FGD's measure (Weng et al., "Beware of Fragmentation", USENIX ATC '23).
//!
//! A node's GPU fragmentation `F(n)` is measured against the workload's *typical pod shapes*
//! (CPU, GPUs, milli-GPU per GPU, with their frequencies): for each shape, the idle milli-GPU
//! of the node that the shape could not use — all of it when the shape does not fit (too little
//! CPU, not enough GPUs with room, or a CPU-only shape, which can use no GPU), else the idle
//! milli on GPUs whose free share is below the shape's per-GPU request — weighted by frequency.
//! A placement's gradient is `ΔF = F(before) − F(after)` (positive: the placement removes
//! fragments); FGD scores `sigmoid(ΔF / 1000)`, and so does this factor.
//!
//! Inputs: the node's free milli-GPU per physical GPU (`NodeFacts.gpu_free_milli`, sent by the
//! reporter as `gpuFreeMilli` where the cluster exposes it; the simulator knows it) and its free
//! CPU (allocatable − requested). Without per-GPU facts the factor is neutral (1.0).
//!
//! Typical shapes: the Worker has no view of the workload, so it uses [`OPENB_DEFAULT_SHAPES`],
//! derived once from the OpenB default trace (the 35 most frequent `(cpu, GPUs, milli)` shapes,
//! covering 95.3% of its 8,152 pods, FGD's 95% popularity threshold, frequencies renormalised).
//! The simulator passes the shapes of the trace it runs (same rule, [`typical_shapes`]).

use super::NodeFeatures;

/// One typical pod shape and its frequency (frequencies of a shape list sum to 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodShape {
    pub cpu_milli: i64,
    /// 0 for CPU-only pods.
    pub num_gpu: u32,
    /// Per GPU: 1000 for whole GPUs, less for a share (then `num_gpu` = 1).
    pub gpu_milli: u32,
    pub freq: f64,
}

impl PodShape {
    pub fn is_share(&self) -> bool {
        self.num_gpu == 1 && self.gpu_milli < 1000
    }
}

/// The fragmentation `F(n)` in milli-GPU of a node with `cpu_free` milli-CPU and `gpu_free`
/// milli-GPU free per physical GPU, against `shapes`.
pub fn fragmentation(cpu_free: i64, gpu_free: &[u32], shapes: &[PodShape]) -> f64 {
    let idle: u32 = gpu_free.iter().sum();
    if idle == 0 {
        return 0.0;
    }
    let mut f = 0.0;
    for s in shapes {
        if s.num_gpu == 0 || s.gpu_milli == 0 {
            // A CPU-only pod can use no GPU: every idle GPU milli is a fragment for it.
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

/// The pod to place, as FGD sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodGpus {
    pub cpu_milli: i64,
    pub num_gpu: u32,
    /// Per GPU (1000 = whole GPUs).
    pub gpu_milli: u32,
}

/// `ΔF = F(before) − F(after)` for placing `pod` on the node, with the GPU(s) FGD would take:
/// a share goes to the GPU with the largest ΔF (lowest index on ties), whole GPUs to the first
/// fully free ones. `None` when the pod does not fit.
/// [`fragmentation_delta`]'s value per node state for one pod: within one decision many
/// candidates share a state (idle nodes of one shape, equally filled ones), and the gradient over
/// the typical shapes is the expensive part of scoring a GPU node. Keyed by the exact inputs, so
/// a hit returns the value the computation would.
#[derive(Debug, Default)]
pub struct FragmentationMemo {
    /// Free CPU → per-GPU free shares → gradient (nested so that a hit borrows the slice and
    /// allocates nothing).
    values: std::collections::HashMap<i64, std::collections::HashMap<Vec<u32>, Option<f64>>>,
}

impl FragmentationMemo {
    /// The gradient of placing `pod` on a node with `cpu_free` and `gpu_free`, computed once per
    /// distinct state. Only valid for one pod and one shape list: make one memo per decision.
    pub fn delta(
        &mut self,
        cpu_free: i64,
        gpu_free: &[u32],
        pod: PodGpus,
        shapes: &[PodShape],
    ) -> Option<f64> {
        let by_gpus = self.values.entry(cpu_free).or_default();
        if let Some(v) = by_gpus.get(gpu_free) {
            return *v;
        }
        let v = fragmentation_delta(cpu_free, gpu_free, pod, shapes).map(|(d, _)| d);
        by_gpus.insert(gpu_free.to_vec(), v);
        v
    }
}

pub fn fragmentation_delta(
    cpu_free: i64,
    gpu_free: &[u32],
    pod: PodGpus,
    shapes: &[PodShape],
) -> Option<(f64, Vec<usize>)> {
    if cpu_free < pod.cpu_milli {
        return None;
    }
    let before = fragmentation(cpu_free, gpu_free, shapes);
    let cpu_after = cpu_free - pod.cpu_milli;
    let mut after = gpu_free.to_vec();
    if pod.num_gpu == 0 || pod.gpu_milli == 0 {
        return Some((
            before - fragmentation(cpu_after, &after, shapes),
            Vec::new(),
        ));
    }
    if pod.num_gpu == 1 && pod.gpu_milli < 1000 {
        let mut best: Option<(f64, usize)> = None;
        for i in 0..gpu_free.len() {
            if gpu_free[i] < pod.gpu_milli {
                continue;
            }
            after[i] -= pod.gpu_milli;
            let d = before - fragmentation(cpu_after, &after, shapes);
            after[i] += pod.gpu_milli;
            if best.is_none_or(|(b, _)| d > b) {
                best = Some((d, i));
            }
        }
        return best.map(|(d, i)| (d, vec![i]));
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
    Some((before - fragmentation(cpu_after, &after, shapes), free))
}

/// FGD's score of a gradient, in (0, 1).
pub fn sigmoid_score(delta_milli: f64) -> f64 {
    1.0 / (1.0 + (-delta_milli / 1000.0).exp())
}

/// The η factor: `sigmoid(ΔF / 1000)` from [`NodeFeatures::fragmentation_delta`]; 1.0 (neutral)
/// when the node has no per-GPU facts. Note that a node *with* facts scores ≤ 1 and one without
/// scores 1, so in a cluster where only some GPU nodes report per-GPU shares the silent ones are
/// favoured; where all or none report, the ranking is FGD's.
pub fn fragmentation_factor(features: &NodeFeatures) -> f64 {
    features.fragmentation_delta.map_or(1.0, sigmoid_score)
}

/// Typical shapes of a workload by FGD's rule: shapes `(cpu, GPUs, milli)` counted over the
/// pods, most frequent first (ties by shape, for determinism), taken until they cover
/// `coverage` of the pods, frequencies renormalised over the taken ones.
pub fn typical_shapes(pods: impl IntoIterator<Item = PodGpus>, coverage: f64) -> Vec<PodShape> {
    let mut counts: std::collections::BTreeMap<(i64, u32, u32), usize> =
        std::collections::BTreeMap::new();
    let mut total = 0usize;
    for p in pods {
        let milli = if p.num_gpu == 0 { 0 } else { p.gpu_milli };
        *counts.entry((p.cpu_milli, p.num_gpu, milli)).or_default() += 1;
        total += 1;
    }
    let mut sorted: Vec<((i64, u32, u32), usize)> = counts.into_iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
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
        .map(|((cpu_milli, num_gpu, gpu_milli), n)| PodShape {
            cpu_milli,
            num_gpu,
            gpu_milli,
            freq: n as f64 / cum as f64,
        })
        .collect()
}

/// The OpenB default trace's typical shapes (see the module docs): the Worker's default.
pub const OPENB_DEFAULT_SHAPES: [PodShape; 35] = [
    PodShape {
        cpu_milli: 3152,
        num_gpu: 1,
        gpu_milli: 810,
        freq: 0.134818,
    },
    PodShape {
        cpu_milli: 11300,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.112542,
    },
    PodShape {
        cpu_milli: 11400,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.077131,
    },
    PodShape {
        cpu_milli: 3152,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.060520,
    },
    PodShape {
        cpu_milli: 11908,
        num_gpu: 1,
        gpu_milli: 470,
        freq: 0.049961,
    },
    PodShape {
        cpu_milli: 12500,
        num_gpu: 0,
        gpu_milli: 0,
        freq: 0.047129,
    },
    PodShape {
        cpu_milli: 8000,
        num_gpu: 1,
        gpu_milli: 470,
        freq: 0.046356,
    },
    PodShape {
        cpu_milli: 12000,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.041978,
    },
    PodShape {
        cpu_milli: 32000,
        num_gpu: 0,
        gpu_milli: 0,
        freq: 0.037342,
    },
    PodShape {
        cpu_milli: 18708,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.032835,
    },
    PodShape {
        cpu_milli: 11908,
        num_gpu: 1,
        gpu_milli: 650,
        freq: 0.030518,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 320,
        freq: 0.029874,
    },
    PodShape {
        cpu_milli: 9810,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.025109,
    },
    PodShape {
        cpu_milli: 8000,
        num_gpu: 0,
        gpu_milli: 0,
        freq: 0.023822,
    },
    PodShape {
        cpu_milli: 8000,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.021118,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.020474,
    },
    PodShape {
        cpu_milli: 15700,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.020345,
    },
    PodShape {
        cpu_milli: 11908,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.019701,
    },
    PodShape {
        cpu_milli: 16000,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.019315,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 230,
        freq: 0.015710,
    },
    PodShape {
        cpu_milli: 6000,
        num_gpu: 1,
        gpu_milli: 460,
        freq: 0.015452,
    },
    PodShape {
        cpu_milli: 15400,
        num_gpu: 0,
        gpu_milli: 0,
        freq: 0.015452,
    },
    PodShape {
        cpu_milli: 16500,
        num_gpu: 0,
        gpu_milli: 0,
        freq: 0.012233,
    },
    PodShape {
        cpu_milli: 14200,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.011975,
    },
    PodShape {
        cpu_milli: 24200,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.010816,
    },
    PodShape {
        cpu_milli: 3152,
        num_gpu: 1,
        gpu_milli: 590,
        freq: 0.009657,
    },
    PodShape {
        cpu_milli: 4152,
        num_gpu: 1,
        gpu_milli: 550,
        freq: 0.009271,
    },
    PodShape {
        cpu_milli: 8000,
        num_gpu: 1,
        gpu_milli: 320,
        freq: 0.009271,
    },
    PodShape {
        cpu_milli: 11900,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.007082,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 160,
        freq: 0.006953,
    },
    PodShape {
        cpu_milli: 4152,
        num_gpu: 1,
        gpu_milli: 370,
        freq: 0.005794,
    },
    PodShape {
        cpu_milli: 4000,
        num_gpu: 1,
        gpu_milli: 220,
        freq: 0.005537,
    },
    PodShape {
        cpu_milli: 8200,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.005279,
    },
    PodShape {
        cpu_milli: 15200,
        num_gpu: 1,
        gpu_milli: 1000,
        freq: 0.004636,
    },
    PodShape {
        cpu_milli: 4152,
        num_gpu: 1,
        gpu_milli: 810,
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
            freq,
        }
    }

    #[test]
    fn idle_gpus_are_fragments_only_for_shapes_that_cannot_use_them() {
        let half = [shape(1000, 1, 500, 1.0)];
        // Two GPUs: one with 300 free (too small for a 500 share), one fully free.
        assert_eq!(fragmentation(8000, &[300, 1000], &half), 300.0);
        // Not enough CPU: every idle milli is a fragment.
        assert_eq!(fragmentation(500, &[300, 1000], &half), 1300.0);
        // A CPU-only shape uses no GPU at all.
        assert_eq!(
            fragmentation(8000, &[300, 1000], &[shape(1000, 0, 0, 1.0)]),
            1300.0
        );
        // Whole-GPU shape of 2: only one free GPU → all idle is fragment.
        assert_eq!(
            fragmentation(8000, &[300, 1000], &[shape(1000, 2, 1000, 1.0)]),
            1300.0
        );
        // Frequencies weight the shapes; no idle GPU, no fragment.
        assert_eq!(
            fragmentation(
                8000,
                &[300, 1000],
                &[shape(1000, 1, 500, 0.5), shape(1000, 0, 0, 0.5)]
            ),
            150.0 + 650.0
        );
        assert_eq!(fragmentation(8000, &[0, 0], &half), 0.0);
    }

    #[test]
    fn a_share_goes_to_the_gpu_that_removes_fragments() {
        let shapes = [shape(1000, 1, 500, 0.5), shape(1000, 1, 1000, 0.5)];
        // GPU 0 has 500 free: filling it removes a fragment for the whole-GPU shape; splitting
        // GPU 1 would create one.
        let (d, gpus) = fragmentation_delta(
            8000,
            &[500, 1000],
            PodGpus {
                cpu_milli: 1000,
                num_gpu: 1,
                gpu_milli: 500,
            },
            &shapes,
        )
        .unwrap();
        assert_eq!(gpus, vec![0]);
        assert!(d > 0.0, "{d}");
        let (d1, _) = fragmentation_delta(
            8000,
            &[1000, 1000],
            PodGpus {
                cpu_milli: 1000,
                num_gpu: 1,
                gpu_milli: 500,
            },
            &shapes,
        )
        .unwrap();
        assert!(
            d1 < d,
            "splitting a free GPU is worse than filling a partial one"
        );
        assert!(sigmoid_score(d) > sigmoid_score(d1));
        assert!(fragmentation_delta(
            8000,
            &[400, 300],
            PodGpus {
                cpu_milli: 1000,
                num_gpu: 1,
                gpu_milli: 500
            },
            &shapes
        )
        .is_none());
        assert!(fragmentation_delta(
            500,
            &[1000],
            PodGpus {
                cpu_milli: 1000,
                num_gpu: 0,
                gpu_milli: 0
            },
            &shapes
        )
        .is_none());
        let (_, whole) = fragmentation_delta(
            8000,
            &[0, 1000, 1000],
            PodGpus {
                cpu_milli: 1,
                num_gpu: 2,
                gpu_milli: 1000,
            },
            &shapes,
        )
        .unwrap();
        assert_eq!(whole, vec![1, 2]);
    }

    #[test]
    fn typical_shapes_cover_the_threshold_and_sum_to_one() {
        let pods = (0..10).map(|i| PodGpus {
            cpu_milli: 1000,
            num_gpu: 1,
            gpu_milli: if i < 6 {
                1000
            } else if i < 9 {
                500
            } else {
                250
            },
        });
        let s = typical_shapes(pods, 0.9);
        assert_eq!(s.len(), 2);
        assert!((s.iter().map(|s| s.freq).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!((s[0].gpu_milli, s[0].freq), (1000, 6.0 / 9.0));
        let openb: f64 = OPENB_DEFAULT_SHAPES.iter().map(|s| s.freq).sum();
        assert!((openb - 1.0).abs() < 1e-4, "{openb}");
    }

    #[test]
    fn factor_is_neutral_without_per_gpu_facts() {
        let mut f = NodeFeatures {
            node: "n".into(),
            cost_per_hour: None,
            spot: false,
            predicted_utilisation: None,
            spike_probability: None,
            committed_share: None,
            pod_share: None,
            fragmentation_delta: None,
        };
        assert_eq!(fragmentation_factor(&f), 1.0);
        f.fragmentation_delta = Some(0.0);
        assert_eq!(fragmentation_factor(&f), 0.5);
        f.fragmentation_delta = Some(2000.0);
        assert!(fragmentation_factor(&f) > 0.85);
    }

    #[test]
    fn the_memo_returns_what_the_computation_returns_for_every_state() {
        let pod = PodGpus {
            cpu_milli: 4000,
            num_gpu: 1,
            gpu_milli: 500,
        };
        let mut memo = FragmentationMemo::default();
        let states: [(i64, Vec<u32>); 5] = [
            (64_000, vec![1000; 8]),
            (8_000, vec![500, 1000]),
            (64_000, vec![1000; 8]),
            (2_000, vec![1000]),
            (16_000, vec![0, 250, 1000, 1000]),
        ];
        for _ in 0..2 {
            for (cpu, gpus) in &states {
                let expected =
                    fragmentation_delta(*cpu, gpus, pod, &OPENB_DEFAULT_SHAPES).map(|(d, _)| d);
                assert_eq!(
                    memo.delta(*cpu, gpus, pod, &OPENB_DEFAULT_SHAPES),
                    expected,
                    "{cpu} {gpus:?}"
                );
            }
        }
        assert_eq!(
            memo.values.values().map(|m| m.len()).sum::<usize>(),
            4,
            "one entry per distinct state"
        );
    }
}
