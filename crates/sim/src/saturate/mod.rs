//! The ATC '23 saturation protocol (Weng et al., "Beware of Fragmentation"), as the authors'
//! simulator runs it: only the GPU nodes, pods never leave, the trace's pods in a seeded
//! shuffle, then pods sampled from it with replacement appended until the requested GPUs reach
//! 130% of capacity; a pod that fits nowhere fails and is not retried. Allocation is per GPU
//! (a share sits on one physical GPU, whole GPUs are whole). Metric: allocated milli-GPU /
//! capacity against arrived workload (requested GPUs of every submitted pod, failed ones
//! included, / capacity). Ties between equal scores go to a seeded node order.

pub mod kube_objects;
pub mod node;
pub mod policy;
pub mod report;
pub mod sampling;

use std::time::Instant;

use aco_core::config::Config;
use aco_core::heuristic::{typical_shapes, PodShape};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::cluster::World;
use node::SatNode;
use policy::{pod_gpus, Ctx, SatPolicy};
use sampling::{NodeSampling, NodeWalk};

/// Arrived workload at which the run stops, as a fraction of GPU capacity.
pub const STOP_AT: f64 = 1.3;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SatRun {
    pub policy: String,
    pub seed: u64,
    /// (arrived workload %, GPU allocation ratio %), one point per 0.5% of arrived workload.
    pub curve: Vec<(f64, f64)>,
    pub at100: f64,
    pub at130: f64,
    pub pods: usize,
    pub failed: usize,
    /// Feasible nodes the policy was shown per pod it placed (all of them, or kube-scheduler's
    /// sample: [`NodeSampling`]).
    pub candidates_per_pod: f64,
    pub decisions_per_s: f64,
}

/// The pod order of one seed: indices into `world.pods`.
pub fn workload(world: &World, seed: u64, capacity_milli: f64) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..world.pods.len()).collect();
    order.shuffle(&mut rng);
    let milli = |i: usize| world.pods[i].trace.gpu_units() * 1000.0;
    let mut arrived: f64 = order.iter().map(|i| milli(*i)).sum();
    while arrived < STOP_AT * capacity_milli && !world.pods.is_empty() {
        let i = rng.random_range(0..world.pods.len());
        arrived += milli(i);
        order.push(i);
    }
    order
}

/// The protocol's x and y axes, pod by pod in arrival order: arrived workload (requested GPU of
/// every submitted pod, failed ones included) and allocated GPU, both in % of capacity; one curve
/// point per 0.5% of arrived workload, and the allocation once 100% and 130% have arrived (the
/// last one if the run stops short). The simulator feeds it as it places; the real-kube replay
/// (`kube_objects`) from where kube-scheduler bound each pod.
#[derive(Debug, Clone)]
pub struct Arrivals {
    capacity_milli: f64,
    arrived: f64,
    allocated: f64,
    curve: Vec<(f64, f64)>,
    next_point: f64,
    at100: Option<f64>,
    at130: Option<f64>,
}

impl Arrivals {
    pub fn new(capacity_milli: f64) -> Self {
        Self {
            capacity_milli,
            arrived: 0.0,
            allocated: 0.0,
            curve: Vec::new(),
            next_point: 0.0,
            at100: None,
            at130: None,
        }
    }

    /// The next pod arrived asking `requested_milli` GPU and was given `allocated_milli` (0 when
    /// it failed).
    pub fn arrive(&mut self, requested_milli: f64, allocated_milli: f64) {
        self.arrived += requested_milli;
        self.allocated += allocated_milli;
        let x = 100.0 * self.arrived / self.capacity_milli;
        let y = 100.0 * self.allocated / self.capacity_milli;
        if x >= self.next_point {
            self.curve.push((x, y));
            self.next_point = (x / 0.5).floor() * 0.5 + 0.5;
        }
        if self.at100.is_none() && x >= 100.0 {
            self.at100 = Some(y);
        }
        if self.at130.is_none() && x >= 130.0 {
            self.at130 = Some(y);
        }
    }

    /// (curve, allocation at 100% arrived, at 130%).
    pub fn finish(self) -> (Vec<(f64, f64)>, f64, f64) {
        let y = 100.0 * self.allocated / self.capacity_milli;
        (self.curve, self.at100.unwrap_or(y), self.at130.unwrap_or(y))
    }
}

/// The trace's typical shapes by FGD's rule (95% popularity), each GPU pod's shape with its
/// `gpu_spec` (the authors' simulator keys its typical pods by the GPU-model annotation too:
/// `GetTypicalPods` over `PodResource`, which carries `GpuType`).
pub fn shapes_of(world: &World) -> Vec<PodShape> {
    typical_shapes(
        world
            .pods
            .iter()
            .map(|p| (pod_gpus(&p.trace), p.trace.gpu_spec.as_deref())),
        0.95,
    )
}

/// One policy, one seed, every feasible node scored.
/// Takes the whole Config: the policies score as the Worker's verbs do.
pub fn run(
    world: &World,
    config: &Config,
    shapes: &[PodShape],
    seed: u64,
    policy: &mut dyn SatPolicy,
) -> SatRun {
    run_sampled(world, config, shapes, seed, policy, NodeSampling::All)
}

/// [`run`] with the policy shown only the feasible nodes `sampling` picks, as kube-scheduler
/// does (the walk starts at the world's first node, in the order the real replay names them).
pub fn run_sampled(
    world: &World,
    config: &Config,
    shapes: &[PodShape],
    seed: u64,
    policy: &mut dyn SatPolicy,
    sampling: NodeSampling,
) -> SatRun {
    let started = Instant::now();
    let mut nodes: Vec<SatNode> = world
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| SatNode::new(i, &trace_node(n)))
        .collect();
    let capacity: f64 = nodes.iter().map(|n| n.gpu_cap() as f64).sum();
    // Seeded node order for ties: rank[node], lower wins.
    let mut perm: Vec<usize> = (0..nodes.len()).collect();
    perm.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x71E5));
    let mut rank = vec![0usize; nodes.len()];
    for (r, n) in perm.iter().enumerate() {
        rank[*n] = r;
    }
    let order = workload(world, seed, capacity);
    let mut arrivals = Arrivals::new(capacity);
    let mut failed = 0usize;
    let mut candidates = Vec::with_capacity(nodes.len());
    let mut walk = NodeWalk::new(sampling);
    let mut shown = 0usize;
    for (step, &pi) in order.iter().enumerate() {
        let sim_pod = &world.pods[pi];
        let pod = &sim_pod.trace;
        walk.feasible(nodes.len(), |n| nodes[n].fits(pod), &mut candidates);
        let mut allocated = 0;
        if candidates.is_empty() {
            failed += 1;
        } else {
            let ctx = Ctx {
                nodes: &nodes,
                sim_nodes: &world.nodes,
                pod,
                sim_pod,
                shapes,
                config,
                step: step as u64,
            };
            let verdicts = policy.score(&ctx, &candidates);
            let best = candidates
                .iter()
                .zip(&verdicts)
                .max_by(|(a, va), (b, vb)| {
                    va.score
                        .total_cmp(&vb.score)
                        .then(rank[**b].cmp(&rank[**a]))
                })
                .map(|(c, v)| (*c, v.gpu))
                .unwrap();
            shown += candidates.len();
            policy.placed(&ctx, best.0);
            allocated = nodes[best.0].place(pod, best.1);
        }
        arrivals.arrive(pod.gpu_units() * 1000.0, f64::from(allocated));
    }
    let wall = started.elapsed().as_secs_f64();
    let (curve, at100, at130) = arrivals.finish();
    SatRun {
        policy: policy.name().to_string(),
        seed,
        curve,
        at100,
        at130,
        pods: order.len(),
        failed,
        candidates_per_pod: shown as f64 / (order.len() - failed).max(1) as f64,
        decisions_per_s: order.len() as f64 / wall.max(1e-9),
    }
}

pub(crate) fn trace_node(n: &crate::cluster::SimNode) -> crate::trace::TraceNode {
    crate::trace::TraceNode {
        name: n.name.clone(),
        cpu_milli: n.cpu_milli,
        memory_mib: n.memory_mib,
        gpus: n.gpus,
        model: n.model.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::WorldParams;
    use crate::trace::{TraceNode, TracePod};

    fn pod(name: &str, cpu: i64, gpus: u32, milli: u32) -> TracePod {
        TracePod {
            name: name.into(),
            cpu_milli: cpu,
            memory_mib: 1024,
            num_gpu: gpus,
            gpu_milli: milli,
            gpu_spec: None,
            qos: "".into(),
            creation_s: 0,
            deletion_s: None,
        }
    }

    fn world() -> World {
        let prices = crate::prices::PriceTable::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/prices"),
        )
        .unwrap();
        let nodes: Vec<TraceNode> = (0..4)
            .map(|i| TraceNode {
                name: format!("n{i}"),
                cpu_milli: 32000,
                memory_mib: 1 << 20,
                gpus: 2,
                model: Some("T4".into()),
            })
            .collect();
        let pods = vec![
            pod("a", 2000, 1, 1000),
            pod("b", 2000, 1, 500),
            pod("c", 2000, 1, 300),
            pod("d", 1000, 0, 0),
        ];
        World::build(&nodes, &pods, &prices, WorldParams::default())
    }

    #[test]
    fn workload_reaches_130_percent_and_every_policy_allocates_per_gpu() {
        let w = world();
        let order = workload(&w, 42, 8000.0);
        let milli: f64 = order
            .iter()
            .map(|i| w.pods[*i].trace.gpu_units() * 1000.0)
            .sum();
        assert!(milli >= 1.3 * 8000.0);
        assert_eq!(order, workload(&w, 42, 8000.0), "seeded");
        let shapes = shapes_of(&w);
        for name in policy::ALL {
            let r = run(
                &w,
                &w.config,
                &shapes,
                42,
                policy::by_name(name, 42).unwrap().as_mut(),
            );
            assert!(
                r.at130 <= 100.0 && r.at130 >= r.at100 - 1e-9 && r.at100 > 50.0,
                "{name}: {r:?}"
            );
            let again = run(
                &w,
                &w.config,
                &shapes,
                42,
                policy::by_name(name, 42).unwrap().as_mut(),
            );
            assert_eq!(
                (r.curve.clone(), r.failed),
                (again.curve, again.failed),
                "{name} deterministic"
            );
        }
    }

    #[test]
    fn fgd_keeps_the_gpus_that_model_constrained_shapes_need() {
        let prices = crate::prices::PriceTable::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/prices"),
        )
        .unwrap();
        let node = |name: &str, model: &str| TraceNode {
            name: name.into(),
            cpu_milli: 32000,
            memory_mib: 1 << 20,
            gpus: 2,
            model: Some(model.into()),
        };
        let t4_only = TracePod {
            gpu_spec: Some(vec!["T4".into()]),
            ..pod("t4", 1000, 1, 500)
        };
        let pods = vec![
            t4_only,
            pod("whole", 1000, 1, 1000),
            pod("any", 1000, 1, 500),
        ];
        let w = World::build(
            &[node("t4", "T4"), node("p100", "P100")],
            &pods,
            &prices,
            WorldParams::default(),
        );
        let shapes = shapes_of(&w);
        assert_eq!(
            shapes.len(),
            3,
            "a T4-only share and an unconstrained one differ"
        );
        assert_eq!(shapes.iter().filter(|s| s.gpu_models.is_some()).count(), 1);
        let nodes: Vec<SatNode> = w
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| SatNode::new(i, &trace_node(n)))
            .collect();
        let ctx = policy::Ctx {
            nodes: &nodes,
            sim_nodes: &w.nodes,
            pod: &w.pods[2].trace,
            sim_pod: &w.pods[2],
            shapes: &shapes,
            config: &w.config,
            step: 0,
        };
        // An unconstrained share on the T4 node splits a GPU the T4-only shape could use
        // (ΔF = −500/3); on the P100 node that GPU was a fragment for it already (ΔF = 0).
        let v = policy::Fgd::default().score(&ctx, &[0, 1]);
        assert_eq!((v[0].score, v[1].score), (45.0, 50.0), "{v:?}");
    }

    #[test]
    fn the_cores_default_shapes_are_those_of_the_shipped_default_trace() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/openb/openb_pod_list_default.csv");
        let pods = crate::trace::read_pods(&path, 60).unwrap();
        let shapes = aco_core::heuristic::typical_shapes(
            pods.iter()
                .map(|p| (policy::pod_gpus(p), p.gpu_spec.as_deref())),
            0.95,
        );
        // The same shapes and frequencies; the order of equally frequent ones may differ (the
        // constant predates the authors' tie order), and F does not depend on it.
        let key = |s: &PodShape| (s.cpu_milli, s.num_gpu, s.gpu_milli);
        let mut shapes = shapes;
        shapes.sort_by_key(key);
        let mut core = aco_core::heuristic::OPENB_DEFAULT_SHAPES.to_vec();
        core.sort_by_key(key);
        assert_eq!(shapes.len(), core.len());
        for (a, b) in shapes.iter().zip(&core) {
            assert_eq!(
                (a.cpu_milli, a.num_gpu, a.gpu_milli, &a.gpu_models),
                (b.cpu_milli, b.num_gpu, b.gpu_milli, &b.gpu_models)
            );
            assert!((a.freq - b.freq).abs() < 1e-6, "{a:?} {b:?}");
        }
    }

    #[test]
    fn a_share_never_spans_gpus() {
        let mut n = SatNode::new(
            0,
            &TraceNode {
                name: "n".into(),
                cpu_milli: 8000,
                memory_mib: 1 << 20,
                gpus: 2,
                model: None,
            },
        );
        n.place(&pod("x", 1, 1, 700), None);
        n.place(&pod("y", 1, 1, 700), None);
        assert_eq!(n.gpu_free, vec![300, 300]);
        assert!(
            !n.fits(&pod("z", 1, 1, 400)),
            "600 free in total, but no GPU has 400"
        );
        assert!(!n.fits(&pod("w", 1, 1, 1000)));
    }
}
