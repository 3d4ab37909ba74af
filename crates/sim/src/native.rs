//! The extender pipeline in-process: facts folded by `NodeFacts::apply`, node states by
//! `NodeState::assemble`, filter by `check_node`, then the policy's scores.
//!
//! Speed (issue 9): the reporter resends every node's facts before almost every decision, so
//! the fast path folds a [`ReportBatch`] without the quantity strings (a node's `requested` is
//! re-parsed only when its allocation changed) and refreshes a cached node state's fact-derived
//! fields in place instead of reassembling it (labels and allocatable come from the `v1.Node`
//! and never change). [`NativeScheduler::reference`] keeps the unoptimised path (wire reports,
//! full reassembly); `tests::fast_path_places_exactly_as_the_reference` holds them equal.

use std::borrow::Cow;
use std::collections::HashMap;

use aco_core::assumed::AssumedPlacements;
use aco_core::config::Config;
use aco_core::facts::{FactsLookup, NodeFacts, Observed};
use aco_core::filter::{check_node_for, WantedResources};
use aco_core::heuristic::spot_risk::SpotPools;
use aco_core::heuristic::ClusterOutlook;
use aco_core::node_state::{LoadOutlook, NodeState};
use aco_core::predict::{spike_probability, Ema, Predictor};
use rand::rngs::StdRng;

use crate::alloc::NodeAlloc;
use crate::cluster::{SimPod, World};
use crate::facts_report::ReportBatch;
use crate::gpu_accounts::GpuAccounts;
use crate::policy::{select_host, Policy, ScoreCtx};
use crate::predictor::PredictorKind;
use crate::scheduler::{count_top_ties, Scheduler, TenantTrails};
use crate::trace::Error;
use aco_core::api::nodes::{NodeReport, UtilisationSample};

/// What changed in a node's facts since its cached state was built.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Dirty {
    Clean,
    /// Measurements changed; `requested` too when its value (not only its time) changed.
    Refresh {
        requested: bool,
    },
}

/// What a node's reported `requested` is computed from (`NodeAlloc::requested`).
type AllocKey = (i64, i64, usize, usize, u32);

fn alloc_key(a: &NodeAlloc) -> AllocKey {
    (
        a.cpu_used,
        a.mem_used,
        a.pods.len(),
        a.gpu_used.iter().filter(|u| **u > 0).count(),
        a.gpu_used_milli(),
    )
}

/// The extender pipeline in-process: facts folded by `NodeFacts::apply`, node states by
/// `NodeState::assemble`, filter by `check_node`, then the policy's scores.
pub struct NativeScheduler {
    pub policy: Box<dyn Policy>,
    pub config: Config,
    pub predictor: PredictorKind,
    /// Per node (cluster order): its facts record, once reported.
    facts: Vec<Option<NodeFacts>>,
    predictors: Vec<Option<Box<dyn Predictor>>>,
    last_sample_ms: Vec<Option<u64>>,
    /// Owned states (`NodeState<'static>`): kept across decisions, beyond any one borrow.
    cache: Vec<Option<NodeState<'static>>>,
    dirty: Vec<Dirty>,
    /// Per node: the allocation its folded `requested` was parsed from.
    reported: Vec<Option<AllocKey>>,
    /// The unoptimised path: wire reports folded by `NodeFacts::apply`, states reassembled.
    reference: bool,
    scored: bool,
    ties: (usize, usize),
    /// Spot pools' exposure and reclamations, as the Worker's Facts object keeps them.
    pools: SpotPools,
    /// The cluster outlook η reads, recomputed from the facts after each report or reclamation.
    outlook: ClusterOutlook,
    outlook_dirty: bool,
    /// The outlook's per-node GPU accounts (fast path; the reference recomputes them all).
    accounts: GpuAccounts,
    /// Per node, every tenant's observed slowdowns `(sum, count)`, when η learns a cluster-wide
    /// per-node slowdown (`with_cluster_slowdowns`); `None` otherwise.
    slowdowns: Option<Vec<(f64, f64)>>,
    /// The placements the extender named that the facts do not show yet, as the Worker's
    /// isolate keeps them (`aco_core::assumed`), for the policies that are the extender.
    assumed: AssumedPlacements,
    /// Facts changed since `assumed` was last brought up to them.
    assumed_stale: bool,
    /// The states prioritize scores for nodes with assumed placements (filter judges the
    /// facts alone, from `cache`), built when first needed after a change.
    assumed_states: HashMap<usize, NodeState<'static>>,
    /// Node name → index (cluster order).
    index: HashMap<String, usize>,
}

/// The native facts by node name, as the Worker's copy answers them.
struct FactsByName<'a> {
    facts: &'a [Option<NodeFacts>],
    index: &'a HashMap<String, usize>,
}

impl FactsLookup for FactsByName<'_> {
    fn get(&self, name: &str) -> Option<&NodeFacts> {
        self.facts.get(*self.index.get(name)?)?.as_ref()
    }
}

/// Prior of the cluster-wide slowdown estimate: as if each node had run this many pods at the
/// median speed.
pub const SLOWDOWN_PRIOR_RUNS: f64 = 3.0;

impl NativeScheduler {
    pub fn new(policy: Box<dyn Policy>, config: Config, predictor: PredictorKind) -> Self {
        let mut config = config;
        if let PredictorKind::Ema(a) = predictor {
            config.ema_alpha = a;
        }
        Self {
            policy,
            config,
            predictor,
            facts: Vec::new(),
            predictors: Vec::new(),
            last_sample_ms: Vec::new(),
            cache: Vec::new(),
            dirty: Vec::new(),
            reported: Vec::new(),
            reference: false,
            scored: false,
            ties: (0, 0),
            pools: SpotPools::default(),
            outlook: ClusterOutlook::default(),
            outlook_dirty: true,
            accounts: GpuAccounts::default(),
            slowdowns: None,
            assumed: AssumedPlacements::new(),
            assumed_stale: false,
            assumed_states: HashMap::new(),
            index: HashMap::new(),
        }
    }

    /// η's slowdown term from a per-node estimate shared by every tenant: the posterior mean of
    /// the observed slowdowns of the node (prior: [`SLOWDOWN_PRIOR_RUNS`] runs at 1).
    pub fn with_cluster_slowdowns(mut self) -> Self {
        self.slowdowns = Some(Vec::new());
        self
    }

    /// The unoptimised pipeline (every report through the wire format and `NodeFacts::apply`,
    /// every node state reassembled after a report): what the fast path must equal.
    pub fn reference(policy: Box<dyn Policy>, config: Config, predictor: PredictorKind) -> Self {
        Self {
            reference: true,
            ..Self::new(policy, config, predictor)
        }
    }

    /// Per-tenant (node, τ) best first (the colony policy's trails).
    pub fn pheromones_snapshot(&self) -> TenantTrails {
        self.policy.pheromones(&self.config)
    }

    fn ensure(&mut self, world: &World) {
        if self.cache.len() != world.nodes.len() {
            let n = world.nodes.len();
            self.facts = vec![None; n];
            self.cache = vec![None; n];
            self.dirty = vec![Dirty::Clean; n];
            self.reported = vec![None; n];
            self.predictors = world.nodes.iter().map(|_| self.predictor.make()).collect();
            self.last_sample_ms = vec![None; n];
            self.index = world
                .nodes
                .iter()
                .map(|n| (n.name.clone(), n.idx))
                .collect();
        }
    }

    /// Brings the assumed placements up to the facts (after a report, or when one expires) and
    /// marks the nodes whose record changed.
    fn settle_assumed(&mut self, now_ms: u64) {
        if !(self.assumed_stale || self.assumed.expires_by(now_ms)) {
            return;
        }
        self.assumed_stale = false;
        let lookup = FactsByName {
            facts: &self.facts,
            index: &self.index,
        };
        for name in self.assumed.refresh(&lookup, now_ms, &self.config) {
            if let Some(node) = self.index.get(&name) {
                self.assumed_states.remove(node);
            }
        }
    }

    /// The extender named `node` for `pod`: the pod counts there until the facts show it.
    fn assume(&mut self, world: &World, pod: &SimPod, node: usize, now_ms: u64) {
        if !self.policy.is_extender() {
            return;
        }
        let lookup = FactsByName {
            facts: &self.facts,
            index: &self.index,
        };
        let name = &world.nodes[node].name;
        let before = self
            .assumed
            .assume(name, &pod.demand, &lookup, now_ms, &self.config);
        self.assumed_states.remove(&node);
        // A pod placed again (after an eviction) no longer counts where it was assumed before.
        if let Some(old) = before.and_then(|b| self.index.get(&b)) {
            self.assumed_states.remove(old);
        }
    }

    /// Before a node's facts change: its previous observation (busy then, and when), so that
    /// [`NativeScheduler::exposed`] can accrue its spot exposure as the Facts object does.
    fn before(&self, node: usize) -> Option<(bool, u64)> {
        let r = self.facts[node].as_ref()?.requested.as_ref()?;
        Some((r.value.any_positive(), r.at_ms))
    }

    /// After a node's facts changed: its pool accrues the time since `before` (see
    /// `SpotPools::observed`), and the outlook must be recomputed.
    fn exposed(&mut self, node: usize, before: Option<(bool, u64)>) {
        if let (Some((busy, since)), Some(f)) = (before, &self.facts[node]) {
            if let Some(now) = f.requested.as_ref().map(|r| r.at_ms) {
                self.pools
                    .observed(&f.labels, busy, since, now, &self.config);
            }
        }
        self.outlook_dirty = true;
        self.assumed_stale = true;
    }

    fn observe(&mut self, node: usize, samples: impl Iterator<Item = UtilisationSample>) {
        if let Some(p) = &mut self.predictors[node] {
            for s in samples {
                if self.last_sample_ms[node].is_none_or(|last| s.at_ms > last) {
                    p.observe(s.value);
                    self.last_sample_ms[node] = Some(s.at_ms);
                }
            }
        }
    }

    /// The node's facts changed: the reference path drops its state, the fast path marks it.
    fn touch(&mut self, node: usize, requested: bool) {
        self.assumed_states.remove(&node);
        if self.reference {
            self.cache[node] = None;
        } else if self.cache[node].is_some() {
            let before = matches!(self.dirty[node], Dirty::Refresh { requested: true });
            self.dirty[node] = Dirty::Refresh {
                requested: requested || before,
            };
        }
    }

    /// The node state of `node` (cached; refreshed or rebuilt after a fact report). Borrows
    /// only the fields it needs, so the caller can keep `config` borrowed.
    #[allow(clippy::too_many_arguments)]
    fn state<'s>(
        cache: &'s mut [Option<NodeState<'static>>],
        dirty: &mut [Dirty],
        facts: &[Option<NodeFacts>],

        predictors: &[Option<Box<dyn Predictor>>],
        kind: PredictorKind,
        config: &Config,
        world: &World,
        node: usize,
        now_ms: u64,
    ) -> &'s NodeState<'static> {
        let facts = facts[node].as_ref();
        let slot = &mut cache[node];
        match (slot.is_some(), dirty[node]) {
            (true, Dirty::Clean) => {}
            (true, Dirty::Refresh { requested }) => {
                let s = slot.as_mut().unwrap();
                refresh(s, facts, now_ms, config, requested);
                overlay_predictor(s, predictors[node].as_deref(), kind, config);
                #[cfg(debug_assertions)]
                {
                    let n = &world.nodes[node];
                    let mut full =
                        NodeState::assemble(&n.name, Some(&n.view), facts, now_ms, config, &n.name)
                            .expect("derived nodes parse");
                    overlay_predictor(&mut full, predictors[node].as_deref(), kind, config);
                    debug_assert_eq!(
                        *s, full,
                        "refreshed node state of {} differs from a full assembly",
                        n.name
                    );
                }
            }
            (false, _) => {
                let n = &world.nodes[node];
                let mut s =
                    NodeState::assemble(&n.name, Some(&n.view), facts, now_ms, config, &n.name)
                        .expect("derived nodes parse")
                        .into_owned();
                overlay_predictor(&mut s, predictors[node].as_deref(), kind, config);
                *slot = Some(s);
            }
        }
        dirty[node] = Dirty::Clean;
        slot.as_ref().unwrap()
    }
}

/// The ablation predictors replace the facts' EMA outlook (as before the split).
fn overlay_predictor(
    s: &mut NodeState,
    p: Option<&dyn Predictor>,
    kind: PredictorKind,
    config: &Config,
) {
    if let Some(p) = p {
        s.load = p.forecast().map(|u| LoadOutlook {
            predicted_utilisation: u,
            spike_probability: spike_probability(
                u,
                p.volatility(),
                config.spike_threshold,
                config.spike_band,
            ),
        });
    } else if !matches!(kind, PredictorKind::Ema(_)) {
        s.load = None;
    }
}

/// `NodeState::assemble`'s fact-derived fields, recomputed in place for a node whose `v1.Node`
/// (labels, allocatable, name) is unchanged; `requested_changed` says whether the facts'
/// requested value differs from the one `s` holds. Mirrors `assemble` line for line (the debug
/// build checks every refresh against a full assembly).
fn refresh(
    s: &mut NodeState,
    facts: Option<&NodeFacts>,
    now_ms: u64,
    config: &Config,
    requested_changed: bool,
) {
    let ttl = config.facts_ttl_ms;
    let mut stale = false;
    match facts.and_then(|f| f.requested.as_ref()) {
        None => s.requested = None,
        Some(o) => match o.fresh(now_ms, ttl) {
            None => {
                stale = true;
                s.requested = None;
            }
            Some(v) => {
                if requested_changed || s.requested.is_none() {
                    s.requested = Some(Cow::Owned(v.clone()));
                }
            }
        },
    }
    let fact_latency = facts.and_then(|f| f.latency_us.as_ref()).and_then(|o| {
        let v = o.fresh(now_ms, ttl).copied();
        stale |= v.is_none();
        v
    });
    let load = facts.and_then(|f| f.load.as_ref()).and_then(|o| {
        let v = o.fresh(now_ms, ttl).copied();
        stale |= v.is_none();
        v
    });
    let gpu_free_milli = facts.and_then(|f| f.gpu_free_milli.as_ref()).and_then(|o| {
        let v = o.fresh(now_ms, ttl);
        stale |= v.is_none();
        v
    });
    // Copied into the state's own buffer when it has one (every refresh of a GPU node).
    match (gpu_free_milli, &mut s.gpu_free_milli) {
        (Some(fresh), Some(mine)) => mine.clone_from(fresh),
        (fresh, mine) => *mine = fresh.cloned(),
    }
    s.latency_us = fact_latency.or_else(|| {
        config
            .latency_labels
            .iter()
            .find_map(|key| s.labels.get(key))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    });
    s.load = load.and_then(|ema: Ema| {
        ema.forecast().map(|u| LoadOutlook {
            predicted_utilisation: u,
            spike_probability: spike_probability(
                u,
                ema.volatility(),
                config.spike_threshold,
                config.spike_band,
            ),
        })
    });
    s.stale_facts = stale;
    s.committed_share = aco_core::node_state::committed_share(
        s.allocatable.as_deref(),
        s.requested.as_deref(),
        config,
    );
}

impl Scheduler for NativeScheduler {
    fn name(&self) -> String {
        self.policy.name()
    }

    fn report(&mut self, world: &World, reports: &[NodeReport], now_ms: u64) -> Result<(), Error> {
        self.ensure(world);
        let index: std::collections::HashMap<&str, usize> = if reports.len() == world.nodes.len() {
            Default::default()
        } else {
            world
                .nodes
                .iter()
                .map(|n| (n.name.as_str(), n.idx))
                .collect()
        };
        for (i, r) in reports.iter().enumerate() {
            let node = if index.is_empty() {
                i
            } else {
                index[r.name.as_str()]
            };
            let before = self.before(node);
            self.facts[node]
                .get_or_insert_with(NodeFacts::default)
                .apply(r, now_ms, &self.config);
            self.exposed(node, before);
            self.observe(node, r.utilisation.iter().copied());
            // Wire reports carry no allocation to compare, so the requested value may differ.
            self.reported[node] = None;
            self.accounts.forget(node);
            self.touch(node, true);
        }
        Ok(())
    }

    fn report_batch(
        &mut self,
        world: &World,
        batch: &ReportBatch,
        now_ms: u64,
    ) -> Result<(), Error> {
        if self.reference {
            return self.report(world, &batch.to_wire(world), now_ms);
        }
        self.ensure(world);
        debug_assert!(
            batch.sample_ms.windows(2).all(|w| w[0] <= w[1]),
            "samples oldest first, as apply sorts them"
        );
        for n in &world.nodes {
            let node = n.idx;
            let key = alloc_key(&batch.alloc[node]);
            let before = self.before(node);
            let unchanged = !batch.first
                && self.reported[node] == Some(key)
                && self.facts[node]
                    .as_ref()
                    .is_some_and(|f| f.requested.is_some());
            if !unchanged {
                // Identity, a new allocation or the first report: the wire path, exactly.
                self.facts[node]
                    .get_or_insert_with(NodeFacts::default)
                    .apply(&batch.wire(n), now_ms, &self.config);
                self.reported[node] = Some(key);
                self.accounts.forget(node);
            } else {
                // `NodeFacts::apply` of the same report, minus re-parsing an unchanged `requested`.
                let f = self.facts[node].as_mut().unwrap();
                let at = batch.observed_at_ms;
                f.requested.as_mut().unwrap().at_ms = at;
                f.latency_us = Some(Observed {
                    value: n.latency_us,
                    at_ms: at,
                });
                let alloc = &batch.alloc[node];
                let shares_unchanged = match &f.gpu_free_milli {
                    Some(o) => {
                        !alloc.gpu_used.is_empty()
                            && o.value.iter().copied().eq(alloc.gpu_free_shares())
                    }
                    None => alloc.gpu_used.is_empty(),
                };
                if !shares_unchanged {
                    self.accounts.forget(node);
                }
                let mut shares = f.gpu_free_milli.take().map_or_else(Vec::new, |o| o.value);
                f.gpu_free_milli = alloc.gpu_free_milli_into(&mut shares).then_some(Observed {
                    value: shares,
                    at_ms: at,
                });
                let mut load = f.load.take().unwrap_or(Observed {
                    value: Ema::new(self.config.ema_alpha),
                    at_ms: 0,
                });
                for s in batch.samples(node) {
                    if load.value.samples == 0 || s.at_ms > load.at_ms {
                        load.value.observe(s.value);
                        load.at_ms = s.at_ms;
                    }
                }
                f.load = (load.value.samples > 0).then_some(load);
                f.updated_at_ms = now_ms;
            }
            self.exposed(node, before);
            self.observe(node, batch.samples(node));
            self.touch(node, !unchanged);
        }
        Ok(())
    }

    fn schedule(
        &mut self,
        world: &World,
        alloc: &[NodeAlloc],
        pod: &SimPod,
        candidates: &[usize],
        now_ms: u64,
        tie: &mut StdRng,
    ) -> Result<Option<usize>, Error> {
        self.ensure(world);
        self.settle_assumed(now_ms);
        let mut passed = Vec::with_capacity(candidates.len());
        let wanted = WantedResources::of(&pod.demand, &self.config);
        for &c in candidates {
            let state = Self::state(
                &mut self.cache,
                &mut self.dirty,
                &self.facts,
                &self.predictors,
                self.predictor,
                &self.config,
                world,
                c,
                now_ms,
            );
            if check_node_for(&pod.demand, &wanted, state, &self.config).is_ok() {
                passed.push(c);
            }
        }
        self.scored = passed.len() >= 2;
        let chosen = match passed.len() {
            0 => None,
            1 => Some(passed[0]),
            _ => {
                // Filter judged the facts alone; prioritize scores with the assumed placements.
                if !self.assumed.is_empty() {
                    for &c in &passed {
                        if self.assumed_states.contains_key(&c) {
                            continue;
                        }
                        let n = &world.nodes[c];
                        if let Some(r) = self.assumed.record(&n.name) {
                            let mut s = NodeState::assemble(
                                &n.name,
                                Some(&n.view),
                                Some(&r.facts),
                                now_ms,
                                &self.config,
                                &n.name,
                            )
                            .expect("derived nodes parse")
                            .into_owned();
                            overlay_predictor(
                                &mut s,
                                self.predictors[c].as_deref(),
                                self.predictor,
                                &self.config,
                            );
                            self.assumed_states.insert(c, s);
                        }
                    }
                }
                let states: Vec<&NodeState> = passed
                    .iter()
                    .map(|c| {
                        self.assumed_states
                            .get(c)
                            .or(self.cache[*c].as_ref())
                            .unwrap()
                    })
                    .collect();
                if self.outlook_dirty {
                    self.outlook = if self.reference {
                        ClusterOutlook::from_facts(
                            self.facts.iter().flatten(),
                            self.pools.pools.clone(),
                            now_ms,
                            &self.config,
                        )
                    } else {
                        self.accounts.outlook(
                            &self.facts,
                            self.pools.pools.clone(),
                            now_ms,
                            &self.config,
                        )
                    };
                    if let Some(s) = &self.slowdowns {
                        self.outlook.node_slowdowns = s
                            .iter()
                            .enumerate()
                            .filter(|(_, (_, n))| *n > 0.0)
                            .map(|(i, (sum, n))| {
                                let mean = (SLOWDOWN_PRIOR_RUNS + sum) / (SLOWDOWN_PRIOR_RUNS + n);
                                (world.nodes[i].name.clone(), mean)
                            })
                            .collect();
                    }
                    self.outlook_dirty = false;
                }
                let ctx = ScoreCtx {
                    world,
                    config: &self.config,
                    pod,
                    alloc,
                    now_ms,
                    outlook: &self.outlook,
                };
                let scores = self.policy.score(&ctx, &passed, &states);
                count_top_ties(&scores, &mut self.ties);
                select_host(&passed, &scores, tie)
            }
        };
        // The extender's answer is the unique top (`colony::single_out_top`) or the only node
        // it passed: the node kube-scheduler binds, which the Worker assumes the pod on.
        if let Some(node) = chosen {
            self.assume(world, pod, node, now_ms);
        }
        Ok(chosen)
    }

    fn placed(
        &mut self,
        world: &World,
        alloc: &[NodeAlloc],
        pod: &SimPod,
        node: usize,
        now_ms: u64,
    ) -> Result<(), Error> {
        // `scored` mirrors kube-scheduler: prioritize runs only with ≥ 2 feasible nodes, so a
        // pod with a single feasible node has no remembered decision and deposits nothing.
        let ctx = ScoreCtx {
            world,
            config: &self.config,
            pod,
            alloc,
            now_ms,
            outlook: &self.outlook,
        };
        self.policy.placed(&ctx, node, self.scored);
        Ok(())
    }

    fn outcome(
        &mut self,
        world: &World,
        pod: &SimPod,
        node: usize,
        outcome: aco_core::colony::Outcome,
        now_ms: u64,
    ) -> Result<(), Error> {
        if let (Some(s), Ok(Some(observed))) = (&mut self.slowdowns, outcome.slowdown()) {
            if s.len() < world.nodes.len() {
                s.resize(world.nodes.len(), (0.0, 0.0));
            }
            s[node].0 += observed;
            s[node].1 += 1.0;
            self.outlook_dirty = true;
        }
        let ctx = ScoreCtx {
            world,
            config: &self.config,
            pod,
            alloc: &[],
            now_ms,
            outlook: &self.outlook,
        };
        self.policy.outcome(&ctx, node, outcome);
        Ok(())
    }

    fn reclaimed(&mut self, world: &World, node: usize, _now_ms: u64) -> Result<(), Error> {
        self.ensure(world);
        // As `PUT /v1/nodes` with `reclaimed`: the pool counts it, the node's facts are forgotten
        // (the replacement instance reports afresh).
        if let Some(f) = self.facts[node].take() {
            self.pools.reclaimed(&f.labels, &self.config);
        }
        self.reported[node] = None;
        self.cache[node] = None;
        self.accounts.forget(node);
        self.outlook_dirty = true;
        self.assumed_stale = true;
        Ok(())
    }

    fn pheromones(&mut self, _world: &World) -> Result<TenantTrails, Error> {
        Ok(self.policy.pheromones(&self.config))
    }

    fn tie_stats(&self) -> (usize, usize) {
        self.ties
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{World, WorldParams};
    use crate::engine::{run, RunResult, SimParams};
    use crate::load::LoadModel;
    use crate::policy;

    fn sample(seed: u64) -> World {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let nodes = crate::trace::read_nodes(&root.join("data/openb-sample/nodes.csv")).unwrap();
        let pods = crate::trace::read_pods(&root.join("data/openb-sample/pods.csv"), 60).unwrap();
        let prices = crate::prices::PriceTable::load(&root.join("data/prices")).unwrap();
        World::build(
            &nodes,
            &pods,
            &prices,
            WorldParams {
                seed,
                ..WorldParams::default()
            },
        )
    }

    /// Everything but wall time: placements, metrics, timelines.
    fn fingerprint(r: &RunResult) -> String {
        let mut m = r.metrics.clone();
        m.wall_s = 0.0;
        m.decisions_per_s = 0.0;
        format!(
            "{m:?} {:?} {:?} {:?} {:?} {:?}",
            r.placements,
            r.cost_timeline,
            r.violation_timeline,
            r.pheromone_timeline,
            r.ls_violations
        )
    }

    /// The fast path (batch folding, in-place state refresh) places every pod exactly as the
    /// unoptimised path, for every policy and predictor kind, with reports before almost every
    /// decision (60 s) and with reports rarer than the facts' TTL (so states go stale and are
    /// reused between reports). In debug builds every refresh is also checked against a full
    /// `NodeState::assemble`.
    #[test]
    fn fast_path_places_exactly_as_the_reference() {
        let w = sample(2);
        let load = LoadModel {
            seed: 2,
            ..LoadModel::default()
        };
        let mut cases = 0;
        for interval in [60, 420] {
            let params = SimParams {
                seed: 2,
                report_interval_s: interval,
                pheromone_samples: 10,
                ..SimParams::default()
            };
            for name in policy::ALL {
                for kind in [PredictorKind::Ema(0.5), PredictorKind::Sma(4)] {
                    if kind != PredictorKind::Ema(0.5) && !matches!(name, "colony" | "heuristic") {
                        continue;
                    }
                    let mut fast = NativeScheduler::new(
                        policy::by_name(name, 2).unwrap(),
                        w.config.clone(),
                        kind,
                    );
                    let mut slow = NativeScheduler::reference(
                        policy::by_name(name, 2).unwrap(),
                        w.config.clone(),
                        kind,
                    );
                    let (a, b) = (
                        run(&w, &load, &params, &mut fast).unwrap(),
                        run(&w, &load, &params, &mut slow).unwrap(),
                    );
                    assert!(a.metrics.placed > 200, "{name}: the run places pods");
                    assert_eq!(
                        fingerprint(&a),
                        fingerprint(&b),
                        "{name} {kind:?} interval {interval}"
                    );
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 2 * (policy::ALL.len() + 2));
    }
}
