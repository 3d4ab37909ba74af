//! Scoring policies, all behind [`Policy`]. The engine filters first (the simulated
//! kube-scheduler's own fit check, then the core's `check_node` on the node state built from
//! reported facts); a policy scores the survivors (higher is better) and the engine takes the
//! best, breaking ties at random as kube-scheduler does ([`select_host`]).

use std::collections::BTreeMap;

use aco_core::colony::{to_scores, Decision, TenantColony};
use aco_core::config::Config;
use aco_core::demand::PodDemand;
use aco_core::heuristic::{eta, NodeFeatures};
use aco_core::node_state::NodeState;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::cluster::{SimPod, World};
use crate::engine::{NodeAlloc, TenantTrails};

/// What a policy may look at when scoring one pod.
pub struct ScoreCtx<'a> {
    pub world: &'a World,
    pub config: &'a Config,
    pub pod: &'a SimPod,
    pub alloc: &'a [NodeAlloc],
    pub now_ms: u64,
}

pub trait Policy {
    fn name(&self) -> String;
    /// One score per candidate (node indices into `world.nodes`, in cluster order); `states`
    /// are the extender's views of the same candidates.
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], states: &[&NodeState]) -> Vec<f64>;
    /// The pod was bound to `node`. `scored` is false when there was a single feasible node and
    /// kube-scheduler would not have called prioritize at all.
    fn placed(&mut self, _ctx: &ScoreCtx, _node: usize, _scored: bool) {}
    /// Per-tenant pheromone snapshot (node, τ), best first; empty for policies without trails.
    fn pheromones(&self, _config: &Config) -> TenantTrails {
        Vec::new()
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
pub const ALL: [&str; 8] = ["first-fit", "best-fit", "k8s-default", "random", "cheapest-fit", "tetris", "heuristic", "colony"];

pub fn by_name(name: &str, seed: u64) -> Option<Box<dyn Policy>> {
    Some(match name {
        "first-fit" => Box::new(FirstFit),
        "best-fit" => Box::new(BestFit),
        "k8s-default" => Box::new(KubeDefault),
        "random" => Box::new(RandomPolicy),
        "cheapest-fit" => Box::new(CheapestFit),
        "tetris" => Box::new(Tetris),
        "heuristic" => Box::new(Heuristic),
        "colony" => Box::new(Colony::new(seed)),
        _ => return None,
    })
}

/// Requested and allocatable per dimension after placing the pod: (cpu, memory, gpu milli).
fn dims(ctx: &ScoreCtx, node: usize) -> [(f64, f64); 3] {
    let n = &ctx.world.nodes[node];
    let a = &ctx.alloc[node];
    let p = &ctx.pod.trace;
    let pod_gpu = if p.num_gpu == 0 { 0.0 } else { p.num_gpu as f64 * p.gpu_milli.min(1000) as f64 };
    [
        ((a.cpu_used + p.cpu_milli) as f64, n.cpu_milli as f64),
        ((a.mem_used + p.memory_mib) as f64, n.memory_mib as f64),
        (a.gpu_used_milli() as f64 + pod_gpu, n.gpus as f64 * 1000.0),
    ]
}

/// The first feasible node in cluster order.
pub struct FirstFit;
impl Policy for FirstFit {
    fn name(&self) -> String {
        "first-fit".into()
    }
    fn score(&mut self, _: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        candidates.iter().map(|c| -(*c as f64)).collect()
    }
}

/// The node left with the least free capacity (mean free fraction over CPU, memory and, on GPU
/// nodes, GPU) after placing the pod.
pub struct BestFit;
impl Policy for BestFit {
    fn name(&self) -> String {
        "best-fit".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        candidates
            .iter()
            .map(|c| {
                let d = dims(ctx, *c);
                let used: Vec<f64> = d.iter().filter(|(_, cap)| *cap > 0.0).map(|(req, cap)| 1.0 - req / cap).collect();
                -used.iter().sum::<f64>() / used.len() as f64
            })
            .collect()
    }
}

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
                let f: Vec<f64> = d[..2].iter().map(|(req, cap)| if *cap > 0.0 { (req / cap).min(1.0) } else { 0.0 }).collect();
                let std = ((f[0] - f[1]).abs()) / 2.0;
                let balanced = ((1.0 - std) * 100.0) as i64;
                (least_allocated + balanced) as f64
            })
            .collect()
    }
}

/// Uniformly random among feasible nodes (all scores equal; the tie-break decides).
pub struct RandomPolicy;
impl Policy for RandomPolicy {
    fn name(&self) -> String {
        "random".into()
    }
    fn score(&mut self, _: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        vec![0.0; candidates.len()]
    }
}

/// The cheapest feasible node by `aco/cost-per-hour` (ties at random).
pub struct CheapestFit;
impl Policy for CheapestFit {
    fn name(&self) -> String {
        "cheapest-fit".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        candidates.iter().map(|c| -ctx.world.nodes[*c].price).collect()
    }
}

/// Tetris (Grandl et al., SIGCOMM 2014): the dot product of the pod's demand and the node's free
/// capacity, both as fractions of the node's allocatable, over CPU, memory and GPU.
pub struct Tetris;
impl Policy for Tetris {
    fn name(&self) -> String {
        "tetris".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        let p = &ctx.pod.trace;
        let pod_gpu = if p.num_gpu == 0 { 0.0 } else { p.num_gpu as f64 * p.gpu_milli.min(1000) as f64 };
        let demand = [p.cpu_milli as f64, p.memory_mib as f64, pod_gpu];
        candidates
            .iter()
            .map(|c| {
                let d = dims(ctx, *c);
                (0..3)
                    .filter(|i| d[*i].1 > 0.0)
                    .map(|i| {
                        let cap = d[i].1;
                        let free_before = cap - (d[i].0 - demand[i]);
                        (demand[i] / cap) * (free_before / cap)
                    })
                    .sum()
            })
            .collect()
    }
}

/// Per-pod features, exactly as the Worker's `scoring_input` computes them.
fn features(states: &[&NodeState], pod: &PodDemand, config: &Config) -> Vec<NodeFeatures> {
    states.iter().map(|s| NodeFeatures::for_pod(s, pod, config)).collect()
}

/// The heuristic alone: `η^β` mapped to the extender's 0–10 scores (no trail, no learning).
pub struct Heuristic;
impl Policy for Heuristic {
    fn name(&self) -> String {
        "heuristic".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, _: &[usize], states: &[&NodeState]) -> Vec<f64> {
        let d: Vec<f64> = features(states, &ctx.pod.demand, ctx.config)
            .iter()
            .map(|f| eta(f, ctx.pod.demand.workload, None, ctx.config).powf(ctx.config.beta))
            .collect();
        to_scores(&d).into_iter().map(|s| s as f64).collect()
    }
}

/// The full colony: one `TenantColony` per tenant, scores `τ^α·η^β` mapped to 0–10 exactly as
/// the Worker's `/v1/prioritize` does; deposits only through `confirm` on the node the simulated
/// kube-scheduler really bound (never on the colony's own argmax).
pub struct Colony {
    pub colonies: BTreeMap<String, TenantColony>,
    pending: Option<(String, Decision)>,
    rng: StdRng,
}

impl Colony {
    pub fn new(seed: u64) -> Self {
        Self { colonies: BTreeMap::new(), pending: None, rng: StdRng::seed_from_u64(seed ^ 0xC010_4E11) }
    }
}

impl Policy for Colony {
    fn name(&self) -> String {
        "colony".into()
    }
    fn score(&mut self, ctx: &ScoreCtx, _: &[usize], states: &[&NodeState]) -> Vec<f64> {
        let tenant = ctx.pod.demand.tenant.clone();
        let colony = self.colonies.entry(tenant.clone()).or_default();
        let p = colony.prioritize(&features(states, &ctx.pod.demand, ctx.config), ctx.pod.demand.workload, ctx.now_ms, ctx.config, &mut self.rng);
        self.pending = Some((tenant, p.decision));
        p.priorities.iter().map(|h| h.score as f64).collect()
    }
    fn placed(&mut self, ctx: &ScoreCtx, node: usize, scored: bool) {
        let tenant = ctx.pod.demand.tenant.clone();
        let pending = self.pending.take().filter(|(t, _)| scored && *t == tenant).map(|(_, d)| d);
        let colony = self.colonies.entry(tenant).or_default();
        let _ = colony.confirm(pending.as_ref(), &ctx.world.nodes[node].name, None, ctx.config);
    }
    fn pheromones(&self, config: &Config) -> TenantTrails {
        self.colonies.iter().map(|(t, c)| (t.clone(), c.pheromones.snapshot(config))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
