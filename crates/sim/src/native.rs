//! The extender pipeline in-process: the Worker's own `aco_core::pipeline::ExtenderPipeline`
//! (facts view, assumed placements, cluster outlook, colonies, the answer's top) over the facts
//! this simulation's reporter sends, with the node states the filter and η read assembled from
//! them by `NodeState::assemble` and judged by `check_node_for`, as the Worker's verbs do. What
//! is the simulator's own: the event loop's side of it (reports, bindings, outcomes, as the
//! reporter delivers them) and the fast paths below, which answer exactly as the plain path.
//!
//! Speed: the reporter resends every node's facts before almost every decision, so
//! the fast path folds a [`ReportBatch`] without the quantity strings (a node's `requested` is
//! re-parsed only when its allocation changed), refreshes a cached node state's fact-derived
//! fields in place instead of reassembling it (labels and allocatable come from the `v1.Node`
//! and never change), and keeps each node's part of the cluster outlook between reports
//! ([`IndexedFacts`]). [`NativeScheduler::reference`] keeps the unoptimised path (wire reports,
//! full reassembly, the outlook summed whole); `tests::fast_path_places_exactly_as_the_reference`
//! holds them equal.

use std::borrow::Cow;
use std::collections::HashMap;

use aco_core::api::nodes::{NodeReport, UtilisationSample};
use aco_core::config::{Config, LoadModel};
use aco_core::facts::{NodeFacts, Observed};
use aco_core::filter::{check_node_for, WantedResources};
use aco_core::heuristic::spot_risk::SpotPools;
use aco_core::node_state::{LoadOutlook, NodeState};
use aco_core::pipeline::{ColonyCopies, ColonySource, ExtenderPipeline};
use aco_core::predict::{Ema, Predictor};
use rand::rngs::StdRng;

use crate::alloc::NodeAlloc;
use crate::cluster::{SimPod, World};
use crate::facts_report::ReportBatch;
use crate::indexed_facts::IndexedFacts;
use crate::policy::{self, features, select_host, ColonyReports, Decider, ScoreCtx};
use crate::predictor::PredictorKind;
use crate::scheduler::{count_top_ties, Scheduler, TenantTrails};
use crate::trace::Error;

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

/// Per node (cluster order), what the simulator derives from its facts and keeps between
/// decisions: the node states the filter and η read, the ablation predictors, and what each
/// folded `requested` was parsed from.
#[derive(Default)]
struct NodeCaches {
    predictors: Vec<Option<Box<dyn Predictor>>>,
    last_sample_ms: Vec<Option<u64>>,
    /// Owned states (`NodeState<'static>`): kept across decisions, beyond any one borrow.
    states: Vec<Option<NodeState<'static>>>,
    dirty: Vec<Dirty>,
    /// Per node: the allocation its folded `requested` was parsed from.
    reported: Vec<Option<AllocKey>>,
    /// The states prioritize scores for nodes with assumed placements (filter judges the facts
    /// alone, from `states`), built when first needed after their record changed.
    assumed: HashMap<usize, NodeState<'static>>,
    /// The unoptimised path: every state reassembled after a report.
    reference: bool,
}

impl NodeCaches {
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
        self.assumed.remove(&node);
        if self.reference {
            self.states[node] = None;
        } else if self.states[node].is_some() {
            let before = matches!(self.dirty[node], Dirty::Refresh { requested: true });
            self.dirty[node] = Dirty::Refresh {
                requested: requested || before,
            };
        }
    }

    /// The assumed record of these nodes changed: their assumed states are built again.
    fn forget_assumed(&mut self, facts: &IndexedFacts, nodes: Vec<String>) {
        for name in nodes {
            if let Some(node) = facts.index_of(&name) {
                self.assumed.remove(&node);
            }
        }
    }

    /// The node state of `node` (cached; refreshed or rebuilt after a fact report).
    /// Takes the whole Config, as `NodeState::assemble` does (four groups).
    fn state(
        &mut self,
        facts: &[Option<NodeFacts>],
        kind: PredictorKind,
        config: &Config,
        world: &World,
        node: usize,
        now_ms: u64,
    ) -> &NodeState<'static> {
        let facts = facts[node].as_ref();
        let predictor = self.predictors[node].as_deref();
        let slot = &mut self.states[node];
        match (slot.is_some(), self.dirty[node]) {
            (true, Dirty::Clean) => {}
            (true, Dirty::Refresh { requested }) => {
                let s = slot.as_mut().unwrap();
                refresh(s, facts, now_ms, config, requested);
                overlay_predictor(s, predictor, kind, &config.load);
                #[cfg(debug_assertions)]
                {
                    let n = &world.nodes[node];
                    let mut full =
                        NodeState::assemble(&n.name, Some(&n.view), facts, now_ms, config, &n.name)
                            .expect("derived nodes parse");
                    overlay_predictor(&mut full, predictor, kind, &config.load);
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
                overlay_predictor(&mut s, predictor, kind, &config.load);
                *slot = Some(s);
            }
        }
        self.dirty[node] = Dirty::Clean;
        slot.as_ref().unwrap()
    }
}

/// Before a node's facts change: its previous observation (busy then, and when), so that
/// [`exposed`] can accrue its spot exposure as the Facts object does.
fn before(facts: &IndexedFacts, node: usize) -> Option<(bool, u64)> {
    let r = facts.records[node].as_ref()?.requested.as_ref()?;
    Some((r.value.any_positive(), r.at_ms))
}

/// After a node's facts changed: its pool accrues the time since `before` (see
/// `SpotPools::observed`), as the Facts object does.
/// Takes the whole Config, as `SpotPools::observed` does.
fn exposed(
    pools: &mut SpotPools,
    facts: &IndexedFacts,
    node: usize,
    before: Option<(bool, u64)>,
    config: &Config,
) {
    if let (Some((busy, since)), Some(f)) = (before, &facts.records[node]) {
        if let Some(now) = f.requested.as_ref().map(|r| r.at_ms) {
            pools.observed(&f.labels, busy, since, now, config);
        }
    }
}

/// The extender pipeline in-process (see the module documentation), answering for a baseline
/// policy or for the extender itself ([`Decider`]).
pub struct NativeScheduler {
    pub policy: Decider,
    pub config: Config,
    pub predictor: PredictorKind,
    /// The Worker's pipeline over this simulation's facts.
    pipeline: ExtenderPipeline<IndexedFacts>,
    nodes: NodeCaches,
    scored: bool,
    ties: (usize, usize),
    /// The latest time the event loop gave this scheduler: when the trails are read (they
    /// evaporate), as the Worker reads them at its request's time.
    now_ms: u64,
}

impl NativeScheduler {
    pub fn new(policy: Decider, config: Config, predictor: PredictorKind) -> Self {
        let mut config = config;
        if let PredictorKind::Ema(a) = predictor {
            config.load.ema_alpha = a;
        }
        Self {
            policy,
            config,
            predictor,
            pipeline: ExtenderPipeline::default(),
            nodes: NodeCaches::default(),
            scored: false,
            ties: (0, 0),
            now_ms: 0,
        }
    }

    /// The unoptimised pipeline (every report through the wire format and `NodeFacts::apply`,
    /// every node state reassembled after a report, the outlook summed over every node): what
    /// the fast path must equal.
    pub fn reference(policy: Decider, config: Config, predictor: PredictorKind) -> Self {
        let mut s = Self::new(policy, config, predictor);
        s.nodes.reference = true;
        s
    }

    /// Per-tenant (node, τ) of the colony's trails now, as `colony::PheromoneTable::snapshot`
    /// orders them.
    pub fn pheromones_snapshot(&self) -> TenantTrails {
        policy::colony::trails(self.pipeline.colonies_ref(), self.now_ms, &self.config.cost)
    }

    /// Per tenant, each node's slowdown learned from the outcomes (`OutcomeStats::slowdown`).
    pub fn learned_slowdowns(&self) -> policy::TenantSlowdowns {
        policy::colony::slowdowns(self.pipeline.colonies_ref())
    }

    /// Where placements and outcomes go when the extender answers from colonies: the Colony
    /// object's part, the colonies, and the whole config (for `ColonyReports::outcome`).
    fn colony_reports(&mut self) -> Option<(&mut ColonyReports, &mut ColonyCopies, &Config)> {
        match &mut self.policy {
            Decider::Extender(e) if e.colony => {
                Some((&mut e.reports, self.pipeline.colonies(), &self.config))
            }
            _ => None,
        }
    }

    fn ensure(&mut self, world: &World) {
        if self.pipeline.facts().len() != world.nodes.len() {
            let n = world.nodes.len();
            let fast = !self.nodes.reference;
            self.pipeline
                .update(|facts, _| *facts = IndexedFacts::new(world, fast));
            let nodes = &mut self.nodes;
            nodes.states = vec![None; n];
            nodes.dirty = vec![Dirty::Clean; n];
            nodes.reported = vec![None; n];
            nodes.predictors = world.nodes.iter().map(|_| self.predictor.make()).collect();
            nodes.last_sample_ms = vec![None; n];
            nodes.assumed.clear();
        }
    }

    /// The states prioritize reads for `passed`: the assumed ones where the pipeline holds an
    /// assumed record, built when missing.
    fn assumed_states(&mut self, world: &World, passed: &[usize], now_ms: u64) {
        let assumed = self.pipeline.assumed();
        if assumed.is_empty() {
            return;
        }
        for &c in passed {
            if self.nodes.assumed.contains_key(&c) {
                continue;
            }
            let n = &world.nodes[c];
            if let Some(r) = assumed.record(&n.name) {
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
                    self.nodes.predictors[c].as_deref(),
                    self.predictor,
                    &self.config.load,
                );
                self.nodes.assumed.insert(c, s);
            }
        }
    }
}

/// The ablation predictors replace the facts' EMA outlook (as before the split).
fn overlay_predictor(
    s: &mut NodeState,
    p: Option<&dyn Predictor>,
    kind: PredictorKind,
    load_model: &LoadModel,
) {
    if let Some(p) = p {
        s.load = LoadOutlook::of(p, load_model);
    } else if !matches!(kind, PredictorKind::Ema(_)) {
        s.load = None;
    }
}

/// `NodeState::assemble`'s fact-derived fields, recomputed in place for a node whose `v1.Node`
/// (labels, allocatable, name) is unchanged; `requested_changed` says whether the facts'
/// requested value differs from the one `s` holds. Mirrors `assemble` line for line (the debug
/// build checks every refresh against a full assembly).
/// Takes the whole Config, as `NodeState::assemble` does.
fn refresh(
    s: &mut NodeState,
    facts: Option<&NodeFacts>,
    now_ms: u64,
    config: &Config,
    requested_changed: bool,
) {
    let ttl = config.facts.facts_ttl_ms;
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
    // The Worker's reading of the latency labels (whole µs, as kube-scheduler's `Lt` reads them).
    s.latency_us =
        fact_latency.or_else(|| aco_core::node_labels::latency_us(&s.labels, &config.node_keys));
    s.load = load.and_then(|ema: Ema| LoadOutlook::of(&ema, &config.load));
    s.stale_facts = stale;
    s.committed_share = aco_core::node_state::committed_share(
        s.allocatable.as_deref(),
        s.requested.as_deref(),
        &config.node_keys,
    );
}

impl Scheduler for NativeScheduler {
    fn name(&self) -> String {
        self.policy.name()
    }

    fn report(&mut self, world: &World, reports: &[NodeReport], now_ms: u64) -> Result<(), Error> {
        self.now_ms = self.now_ms.max(now_ms);
        self.ensure(world);
        let (config, nodes) = (&self.config, &mut self.nodes);
        self.pipeline.update(|facts, pools| {
            for (i, r) in reports.iter().enumerate() {
                let node = if reports.len() == world.nodes.len() {
                    i
                } else {
                    facts
                        .index_of(&r.name)
                        .ok_or_else(|| format!("report names an unknown node {:?}", r.name))?
                };
                let was = before(facts, node);
                facts.records[node]
                    .get_or_insert_with(NodeFacts::default)
                    .apply(r, now_ms, &config.load);
                exposed(pools, facts, node, was, config);
                nodes.observe(node, r.utilisation.iter().copied());
                // Wire reports carry no allocation to compare, so the requested value may differ.
                nodes.reported[node] = None;
                facts.forget_account(node);
                nodes.touch(node, true);
            }
            Ok(())
        })
    }

    fn report_batch(
        &mut self,
        world: &World,
        batch: &ReportBatch,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.now_ms = self.now_ms.max(now_ms);
        if self.nodes.reference {
            return self.report(world, &batch.to_wire(world), now_ms);
        }
        self.ensure(world);
        debug_assert!(
            batch.sample_ms.windows(2).all(|w| w[0] <= w[1]),
            "samples oldest first, as apply sorts them"
        );
        let (config, nodes) = (&self.config, &mut self.nodes);
        self.pipeline.update(|facts, pools| {
            for n in &world.nodes {
                let node = n.idx;
                let key = alloc_key(&batch.alloc[node]);
                let was = before(facts, node);
                let unchanged = !batch.first
                    && nodes.reported[node] == Some(key)
                    && facts.records[node]
                        .as_ref()
                        .is_some_and(|f| f.requested.is_some());
                if !unchanged {
                    // Identity, a new allocation or the first report: the wire path, exactly.
                    facts.records[node]
                        .get_or_insert_with(NodeFacts::default)
                        .apply(&batch.wire(n), now_ms, &config.load);
                    nodes.reported[node] = Some(key);
                    facts.forget_account(node);
                } else {
                    // `NodeFacts::apply` of the same report, minus re-parsing an unchanged
                    // `requested`.
                    let f = facts.records[node].as_mut().unwrap();
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
                    let mut shares = f.gpu_free_milli.take().map_or_else(Vec::new, |o| o.value);
                    f.gpu_free_milli = alloc.gpu_free_milli_into(&mut shares).then_some(Observed {
                        value: shares,
                        at_ms: at,
                    });
                    let mut load = f.load.take().unwrap_or(Observed {
                        value: Ema::new(config.load.ema_alpha),
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
                    if !shares_unchanged {
                        facts.forget_account(node);
                    }
                }
                exposed(pools, facts, node, was, config);
                nodes.observe(node, batch.samples(node));
                nodes.touch(node, !unchanged);
            }
        });
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
        self.now_ms = self.now_ms.max(now_ms);
        self.ensure(world);
        let settled = self.pipeline.settle(now_ms, &self.config);
        self.nodes.forget_assumed(self.pipeline.facts(), settled);
        let mut passed = Vec::with_capacity(candidates.len());
        let wanted = WantedResources::of(&pod.demand, &self.config.node_keys);
        for &c in candidates {
            let state = self.nodes.state(
                &self.pipeline.facts().records,
                self.predictor,
                &self.config,
                world,
                c,
                now_ms,
            );
            if check_node_for(&pod.demand, &wanted, state, &self.config.node_keys).is_ok() {
                passed.push(c);
            }
        }
        // kube-scheduler calls prioritize only with ≥ 2 feasible nodes, and binds the only one
        // otherwise: the extender's answer either way, which its pipeline assumes the pod on.
        self.scored = passed.len() >= 2;
        let chosen = match passed.len() {
            0 => None,
            1 => {
                if self.policy.is_extender() {
                    let name = [world.nodes[passed[0]].name.as_str()];
                    let changed = self
                        .pipeline
                        .filtered(&name, &pod.demand, now_ms, &self.config);
                    self.nodes.forget_assumed(self.pipeline.facts(), changed);
                }
                Some(passed[0])
            }
            _ => {
                // Filter judged the facts alone; prioritize scores with the assumed placements.
                self.assumed_states(world, &passed, now_ms);
                let nodes = &self.nodes;
                let states: Vec<&NodeState> = passed
                    .iter()
                    .map(|c| nodes.assumed.get(c).or(nodes.states[*c].as_ref()).unwrap())
                    .collect();
                let config = &self.config;
                let outlook = self.pipeline.outlook(now_ms, config);
                let mut changed = Vec::new();
                let scores: Vec<f64> = match &mut self.policy {
                    Decider::Baseline(p) => {
                        let ctx = ScoreCtx {
                            world,
                            config,
                            pod,
                            alloc,
                            now_ms,
                            outlook: &outlook,
                        };
                        p.score(&ctx, &passed, &states)
                    }
                    Decider::Extender(e) => {
                        let features = features(
                            &states,
                            &pod.demand,
                            &config.node_keys,
                            &config.spot,
                            &outlook,
                        );
                        let from = if e.colony {
                            ColonySource::Held(&pod.demand.tenant)
                        } else {
                            ColonySource::EtaAlone
                        };
                        let answered = self
                            .pipeline
                            .score(&features, &pod.demand, from, now_ms, config, &mut e.rng)
                            .ok_or("the pipeline holds the colonies it scores from")?;
                        changed = answered.assumed;
                        let scored = answered.answer;
                        if e.colony {
                            e.reports.decided(&pod.demand.tenant, scored.decision);
                        }
                        scored.scores.iter().map(|s| *s as f64).collect()
                    }
                };
                count_top_ties(&scores, &mut self.ties);
                let chosen = select_host(&passed, &scores, tie);
                self.nodes.forget_assumed(self.pipeline.facts(), changed);
                chosen
            }
        };
        Ok(chosen)
    }

    fn placed(
        &mut self,
        world: &World,
        _alloc: &[NodeAlloc],
        pod: &SimPod,
        node: usize,
        now_ms: u64,
    ) -> Result<(), Error> {
        // `scored` mirrors kube-scheduler: prioritize runs only with ≥ 2 feasible nodes, so a
        // pod with a single feasible node has no remembered decision, and its outcome teaches
        // nothing.
        self.now_ms = self.now_ms.max(now_ms);
        let scored = self.scored;
        if let Some((reports, colonies, config)) = self.colony_reports() {
            reports.placed(
                colonies,
                pod,
                &world.nodes[node].name,
                scored,
                now_ms,
                &config.cost,
            );
        }
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
        self.now_ms = self.now_ms.max(now_ms);
        if let Some((reports, colonies, config)) = self.colony_reports() {
            reports.outcome(
                colonies,
                pod,
                &world.nodes[node].name,
                outcome,
                now_ms,
                config,
            );
        }
        Ok(())
    }

    fn reclaimed(&mut self, world: &World, node: usize, _now_ms: u64) -> Result<(), Error> {
        self.ensure(world);
        // As `PUT /v1/nodes` with `reclaimed`: the pool counts it, the node's facts are forgotten
        // (the replacement instance reports afresh).
        let config = &self.config;
        self.pipeline.update(|facts, pools| {
            if let Some(f) = facts.records[node].take() {
                pools.reclaimed(&f.labels, &config.node_keys, &config.spot);
            }
            facts.forget_account(node);
        });
        self.nodes.reported[node] = None;
        self.nodes.states[node] = None;
        Ok(())
    }

    fn pheromones(&mut self, _world: &World) -> Result<TenantTrails, Error> {
        Ok(self.pheromones_snapshot())
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
