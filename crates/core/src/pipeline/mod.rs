//! One cluster's extender pipeline, from "facts arrived" to "answer + decision", held by
//! whoever answers kube-scheduler: the Worker's isolate (one per cluster, its facts the copy of
//! the cluster's Facts object) and the simulator's native scheduler (its facts what its reporter
//! sent). Both drive this type, so the simulator's figures are the Worker's answers:
//!
//! - the **facts view** ([`FactsView`]): every node's record, read in place by the verbs;
//! - the **spot pools** the facts' holder keeps beside them;
//! - the **assumed placements** (`crate::assumed`): the pods this pipeline answered that the
//!   facts do not show yet, brought up to every new version of the facts;
//! - the **cluster outlook** η reads (GPU scarcity, the price of a GPU-hour, spot pools),
//!   computed once per version of the facts, when first needed;
//! - the **colonies** it scores from ([`ColonyCopies`]: each tenant's τ table and per-node
//!   outcome history — reliability and the run-time slowdowns η's performance term reads);
//! - the **answer**: prioritize's one node alone at the top (`colony::single_out_top`) or the
//!   filter's only node, where kube-scheduler binds the pod, assumed there at once.
//!
//! What stays outside: where the facts come from and how fresh the holder keeps them (the
//! Worker's Facts object requests, the simulator's reports), where decisions and reports go (the
//! Colony object), and the simulator's fast paths, which must answer exactly as this does
//! (`crates/sim/src/native.rs`).

mod cluster_facts;
mod colonies;
mod decision_outbox;
mod filter_memory;

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::rc::Rc;

use rand::Rng;

pub use cluster_facts::ClusterFacts;
pub use colonies::ColonyCopies;
pub use decision_outbox::DecisionOutbox;
pub use filter_memory::FilterMemory;

use crate::assumed::{AssumedPlacements, WithAssumed};
use crate::colony::{Prioritized, Scored, TenantColony};
use crate::config::Config;
use crate::demand::PodDemand;
use crate::extender::{self, BadRequest, FilterOutcome, ScoringInput, Streamed};
use crate::facts::{FactsLookup, NodeFacts};
use crate::heuristic::spot_risk::{PoolHistory, SpotPools};
use crate::heuristic::{ClusterOutlook, NodeFeatures};

/// A cluster's node facts as a pipeline reads them: each record by name, every record, and the
/// cluster outlook they give (a holder may keep part of that sum between versions, as the
/// simulator does).
pub trait FactsView: FactsLookup {
    fn records(&self) -> impl Iterator<Item = &NodeFacts>;

    /// `ClusterOutlook::from_facts` over every record, with `pools`.
    fn outlook(
        &self,
        pools: BTreeMap<String, PoolHistory>,
        now_ms: u64,
        config: &Config,
    ) -> ClusterOutlook {
        ClusterOutlook::from_facts(self.records(), pools, now_ms, config)
    }
}

impl<S: BuildHasher> FactsView for HashMap<String, NodeFacts, S> {
    fn records(&self) -> impl Iterator<Item = &NodeFacts> {
        self.values()
    }
}

/// Which colony scores a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColonySource<'t> {
    /// The tenant's copy, if the colony confirmed it within `max_age_ms`.
    Fresh { tenant: &'t str, max_age_ms: u64 },
    /// The tenant's copy whatever its age (the colony cannot be reached).
    Any(&'t str),
    /// The tenant's colony held here, created empty on first use (the simulator plays the
    /// Colony object itself).
    Held(&'t str),
    /// No colony: η alone (τ_initial everywhere, no outcome history), nothing to remember.
    EtaAlone,
}

/// An answer, and the nodes whose assumed record it changed (for a caller that keeps state
/// derived from those records).
#[derive(Debug, Clone, PartialEq)]
pub struct Answered<T> {
    pub answer: T,
    pub assumed: Vec<String>,
}

/// One cluster's extender pipeline (see the module documentation).
/// Its methods take the whole Config: filtering and scoring with η and τ read most groups.
#[derive(Debug)]
pub struct ExtenderPipeline<F> {
    facts: Rc<F>,
    /// Bumped by every change of the facts or the pools; the assumed placements and the outlook
    /// are brought up to it.
    version: u64,
    pools: SpotPools,
    assumed: AssumedPlacements,
    /// The facts version `assumed` was last brought up to.
    assumed_version: u64,
    outlook: Option<(u64, Rc<ClusterOutlook>)>,
    colonies: ColonyCopies,
}

impl<F: Default> Default for ExtenderPipeline<F> {
    fn default() -> Self {
        Self::new(F::default())
    }
}

/// The index of the one node alone at the top of `scores`, if there is one (every score 0, or a
/// shared top, names none: kube-scheduler's plugins then decide).
fn top_of(scores: impl Iterator<Item = i64> + Clone) -> Option<usize> {
    let max = scores.clone().max()?;
    let mut top = scores.enumerate().filter(|(_, s)| *s == max);
    match (top.next(), top.next()) {
        (Some((i, _)), None) if max > 0 => Some(i),
        _ => None,
    }
}

impl<F> ExtenderPipeline<F> {
    pub fn new(facts: F) -> Self {
        Self {
            facts: Rc::new(facts),
            version: 0,
            pools: SpotPools::default(),
            assumed: AssumedPlacements::new(),
            assumed_version: 0,
            outlook: None,
            colonies: ColonyCopies::default(),
        }
    }

    /// The facts as of now, shared: a holder that answers concurrently (the Worker) hands them
    /// to a request, which keeps reading this version while a newer one is built beside it.
    pub fn facts(&self) -> &Rc<F> {
        &self.facts
    }

    pub fn pools(&self) -> &SpotPools {
        &self.pools
    }

    /// The placements assumed ahead of the facts.
    pub fn assumed(&self) -> &AssumedPlacements {
        &self.assumed
    }

    pub fn colonies(&mut self) -> &mut ColonyCopies {
        &mut self.colonies
    }

    /// The colonies, read only.
    pub fn colonies_ref(&self) -> &ColonyCopies {
        &self.colonies
    }

    /// Scores `features` for `demand` with the colony `from` names (`None` when it has no copy
    /// to score from) and assumes the pod on the one node alone at the top of the answer.
    #[allow(clippy::too_many_arguments)]
    pub fn score(
        &mut self,
        features: &[NodeFeatures],
        demand: &PodDemand,
        from: ColonySource,
        now_ms: u64,
        config: &Config,
        rng: &mut impl Rng,
    ) -> Option<Answered<Scored>>
    where
        F: FactsView + Clone,
    {
        let key = (demand.workload, demand.key.as_str());
        self.answer(
            features,
            demand,
            from,
            now_ms,
            config,
            |c| c.score(features, key.0, key.1, now_ms, config, rng),
            |s| top_of(s.scores.iter().copied()),
        )
    }

    /// [`ExtenderPipeline::score`] with the answer's priorities naming the candidates (the
    /// Worker's reply).
    #[allow(clippy::too_many_arguments)]
    pub fn prioritize<'a>(
        &mut self,
        features: &'a [NodeFeatures],
        demand: &PodDemand,
        from: ColonySource,
        now_ms: u64,
        config: &Config,
        rng: &mut impl Rng,
    ) -> Option<Prioritized<'a>>
    where
        F: FactsView + Clone,
    {
        let key = (demand.workload, demand.key.as_str());
        let answered = self.answer(
            features,
            demand,
            from,
            now_ms,
            config,
            |c| c.prioritize(features, key.0, key.1, now_ms, config, rng),
            |p| top_of(p.priorities.iter().map(|h| h.score)),
        )?;
        Some(answered.answer)
    }

    /// `run` on the colony `from` names, then the pod assumed on the answer's top (`top`).
    #[allow(clippy::too_many_arguments)]
    fn answer<T>(
        &mut self,
        features: &[NodeFeatures],
        demand: &PodDemand,
        from: ColonySource,
        now_ms: u64,
        config: &Config,
        run: impl FnOnce(&mut TenantColony) -> T,
        top: impl FnOnce(&T) -> Option<usize>,
    ) -> Option<Answered<T>>
    where
        F: FactsView + Clone,
    {
        let answer = match from {
            ColonySource::Fresh { tenant, max_age_ms } => {
                self.colonies.with_fresh(tenant, now_ms, max_age_ms, run)?.1
            }
            ColonySource::Any(tenant) => self.colonies.with_any(tenant, run)?,
            ColonySource::Held(tenant) => run(self.colonies.colony_mut(tenant, now_ms)),
            ColonySource::EtaAlone => run(&mut TenantColony::default()),
        };
        let assumed = match top(&answer) {
            Some(i) => self.assume(&features[i].node, demand, now_ms, config),
            None => Vec::new(),
        };
        Some(Answered { answer, assumed })
    }
}

impl<F: FactsView + Clone> ExtenderPipeline<F> {
    /// Changes the facts and the spot pools' history kept beside them: a new version (a holder
    /// that shares the facts gets a copy to change, which shares what it does not change). The
    /// assumed placements and the outlook follow when next read.
    pub fn update<T>(&mut self, change: impl FnOnce(&mut F, &mut SpotPools) -> T) -> T {
        self.version += 1;
        change(Rc::make_mut(&mut self.facts), &mut self.pools)
    }

    /// What η reads of the whole cluster, computed once per version of the facts (their
    /// measurements' freshness judged when first asked for).
    pub fn outlook(&mut self, now_ms: u64, config: &Config) -> Rc<ClusterOutlook> {
        match &self.outlook {
            Some((v, o)) if *v == self.version => o.clone(),
            _ => {
                let o = Rc::new(self.facts.outlook(self.pools.pools.clone(), now_ms, config));
                self.outlook = Some((self.version, o.clone()));
                o
            }
        }
    }

    /// Brings the assumed placements up to the facts: after a new version of them, or when an
    /// assumption expires. Returns the nodes whose assumed record changed.
    pub fn settle(&mut self, now_ms: u64, config: &Config) -> Vec<String> {
        if self.assumed_version == self.version && !self.assumed.expires_by(now_ms) {
            return Vec::new();
        }
        self.assumed_version = self.version;
        self.assumed.refresh(&*self.facts, now_ms, config)
    }

    /// The facts as prioritize reads them: settled first, each assumed node's record in place
    /// of its facts'. (Filter reads the facts alone: an assumption is a guess, and a guess must
    /// never reject a node.)
    pub fn with_assumed(&mut self, now_ms: u64, config: &Config) -> WithAssumed<'_, F> {
        self.settle(now_ms, config);
        self.assumed.over(&*self.facts)
    }

    /// kube-scheduler binds `demand` on `node` (the filter's only node, prioritize's top): the
    /// pod counts there until the facts show it. Returns the nodes whose assumed record changed.
    pub fn assume(
        &mut self,
        node: &str,
        demand: &PodDemand,
        now_ms: u64,
        config: &Config,
    ) -> Vec<String> {
        let mut changed = self.settle(now_ms, config);
        let moved_from = self
            .assumed
            .assume(node, demand, &*self.facts, now_ms, config);
        changed.push(node.to_string());
        changed.extend(moved_from);
        changed
    }

    /// The filter's answer: `demand` is bound on the only node that passed, if one alone did.
    pub fn filtered<S: AsRef<str>>(
        &mut self,
        passed: &[S],
        demand: &PodDemand,
        now_ms: u64,
        config: &Config,
    ) -> Vec<String> {
        match passed {
            [only] => self.assume(only.as_ref(), demand, now_ms, config),
            _ => Vec::new(),
        }
    }

    /// The `filter` verb over a request body (each node judged as it is read, on the facts
    /// alone), its answer assumed ([`ExtenderPipeline::filtered`]).
    pub fn filter_body<'a>(
        &mut self,
        body: &'a str,
        now_ms: u64,
        config: &Config,
    ) -> Result<Streamed<FilterOutcome<'a>>, BadRequest> {
        let streamed = extender::filter_body(body, &*self.facts, now_ms, config)?;
        let passed = streamed
            .output
            .result
            .node_names
            .as_deref()
            .unwrap_or_default();
        if passed.len() == 1 {
            if let Ok(pod) = PodDemand::from_pod(&streamed.pod, &config.pod_keys, &config.node_keys)
            {
                self.filtered(passed, &pod, now_ms, config);
            }
        }
        Ok(streamed)
    }

    /// The features of a prioritize body's candidates (read node by node, through the assumed
    /// placements, in the cluster's outlook), for [`ExtenderPipeline::prioritize`].
    pub fn scoring_input_body<'a>(
        &mut self,
        body: &'a str,
        now_ms: u64,
        config: &Config,
    ) -> Result<Streamed<ScoringInput<'a>>, BadRequest> {
        let outlook = self.outlook(now_ms, config);
        let facts = self.with_assumed(now_ms, config);
        extender::scoring_input_body(body, &facts, &outlook, now_ms, config)
    }
}

#[cfg(test)]
mod tests;
