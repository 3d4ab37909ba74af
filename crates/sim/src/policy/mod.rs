//! What answers kube-scheduler in a run ([`Decider`]): one of its own plugins, a baseline behind
//! [`Policy`], or the extender ([`Extender`]), answered by the Worker's pipeline
//! (`aco_core::pipeline`). The engine filters first (the simulated kube-scheduler's own fit
//! check, then the core's `check_node` on the node state built from reported facts); the decider
//! scores the survivors (higher is better) and the engine takes the best, breaking ties at
//! random as kube-scheduler does ([`select_host`]).

use aco_core::config::{Config, NodeKeys, SpotRisk};
use aco_core::demand::PodDemand;
use aco_core::heuristic::{ClusterOutlook, NodeFeatures};
use aco_core::node_state::NodeState;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::alloc::NodeAlloc;
use crate::cluster::{SimPod, World};

mod best_fit;
mod best_fit_atc;
mod cheapest_fit;
pub mod colony;
mod fgd;
mod first_fit;
mod k8s_default;
mod most_allocated;
mod random;
mod tetris;

pub use best_fit::BestFit;
pub use best_fit_atc::BestFitAtc;
pub use cheapest_fit::CheapestFit;
pub use colony::ColonyReports;
pub use fgd::Fgd;
pub use first_fit::FirstFit;
pub use k8s_default::KubeDefault;
pub use most_allocated::MostAllocated;
pub use random::RandomPolicy;
pub use tetris::Tetris;

/// Per tenant, its trail as (node, τ), best first.
pub type TenantTrails = Vec<(String, Vec<(String, f64)>)>;
/// Per tenant, each node's learned slowdown as (node, slowdown), by node name.
pub type TenantSlowdowns = Vec<(String, Vec<(String, f64)>)>;

/// What a policy may look at when scoring one pod.
pub struct ScoreCtx<'a> {
    pub world: &'a World,
    pub config: &'a Config,
    pub pod: &'a SimPod,
    pub alloc: &'a [NodeAlloc],
    pub now_ms: u64,
    /// What the facts say about the whole cluster (GPU scarcity, spot pools), as the Worker
    /// computes it from its copy of every node's facts.
    pub outlook: &'a ClusterOutlook,
}

/// One of kube-scheduler's own scoring plugins (or a published baseline scoring like one): it
/// reads kube-scheduler's exact cache, and kube-scheduler binds its best.
pub trait Policy {
    fn name(&self) -> String;
    /// One score per candidate (node indices into `world.nodes`, in cluster order); `states`
    /// are the extender's views of the same candidates.
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], states: &[&NodeState]) -> Vec<f64>;
}

/// The extender: the Worker's pipeline answers (one node alone at the top, assumed there until
/// the facts show it), from each tenant's colony — `colony`, τ·η with what it learned from
/// placements and outcomes (reliability, slowdowns) — or from η alone — `heuristic`, no colony.
pub struct Extender {
    pub colony: bool,
    /// The colony's exploration draws (ACS, `Q0`).
    pub rng: StdRng,
    /// The Colony object's part: decisions and pods remembered until their reports.
    pub reports: ColonyReports,
}

/// What answers kube-scheduler in a run.
pub enum Decider {
    Baseline(Box<dyn Policy>),
    Extender(Box<Extender>),
}

impl Decider {
    pub fn name(&self) -> String {
        match self {
            Decider::Baseline(p) => p.name(),
            Decider::Extender(e) if e.colony => "colony".into(),
            Decider::Extender(_) => "heuristic".into(),
        }
    }

    /// The extender: it reads the node facts, answers with one node alone at the top, and its
    /// pipeline assumes the pod there. The baselines are kube-scheduler's own plugins.
    pub fn is_extender(&self) -> bool {
        matches!(self, Decider::Extender(_))
    }
}

/// kube-scheduler's `selectHost`: the highest score wins; among equal scores each has the same
/// chance (reservoir sampling over the list in order, one draw per tie met).
pub fn select_host(candidates: &[usize], scores: &[f64], rng: &mut StdRng) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    let mut ties = 0u32;
    for (c, s) in candidates.iter().zip(scores) {
        match best {
            None => {
                best = Some((*c, *s));
                ties = 1;
            }
            Some((_, b)) if *s > b => {
                best = Some((*c, *s));
                ties = 1;
            }
            Some((_, b)) if *s == b => {
                ties += 1;
                if rng.random_range(0..ties) == 0 {
                    best = Some((*c, *s));
                }
            }
            _ => {}
        }
    }
    best.map(|(c, _)| c)
}

/// The policies of the benchmark, by CLI name.
pub const ALL: [&str; 11] = [
    "first-fit",
    "best-fit",
    "best-fit-atc",
    "fgd",
    "k8s-default",
    "k8s-mostallocated",
    "random",
    "cheapest-fit",
    "tetris",
    "heuristic",
    "colony",
];

pub fn by_name(name: &str, seed: u64) -> Option<Decider> {
    let baseline: Box<dyn Policy> = match name {
        "first-fit" => Box::new(FirstFit),
        "best-fit" => Box::new(BestFit),
        "best-fit-atc" => Box::new(BestFitAtc),
        "fgd" => Box::new(Fgd::default()),
        "k8s-default" => Box::new(KubeDefault),
        "k8s-mostallocated" => Box::new(MostAllocated),
        "random" => Box::new(RandomPolicy),
        "cheapest-fit" => Box::new(CheapestFit),
        "tetris" => Box::new(Tetris),
        "heuristic" | "colony" => {
            return Some(Decider::Extender(Box::new(Extender {
                colony: name == "colony",
                rng: StdRng::seed_from_u64(seed ^ 0xC010_4E11),
                reports: ColonyReports::default(),
            })))
        }
        _ => return None,
    };
    Some(Decider::Baseline(baseline))
}

/// Requested and allocatable per dimension after placing the pod: (cpu, memory, gpu milli).
pub(crate) fn dims(ctx: &ScoreCtx, node: usize) -> [(f64, f64); 3] {
    let n = &ctx.world.nodes[node];
    let a = &ctx.alloc[node];
    let p = &ctx.pod.trace;
    let pod_gpu = if p.num_gpu == 0 {
        0.0
    } else {
        p.num_gpu as f64 * p.gpu_milli.min(1000) as f64
    };
    [
        ((a.cpu_used + p.cpu_milli) as f64, n.cpu_milli as f64),
        ((a.mem_used + p.memory_mib) as f64, n.memory_mib as f64),
        (a.gpu_used_milli() as f64 + pod_gpu, n.gpus as f64 * 1000.0),
    ]
}

/// Per-pod features, exactly as the Worker's `scoring_input` computes them.
pub(crate) fn features<'s>(
    states: &[&'s NodeState<'_>],
    pod: &PodDemand,
    node_keys: &NodeKeys,
    spot: &SpotRisk,
    outlook: &ClusterOutlook,
) -> Vec<NodeFeatures<'s>> {
    let mut memo = aco_core::heuristic::FragmentationMemo::default();
    let pod = aco_core::heuristic::PodFootprint::of(pod, node_keys);
    states
        .iter()
        .map(|s| {
            NodeFeatures::for_pod_with(
                s,
                &pod,
                node_keys,
                spot,
                outlook,
                &aco_core::heuristic::OPENB_DEFAULT_SHAPES,
                &mut memo,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn select_host_takes_the_max_and_spreads_ties() {
        let mut rng = StdRng::seed_from_u64(1);
        assert_eq!(select_host(&[3, 4, 5], &[1.0, 3.0, 2.0], &mut rng), Some(4));
        assert_eq!(select_host(&[], &[], &mut rng), None);
        let mut seen = [0; 3];
        for _ in 0..3000 {
            seen[select_host(&[0, 1, 2], &[1.0, 1.0, 1.0], &mut rng).unwrap()] += 1;
        }
        assert!(seen.iter().all(|n| (800..1200).contains(n)), "{seen:?}");
    }
}
