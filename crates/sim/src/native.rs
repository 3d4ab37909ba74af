//! The extender pipeline in-process: facts folded by `NodeFacts::apply`, node states by
//! `NodeState::assemble`, filter by `check_node`, then the policy's scores.

use std::collections::HashMap;

use aco_core::config::Config;
use aco_core::facts::NodeFacts;
use aco_core::filter::check_node;
use aco_core::node_state::{LoadOutlook, NodeState};
use aco_core::predict::{spike_probability, Predictor};
use rand::rngs::StdRng;

use crate::alloc::NodeAlloc;
use crate::cluster::{SimPod, World};
use crate::facts_report::FactReport;
use crate::policy::{select_host, Policy, ScoreCtx};
use crate::predictor::PredictorKind;
use crate::scheduler::{count_top_ties, Scheduler, TenantTrails};
use crate::trace::Error;

/// The extender pipeline in-process: facts folded by `NodeFacts::apply`, node states by
/// `NodeState::assemble`, filter by `check_node`, then the policy's scores.
pub struct NativeScheduler {
    pub policy: Box<dyn Policy>,
    pub config: Config,
    pub predictor: PredictorKind,
    facts: HashMap<String, NodeFacts>,
    predictors: Vec<Option<Box<dyn Predictor>>>,
    last_sample_ms: Vec<Option<u64>>,
    cache: Vec<Option<NodeState>>,
    scored: bool,
    ties: (usize, usize),
}

impl NativeScheduler {
    pub fn new(policy: Box<dyn Policy>, config: Config, predictor: PredictorKind) -> Self {
        let mut config = config;
        if let PredictorKind::Ema(a) = predictor {
            config.ema_alpha = a;
        }
        Self { policy, config, predictor, facts: HashMap::new(), predictors: Vec::new(), last_sample_ms: Vec::new(), cache: Vec::new(), scored: false, ties: (0, 0) }
    }

    /// Per-tenant (node, τ) best first (the colony policy's trails).
    pub fn pheromones_snapshot(&self) -> TenantTrails {
        self.policy.pheromones(&self.config)
    }

    /// The node state of `node` (cached until its next fact report). Borrows only the fields it
    /// needs, so the caller can keep `config` borrowed (no clone per candidate).
    #[allow(clippy::too_many_arguments)]
    fn state<'s>(
        cache: &'s mut [Option<NodeState>],
        facts: &HashMap<String, NodeFacts>,
        predictors: &[Option<Box<dyn Predictor>>],
        kind: PredictorKind,
        config: &Config,
        world: &World,
        node: usize,
        now_ms: u64,
    ) -> &'s NodeState {
        cache[node].get_or_insert_with(|| {
            let n = &world.nodes[node];
            let mut s = NodeState::assemble(&n.name, Some(&n.view), facts.get(&n.name), now_ms, config, &n.name).expect("derived nodes parse");
            if let Some(p) = &predictors[node] {
                s.load = p.forecast().map(|u| LoadOutlook {
                    predicted_utilisation: u,
                    spike_probability: spike_probability(u, p.volatility(), config.spike_threshold, config.spike_band),
                });
            } else if !matches!(kind, PredictorKind::Ema(_)) {
                s.load = None;
            }
            s
        })
    }
}

impl Scheduler for NativeScheduler {
    fn name(&self) -> String {
        self.policy.name()
    }

    fn report(&mut self, world: &World, reports: &[FactReport], now_ms: u64) -> Result<(), Error> {
        if self.cache.len() != world.nodes.len() {
            self.cache = vec![None; world.nodes.len()];
            self.predictors = world.nodes.iter().map(|_| self.predictor.make()).collect();
            self.last_sample_ms = vec![None; world.nodes.len()];
        }
        let index: HashMap<&str, usize> = if reports.len() == world.nodes.len() {
            HashMap::new()
        } else {
            world.nodes.iter().map(|n| (n.name.as_str(), n.idx)).collect()
        };
        for (i, r) in reports.iter().enumerate() {
            let node = if index.is_empty() { i } else { index[r.name.as_str()] };
            self.facts.entry(r.name.clone()).or_default().apply(&r.to_core(), now_ms, &self.config);
            if let Some(p) = &mut self.predictors[node] {
                for s in &r.utilisation {
                    if self.last_sample_ms[node].is_none_or(|last| s.at_ms > last) {
                        p.observe(s.value);
                        self.last_sample_ms[node] = Some(s.at_ms);
                    }
                }
            }
            self.cache[node] = None;
        }
        Ok(())
    }

    fn schedule(&mut self, world: &World, alloc: &[NodeAlloc], pod: &SimPod, candidates: &[usize], now_ms: u64, tie: &mut StdRng) -> Result<Option<usize>, Error> {
        let mut passed = Vec::with_capacity(candidates.len());
        for &c in candidates {
            let state = Self::state(&mut self.cache, &self.facts, &self.predictors, self.predictor, &self.config, world, c, now_ms);
            if check_node(&pod.demand, state, &self.config).is_ok() {
                passed.push(c);
            }
        }
        self.scored = passed.len() >= 2;
        match passed.len() {
            0 => Ok(None),
            1 => Ok(Some(passed[0])),
            _ => {
                let states: Vec<&NodeState> = passed.iter().map(|c| self.cache[*c].as_ref().unwrap()).collect();
                let ctx = ScoreCtx { world, config: &self.config, pod, alloc, now_ms };
                let scores = self.policy.score(&ctx, &passed, &states);
                count_top_ties(&scores, &mut self.ties);
                Ok(select_host(&passed, &scores, tie))
            }
        }
    }

    fn placed(&mut self, world: &World, alloc: &[NodeAlloc], pod: &SimPod, node: usize, now_ms: u64) -> Result<(), Error> {
        // `scored` mirrors kube-scheduler: prioritize runs only with ≥ 2 feasible nodes, so a
        // pod with a single feasible node has no remembered decision and deposits nothing.
        let ctx = ScoreCtx { world, config: &self.config, pod, alloc, now_ms };
        self.policy.placed(&ctx, node, self.scored);
        Ok(())
    }

    fn pheromones(&mut self, _world: &World) -> Result<TenantTrails, Error> {
        Ok(self.policy.pheromones(&self.config))
    }

    fn tie_stats(&self) -> (usize, usize) {
        self.ties
    }
}
