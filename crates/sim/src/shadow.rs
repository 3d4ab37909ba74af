//! `aco-sim replay --shadow <policy>`: shadow mode against the live Worker. A baseline policy
//! (first-fit, best-fit, …, run natively) places every pod, as another scheduler would; each
//! placement goes to the Worker the way the reporter sends it in shadow mode — the node's new
//! `requested` (`PUT /v1/nodes`, the reporter's pod-event push) and the bound pod
//! (`POST /v1/shadow`) — and the Worker says what the tenant's colony would have chosen. The same
//! counterfactual is computed here with the same core function (`aco_core::shadow`) over the same
//! facts folded the same way (`NodeFacts::apply`), so at the end the Worker's summary and this
//! native one must agree (`tests/shadow_replay.rs`).
//!
//! Shadow pods never deposit and the replay reports no outcomes, so every tenant's colony stays
//! at τ_initial with no outcome history: natively, `TenantColony::default()`.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use aco_core::api::nodes::NodeReport;
use aco_core::api::shadow::ShadowSummaryReply;
use aco_core::api::shadow::{ShadowBatch, ShadowReport};
use aco_core::colony::TenantColony;
use aco_core::config::Config;
use aco_core::facts::NodeFacts;
use aco_core::heuristic::ClusterOutlook;
use aco_core::names::NodeName;
use aco_core::shadow::{ShadowCluster, ShadowSummary};
use rand::rngs::StdRng;
use serde_json::json;

use crate::alloc::NodeAlloc;
use crate::cluster::{SimPod, World};
use crate::facts_report::quantity_text;
use crate::native::NativeScheduler;
use crate::replay::{placement_report, HttpScheduler};
use crate::scheduler::{Scheduler, TenantTrails};
use crate::trace::Error;

/// What the shadow requests cost, as the Worker reported it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShadowCost {
    pub requests: u64,
    /// Σ `x-aco-binding-ops` of the `POST /v1/shadow` replies.
    pub binding_ops: u64,
    pub max_binding_ops: u64,
    /// Σ wall time of the `POST /v1/shadow` round trips, seconds.
    pub wall_s: f64,
}

pub struct ShadowReplay {
    baseline: NativeScheduler,
    pub http: HttpScheduler,
    config: Config,
    /// The cluster's facts as the Worker's Facts object holds them (same reports, same fold).
    facts: HashMap<String, NodeFacts>,
    /// Per tenant, the simulator's own counterfactual summary.
    pub native: BTreeMap<String, ShadowSummary>,
    pub cost: ShadowCost,
    /// Pods with no verdict natively (node without facts, or nothing feasible).
    pub not_scored: u64,
    /// Pods already shadow-reported: a pod evicted and bound again (same UID) is a duplicate
    /// for the Worker, so the native counterfactual counts it once too.
    reported: std::collections::HashSet<aco_core::names::PodKey>,
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl ShadowReplay {
    /// `config` must be the Worker's (`cluster::worker_vars`, and the same `EMA_ALPHA`).
    pub fn new(baseline: NativeScheduler, http: HttpScheduler, config: Config) -> Self {
        Self {
            baseline,
            http,
            config,
            facts: HashMap::new(),
            native: BTreeMap::new(),
            cost: ShadowCost::default(),
            not_scored: 0,
            reported: Default::default(),
        }
    }

    fn fold(&mut self, reports: &[NodeReport], now_ms: u64) {
        for r in reports {
            self.facts
                .entry(r.name.to_string())
                .or_default()
                .apply(r, now_ms, &self.config.load);
        }
    }

    /// The Worker's summary of every tenant of the world (`GET /v1/tenants/{t}/shadow`).
    pub fn worker_summaries(
        &mut self,
        world: &World,
    ) -> Result<BTreeMap<String, ShadowSummaryReply>, Error> {
        let mut out = BTreeMap::new();
        for tenant in world.tenants() {
            let reply = self
                .http
                .get_admin(&format!("/v1/tenants/{tenant}/shadow"))?;
            out.insert(tenant.clone(), serde_json::from_value(reply)?);
        }
        Ok(out)
    }

    /// The native summaries added up over tenants.
    pub fn native_total(&self) -> ShadowSummary {
        let mut t = ShadowSummary::default();
        for s in self.native.values() {
            t.pods += s.pods;
            t.agreements += s.agreements;
            t.chosen_cost_per_hour += s.chosen_cost_per_hour;
            t.colony_cost_per_hour += s.colony_cost_per_hour;
            t.latency_critical += s.latency_critical;
            t.latency_critical_on_hot_chosen += s.latency_critical_on_hot_chosen;
            t.latency_critical_on_hot_colony += s.latency_critical_on_hot_colony;
            t.not_feasible += s.not_feasible;
        }
        t
    }
}

impl Scheduler for ShadowReplay {
    fn name(&self) -> String {
        format!("{} (shadow mode over HTTP)", self.baseline.name())
    }

    fn report(&mut self, world: &World, reports: &[NodeReport], now_ms: u64) -> Result<(), Error> {
        // The baseline decides on the sim's own clock; the Worker and the native counterfactual
        // see the same reports on the wall clock.
        self.baseline.report(world, reports, now_ms)?;
        let mapped = self.http.wall_clock(reports);
        self.http.put_facts(&mapped)?;
        self.fold(&mapped, wall_ms());
        Ok(())
    }

    fn reclaimed(&mut self, world: &World, node: usize, now_ms: u64) -> Result<(), Error> {
        self.baseline.reclaimed(world, node, now_ms)?;
        // The Worker forgets the node's facts; so does the native counterfactual.
        self.facts.remove(&world.nodes[node].name);
        self.http.put_reclaimed(&world.nodes[node].name)
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
        self.baseline
            .schedule(world, alloc, pod, candidates, now_ms, tie)
    }

    fn placed(
        &mut self,
        world: &World,
        alloc: &[NodeAlloc],
        pod: &SimPod,
        node: usize,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.baseline.placed(world, alloc, pod, node, now_ms)?;
        let name = &world.nodes[node].name;
        // The reporter's push on the pod event: the node's requested now counts the pod.
        let at = wall_ms();
        let report = NodeReport {
            requested: Some(quantity_text(&alloc[node].requested())),
            observed_at_ms: Some(at),
            ..NodeReport::named(NodeName::parse(name)?)
        };
        self.http.put_facts(std::slice::from_ref(&report))?;
        self.fold(std::slice::from_ref(&report), at);

        let mut bound = pod.json.clone();
        bound["spec"]["nodeName"] = json!(name);
        bound["spec"]["schedulerName"] = json!("default-scheduler");
        let body = ShadowBatch {
            placements: vec![ShadowReport::of(&placement_report(pod, name, None)?, bound)],
        };
        let started = Instant::now();
        let (_, ops) = self
            .http
            .post_admin("/v1/shadow", serde_json::to_string(&body)?)?;
        self.cost.wall_s += started.elapsed().as_secs_f64();
        self.cost.requests += 1;
        self.cost.binding_ops += ops;
        self.cost.max_binding_ops = self.cost.max_binding_ops.max(ops);

        // The same counterfactual, natively, on the same facts.
        if !self.reported.insert(pod.uid.clone()) {
            return Ok(());
        }
        let now = wall_ms();
        let outlook =
            ClusterOutlook::from_facts(self.facts.values(), Default::default(), now, &self.config);
        let cluster = ShadowCluster::new(&self.facts, &outlook, now, &self.config);
        let colony = TenantColony::default();
        match cluster.score(&pod.demand, name, &colony, &self.config) {
            Ok(v) => self.native.entry(pod.tenant.clone()).or_default().add(&v),
            Err(aco_core::shadow::NotScored::NotFeasible) => {
                self.native
                    .entry(pod.tenant.clone())
                    .or_default()
                    .not_feasible += 1
            }
            Err(aco_core::shadow::NotScored::UnknownNode) => self.not_scored += 1,
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
        self.baseline.outcome(world, pod, node, outcome, now_ms)
    }

    fn pheromones(&mut self, world: &World) -> Result<TenantTrails, Error> {
        self.baseline.pheromones(world)
    }

    fn tie_stats(&self) -> (usize, usize) {
        self.baseline.tie_stats()
    }
}
