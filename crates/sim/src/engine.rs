//! The discrete-event simulation. Events: pod arrivals (trace creation time), departures
//! (deletion time), fact reports (before a decision when the last report is `report_interval_s`
//! old) and monitor ticks (every load bucket while latency-sensitive pods run). Time is event
//! driven, so idle stretches of the trace cost nothing ("time compression").
//!
//! A decision: the simulated kube-scheduler keeps the exact allocation of every node and first
//! applies its own fit (CPU, memory, pods, whole GPUs, and GPU shares per physical GPU); the
//! survivors go to a [`Scheduler`] — the native extender pipeline over a [`Policy`], or the
//! live Worker over HTTP (`crate::replay`) — which filters and scores them and names a node.
//! Pods that fit nowhere stay unplaced (no retry, no preemption).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

use crate::cluster::{SimPod, World};
use crate::faults::NodeFaults;
use crate::load::{node_utilisation, LoadModel, LoadShare};
pub use crate::performance::PerformanceModel;
use crate::rng;
use crate::trace::Error;
use aco_core::colony::{FailureCause, ObservedOutcome, Outcome};

// The engine's collaborators, re-exported where callers have always found them.
pub use crate::alloc::NodeAlloc;
pub use crate::facts_report::ReportBatch;
pub use crate::scheduler::{count_top_ties, Scheduler, TenantTrails};

/// Knobs of the simulation (not of the world or the load).
#[derive(Debug, Clone, PartialEq)]
pub struct SimParams {
    pub seed: u64,
    pub report_interval_s: u64,
    pub samples_per_report: u64,
    /// An LS pod is compliant while its node's utilisation stays below this.
    pub sla_threshold: f64,
    /// A node "spikes" when its utilisation reaches this (the core's `SPIKE_THRESHOLD`).
    pub spike_threshold: f64,
    pub safe_horizon_s: u64,
    /// Only the first `max_pods` arrivals (None: all).
    pub max_pods: Option<usize>,
    /// Pheromone snapshots per run (colony only).
    pub pheromone_samples: usize,
    /// What the simulated reporter says about a pod's fate (`Scheduler::outcome`).
    pub outcomes: OutcomeReports,
    /// Spot nodes are reclaimed (`crate::spot`), evicting their pods.
    pub spot_reclamation: bool,
    /// Reclamations `(time s, node index)` to use instead of the seeded model's (what-if runs
    /// and tests); any node can be named. Sorted by the engine.
    pub reclamations_override: Option<Vec<(u64, usize)>>,
    /// Node performance variation (`crate::performance`): run times stretch by the node's
    /// slowdown and outcomes carry what the reporter observes of it.
    pub performance: PerformanceModel,
    /// Hidden node faults (`crate::faults`): pods on a faulty node fail and arrive again.
    pub node_faults: NodeFaults,
    /// The simulated reporter sends node utilisation samples with its facts; off, only what a
    /// reporter without a metrics source sends (allocation, per-GPU shares): `--no-node-metrics`.
    pub utilisation_facts: bool,
}

/// Which outcomes the simulated reporter sends, once per pod: an LS pod's QoS violation as soon
/// as it happens (quality 0), else the pod's departure (quality 1; 0 for an LS pod whose node
/// missed its latency target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutcomeReports {
    /// Placements only: the trail learns nothing (only outcomes deposit).
    None,
    /// The quality alone (as the in-cluster reporter's succeeded/failed labels).
    Qos,
    /// The quality and the placement's observed cost (its share of the node's bill, $/h), as a
    /// reporter with billing data would send it; the trail learns the quality (the facts price
    /// the bill), so this teaches what `Qos` does.
    #[default]
    QosCost,
    /// What the in-cluster reporter can say of a pod that ran to its end on a cluster without
    /// a QoS monitor: success (quality 1) at its departure, never a QoS violation (the load
    /// breaking an LS pod's QoS is not in any pod status).
    Completion,
}

impl std::str::FromStr for OutcomeReports {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Self::None),
            "qos" => Ok(Self::Qos),
            "qos-cost" => Ok(Self::QosCost),
            "completion" => Ok(Self::Completion),
            _ => Err(format!(
                "unknown outcome reports {s:?}: expected none, qos, qos-cost or completion"
            )),
        }
    }
}

impl Default for SimParams {
    fn default() -> Self {
        Self {
            seed: 1,
            report_interval_s: 60,
            samples_per_report: 4,
            sla_threshold: 0.8,
            spike_threshold: 0.9,
            safe_horizon_s: 600,
            max_pods: None,
            pheromone_samples: 60,
            outcomes: OutcomeReports::default(),
            spot_reclamation: true,
            reclamations_override: None,
            performance: PerformanceModel::None,
            node_faults: NodeFaults::default(),
            utilisation_facts: true,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    pub policy: String,
    pub pods: usize,
    pub placed: usize,
    pub unplaced: usize,
    pub gpu_requested: f64,
    pub gpu_unallocated: f64,
    /// $ with a node billed while ≥ 1 pod runs on it.
    pub cost_busy_usd: f64,
    /// $ with every node on for the whole span (the same for every policy).
    pub cost_all_on_usd: f64,
    pub nodes_used: usize,
    pub ls_placed: usize,
    pub ls_compliant: usize,
    pub ls_compliance: f64,
    pub ls_latency_target_misses: usize,
    /// LS pods whose first violation happened while they were alone on their node (their own
    /// load, not interference).
    pub ls_violated_alone: usize,
    pub ls_safe: usize,
    pub safe_routing_rate: f64,
    pub decisions: usize,
    /// Outcomes the simulated reporter sent (`SimParams::outcomes`).
    #[serde(default)]
    pub outcomes_reported: usize,
    /// Pods a hidden node fault failed (`crate::faults`; evicted and placed again).
    #[serde(default)]
    pub node_faults_hit: usize,
    /// Spot reclamations that hit a busy node, the pods they evicted, the evicted pods placed
    /// again and those that found no node (or came after the last arrival).
    #[serde(default)]
    pub spot_reclamations_hit: usize,
    #[serde(default)]
    pub evicted_pods: usize,
    #[serde(default)]
    pub rescheduled: usize,
    #[serde(default)]
    pub evicted_unplaced: usize,
    /// Decisions whose best score was shared by ≥ 2 nodes (resolved by the random tie-break).
    pub decisions_with_top_ties: usize,
    /// Mean number of nodes sharing the best score in those decisions.
    pub mean_top_tie_size: f64,
    pub wall_s: f64,
    pub decisions_per_s: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RunResult {
    pub metrics: Metrics,
    /// Per placement attempt in order: `(pod name, node name or None)` — every pod once at its
    /// arrival, and again each time it is placed after an eviction.
    pub placements: Vec<(String, Option<String>)>,
    /// (hours since start, cumulative $ busy-cost).
    pub cost_timeline: Vec<(f64, f64)>,
    /// (hours since start, cumulative LS pods that saw a violation).
    pub violation_timeline: Vec<(f64, usize)>,
    /// (hours, tenant, node, τ).
    pub pheromone_timeline: Vec<(f64, String, String, f64)>,
    /// LS pods that saw a violation: (pod, node, alone on the node at the first violation).
    pub ls_violations: Vec<(String, String, bool)>,
}

struct LsWatch {
    node: usize,
    landed_s: u64,
    violated: bool,
    alone: bool,
    unsafe_: bool,
}

struct Sim<'a> {
    world: &'a World,
    load: &'a LoadModel,
    params: &'a SimParams,
    alloc: Vec<NodeAlloc>,
    shares: Vec<Vec<LoadShare>>,
    /// Per node, [`Sim::util_bound`] of its `shares`, kept until they change (the monitor asks
    /// for it for every node hosting an LS pod at every tick).
    util_bounds: Vec<Option<f64>>,
    slots: HashMap<usize, (usize, Vec<(usize, u32)>)>,
    ls: BTreeMap<usize, LsWatch>,
    ls_nodes: BTreeMap<usize, usize>,
    next_tick: u64,
    busy_since: Vec<Option<u64>>,
    closed_cost: f64,
    open_rate: f64,
    open_offset: f64,
    used: BTreeSet<usize>,
    violations: usize,
    violated_alone: usize,
    violation_timeline: Vec<(f64, usize)>,
    start_s: u64,
    /// Per node: (∫ price / pods on it, in $, up to the time) — each pod's share of the bill.
    bill: Vec<(f64, u64)>,
    /// Per bound pod: (its node's `bill` when it landed, landing time).
    pod_bill: HashMap<usize, (f64, u64)>,
    /// Outcomes found by the monitor or a departure, sent before the next decision.
    outcomes_due: Vec<DueOutcome>,
    /// Pods whose outcome was already sent (once per pod).
    reported: BTreeSet<usize>,
    /// Per pod whose run time its node stretched: the slowdown (`crate::performance`).
    stretched: HashMap<usize, f64>,
}

/// One pod's outcome, owed to the scheduler.
struct DueOutcome {
    pod: usize,
    node: usize,
    quality: f64,
    cost_per_hour: f64,
    /// The run-time slowdown the reporter observed (pods whose work the node stretched).
    slowdown: Option<f64>,
    /// Why the pod failed, as the reporter would tell it (`None`: it did not, or the node).
    cause: Option<FailureCause>,
    at_s: u64,
}

impl Sim<'_> {
    /// Brings the node's per-pod bill share up to `t` (call before its pod count changes).
    fn settle_bill(&mut self, node: usize, t: u64) {
        let pods = self.alloc[node].pods.len();
        let (acc, since) = &mut self.bill[node];
        if pods > 0 && t > *since {
            *acc += self.world.nodes[node].price / pods as f64 * (t - *since) as f64 / 3600.0;
        }
        *since = t;
    }

    /// Queues `pod`'s outcome on `node` at `t` (once per pod; nothing when outcomes are off).
    fn owe_outcome(
        &mut self,
        pod: usize,
        node: usize,
        quality: f64,
        cause: Option<FailureCause>,
        t: u64,
    ) {
        let unseen =
            self.params.outcomes == OutcomeReports::Completion && cause == Some(FailureCause::Load);
        if self.params.outcomes == OutcomeReports::None || unseen || !self.reported.insert(pod) {
            return;
        }
        self.settle_bill(node, t);
        let (acc0, landed) = self
            .pod_bill
            .get(&pod)
            .copied()
            .unwrap_or((self.bill[node].0, t));
        let hours = (t - landed) as f64 / 3600.0;
        let cost_per_hour = if hours > 0.0 {
            (self.bill[node].0 - acc0) / hours
        } else {
            self.world.nodes[node].price / self.alloc[node].pods.len().max(1) as f64
        };
        let slowdown = self.stretched.get(&pod).map(|s| {
            PerformanceModel::observed(*s, self.params.seed, &self.world.pods[pod].trace.name)
        });
        self.outcomes_due.push(DueOutcome {
            pod,
            node,
            quality,
            cost_per_hour,
            // A run cut short (an eviction) says nothing about the node's speed.
            slowdown: slowdown.filter(|_| quality > 0.0),
            cause,
            at_s: t,
        });
    }

    fn util(&self, node: usize, t: u64) -> f64 {
        let n = &self.world.nodes[node];
        node_utilisation(
            self.load,
            &self.shares[node],
            n.cpu_milli as f64,
            n.gpus as f64 * 1000.0,
            t,
        )
    }

    /// An upper bound of [`Sim::util`] at any time (with a margin for rounding).
    fn util_bound(&self, node: usize) -> f64 {
        let n = &self.world.nodes[node];
        let (mut cpu, mut gpu) = (0.0, 0.0);
        for p in &self.shares[node] {
            let u = self.load.utilisation_bound(&p.load);
            cpu += p.cpu_milli * u;
            gpu += p.gpu_milli * u;
        }
        let c = if n.cpu_milli > 0 {
            cpu / n.cpu_milli as f64
        } else {
            0.0
        };
        let g = if n.gpus > 0 {
            gpu / (n.gpus as f64 * 1000.0)
        } else {
            0.0
        };
        c.max(g) * (1.0 + 1e-9) + 1e-12
    }

    /// [`Sim::util_bound`], computed once per change of the node's pods.
    fn kept_util_bound(&mut self, node: usize) -> f64 {
        if let Some(bound) = self.util_bounds[node] {
            return bound;
        }
        let bound = self.util_bound(node);
        self.util_bounds[node] = Some(bound);
        bound
    }

    fn cost_at(&self, t: u64) -> f64 {
        self.closed_cost + (self.open_rate * t as f64 - self.open_offset) / 3600.0
    }

    fn hours(&self, t: u64) -> f64 {
        (t - self.start_s) as f64 / 3600.0
    }

    fn tick(&mut self, t: u64) {
        let nodes: Vec<usize> = self.ls_nodes.keys().copied().collect();
        let (safe_h, floor) = (
            self.params.safe_horizon_s,
            self.params.sla_threshold.min(self.params.spike_threshold),
        );
        let mut failed = Vec::new();
        for node in nodes {
            // Exact shortcuts (for speed): a node whose utilisation cannot reach either
            // threshold (upper bound of the load model) or whose LS pods can no longer change
            // (all violated and past their safe horizon or already unsafe) would be skipped
            // below anyway. The bound first: it is kept between ticks.
            if self.kept_util_bound(node) < floor {
                continue;
            }
            let live = self.alloc[node].pods.iter().any(|p| {
                self.ls
                    .get(p)
                    .is_some_and(|w| !w.violated || (!w.unsafe_ && t <= w.landed_s + safe_h))
            });
            if !live {
                continue;
            }
            let u = self.util(node, t);
            if u < self.params.sla_threshold && u < self.params.spike_threshold {
                continue;
            }
            let alone = self.alloc[node].pods.len() == 1;
            for &p in &self.alloc[node].pods {
                if let Some(w) = self.ls.get_mut(&p) {
                    if u >= self.params.sla_threshold && !w.violated {
                        failed.push((p, node));
                        w.violated = true;
                        w.alone = alone;
                        self.violations += 1;
                        self.violated_alone += alone as usize;
                        self.violation_timeline
                            .push(((t - self.start_s) as f64 / 3600.0, self.violations));
                    }
                    if u >= self.params.spike_threshold
                        && t <= w.landed_s + self.params.safe_horizon_s
                    {
                        w.unsafe_ = true;
                    }
                }
            }
        }
        for (pod, node) in failed {
            // The node's load broke the pod's QoS: what η's breach term prices.
            self.owe_outcome(pod, node, 0.0, Some(FailureCause::Load), t);
        }
    }

    /// Runs monitor ticks up to and including `t`.
    fn advance(&mut self, t: u64) {
        let b = self.load.bucket_s.max(1);
        while self.next_tick <= t {
            if self.ls_nodes.is_empty() {
                self.next_tick = (t / b + 1) * b;
                break;
            }
            self.tick(self.next_tick);
            self.next_tick += b;
        }
    }

    fn bind(&mut self, pod: &SimPod, node: usize, t: u64) {
        self.settle_bill(node, t);
        self.pod_bill.insert(pod.idx, (self.bill[node].0, t));
        let slots = self.alloc[node].place(pod);
        let gpu_milli = slots.iter().map(|(_, m)| *m as f64).sum();
        let pod_key = rng::key(&pod.trace.name);
        self.shares[node].push(LoadShare {
            pod_key,
            load: self.load.pod(pod_key, pod.ls),
            cpu_milli: pod.trace.cpu_milli as f64,
            gpu_milli,
        });
        self.util_bounds[node] = None;
        self.slots.insert(pod.idx, (node, slots));
        if self.alloc[node].pods.len() == 1 {
            let price = self.world.nodes[node].price;
            self.busy_since[node] = Some(t);
            self.open_rate += price;
            self.open_offset += price * t as f64;
        }
        self.used.insert(node);
        if pod.ls {
            // An evicted LS pod landing again keeps its record (a violation stays a violation).
            let w = self.ls.entry(pod.idx).or_insert(LsWatch {
                node,
                landed_s: t,
                violated: false,
                alone: false,
                unsafe_: false,
            });
            w.node = node;
            w.landed_s = t;
            *self.ls_nodes.entry(node).or_default() += 1;
            let b = self.load.bucket_s.max(1);
            self.next_tick = self.next_tick.min(t.div_ceil(b) * b);
        }
    }

    /// A spot reclamation of `node` at `t`: every pod on it is evicted — an LS pod has broken its
    /// QoS (counted as a violation), and every evicted pod's outcome is a failure. Returns the
    /// evicted pods (the engine lets them arrive again).
    fn reclaim(
        &mut self,
        node: usize,
        t: u64,
        by_idx: &HashMap<usize, &SimPod>,
        m: &mut Metrics,
    ) -> Vec<usize> {
        let evicted = self.alloc[node].pods.clone();
        m.spot_reclamations_hit += (!evicted.is_empty()) as usize;
        m.evicted_pods += evicted.len();
        let alone = evicted.len() == 1;
        for &p in &evicted {
            if let Some(w) = self.ls.get_mut(&p) {
                if !w.violated {
                    w.violated = true;
                    w.alone = alone;
                    self.violations += 1;
                    self.violated_alone += alone as usize;
                    self.violation_timeline
                        .push(((t - self.start_s) as f64 / 3600.0, self.violations));
                }
            }
            self.owe_outcome(p, node, 0.0, Some(FailureCause::NodeGone), t);
            self.unbind(by_idx[&p], t);
        }
        evicted
    }

    /// The next hidden fault due: its pod fails (if it is still where the fault was drawn),
    /// counted; returns `(time, pod)` of a pod it evicted.
    fn next_fault(
        &mut self,
        faults: &mut BinaryHeap<Reverse<(u64, usize, usize, u64)>>,
        by_idx: &HashMap<usize, &SimPod>,
        m: &mut Metrics,
    ) -> Option<(u64, usize)> {
        let Reverse((ft, p, node, bound_s)) = faults.pop()?;
        self.advance(ft);
        if !self.fail(by_idx[&p], node, bound_s, ft) {
            return None;
        }
        m.node_faults_hit += 1;
        m.evicted_pods += 1;
        Some((ft, p))
    }

    /// A hidden fault of `node` fails `pod` at `t` (if it is still there since `bound_s`): an
    /// LS pod has broken its QoS, the outcome is a failure the node is to blame for. Returns
    /// whether it did.
    fn fail(&mut self, pod: &SimPod, node: usize, bound_s: u64, t: u64) -> bool {
        let there = self.slots.get(&pod.idx).is_some_and(|(n, _)| *n == node)
            && self
                .pod_bill
                .get(&pod.idx)
                .is_some_and(|(_, at)| *at == bound_s);
        if !there {
            return false;
        }
        if let Some(w) = self.ls.get_mut(&pod.idx) {
            if !w.violated {
                w.violated = true;
                w.alone = self.alloc[node].pods.len() == 1;
                self.violations += 1;
                self.violated_alone += w.alone as usize;
                self.violation_timeline
                    .push(((t - self.start_s) as f64 / 3600.0, self.violations));
            }
        }
        self.owe_outcome(pod.idx, node, 0.0, Some(FailureCause::Node), t);
        self.unbind(pod, t);
        true
    }

    fn unbind(&mut self, pod: &SimPod, t: u64) {
        let Some(&(node, _)) = self.slots.get(&pod.idx) else {
            return;
        };
        let target_met = !pod.ls
            || pod
                .latency_target_us
                .is_none_or(|target| self.world.nodes[node].latency_us <= target);
        self.owe_outcome(pod.idx, node, if target_met { 1.0 } else { 0.0 }, None, t);
        self.settle_bill(node, t);
        self.pod_bill.remove(&pod.idx);
        let Some((node, slots)) = self.slots.remove(&pod.idx) else {
            return;
        };
        self.alloc[node].remove(pod, &slots);
        let key = rng::key(&pod.trace.name);
        if let Some(i) = self.shares[node].iter().position(|s| s.pod_key == key) {
            self.shares[node].remove(i);
            self.util_bounds[node] = None;
        }
        if self.alloc[node].pods.is_empty() {
            let price = self.world.nodes[node].price;
            if let Some(since) = self.busy_since[node].take() {
                self.closed_cost += price * (t - since) as f64 / 3600.0;
                self.open_rate -= price;
                self.open_offset -= price * since as f64;
            }
        }
        if pod.ls {
            if let Some(w) = self.ls.get(&pod.idx) {
                let n = w.node;
                let c = self.ls_nodes.get_mut(&n).unwrap();
                *c -= 1;
                if *c == 0 {
                    self.ls_nodes.remove(&n);
                }
            }
        }
    }

    /// The reporter's round at `t`: `samples_per_report` utilisation samples per node, spread
    /// over the report interval, newer than the last round.
    fn batch(&self, t: u64, last: Option<u64>, first: bool) -> ReportBatch<'_> {
        let k = self.params.samples_per_report.max(1);
        let step = (self.params.report_interval_s / k).max(1);
        let times: Vec<u64> = (0..k)
            .rev()
            .filter_map(|i| t.checked_sub(i * step))
            .filter(|s| last.is_none_or(|l| *s > l))
            .filter(|_| self.params.utilisation_facts)
            .collect();
        let mut util = Vec::with_capacity(times.len() * self.world.nodes.len());
        for n in &self.world.nodes {
            for s in &times {
                util.push(if self.shares[n.idx].is_empty() {
                    0.0
                } else {
                    self.util(n.idx, *s)
                });
            }
        }
        ReportBatch {
            first,
            observed_at_ms: t * 1000,
            sample_ms: times.iter().map(|s| s * 1000).collect(),
            util,
            alloc: &self.alloc,
        }
    }
}

/// Called every `every` decisions with the run so far (the demo's live summary).
pub type Observer<'a> = dyn FnMut(&World, &Metrics, &TenantTrails) + 'a;

/// Runs the trace through `scheduler`.
pub fn run(
    world: &World,
    load: &LoadModel,
    params: &SimParams,
    scheduler: &mut dyn Scheduler,
) -> Result<RunResult, Error> {
    run_observed(world, load, params, scheduler, 0, &mut |_, _, _| {})
}

pub fn run_observed(
    world: &World,
    load: &LoadModel,
    params: &SimParams,
    scheduler: &mut dyn Scheduler,
    observe_every: usize,
    observer: &mut Observer,
) -> Result<RunResult, Error> {
    let started = Instant::now();
    let pods: Vec<&SimPod> = world
        .pods
        .iter()
        .take(params.max_pods.unwrap_or(usize::MAX))
        .collect();
    let start_s = pods.first().map_or(0, |p| p.arrival_s());
    let mut sim = Sim {
        world,
        load,
        params,
        alloc: world.nodes.iter().map(NodeAlloc::new).collect(),
        shares: vec![Vec::new(); world.nodes.len()],
        util_bounds: vec![None; world.nodes.len()],
        slots: HashMap::new(),
        ls: BTreeMap::new(),
        ls_nodes: BTreeMap::new(),
        next_tick: start_s,
        busy_since: vec![None; world.nodes.len()],
        closed_cost: 0.0,
        open_rate: 0.0,
        open_offset: 0.0,
        used: BTreeSet::new(),
        violations: 0,
        violated_alone: 0,
        violation_timeline: Vec::new(),
        start_s,
        bill: vec![(0.0, start_s); world.nodes.len()],
        pod_bill: HashMap::new(),
        outcomes_due: Vec::new(),
        reported: BTreeSet::new(),
        stretched: HashMap::new(),
    };
    let mut tie = StdRng::seed_from_u64(params.seed ^ 0x7E_B4EA);
    let mut departures: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut last_report: Option<u64> = None;
    let mut result = RunResult::default();
    let mut m = Metrics {
        policy: scheduler.name(),
        pods: pods.len(),
        ..Metrics::default()
    };
    let snapshot_every = (pods.len() / params.pheromone_samples.max(1)).max(1);
    let by_idx: HashMap<usize, &SimPod> = pods.iter().map(|p| (p.idx, *p)).collect();

    // Services: pods still running when the trace ends.
    let trace_end = pods
        .iter()
        .filter_map(|p| p.trace.deletion_s)
        .max()
        .unwrap_or(0);
    // Reclamations up to the last departure of any pod (or an hour after the last arrival).
    let horizon = pods
        .iter()
        .filter_map(|p| p.trace.deletion_s)
        .max()
        .unwrap_or(0)
        .max(pods.last().map_or(0, |p| p.arrival_s() + 3600));
    let reclamations = match &params.reclamations_override {
        Some(given) => {
            let mut v = given.clone();
            v.sort_unstable();
            v
        }
        None if params.spot_reclamation => {
            crate::spot::reclamations(world, params.seed, start_s, horizon)
        }
        None => Vec::new(),
    };
    let mut next_reclamation = 0;
    // Hidden faults due: (time, pod index, node, when the pod was bound there).
    let mut faults: BinaryHeap<Reverse<(u64, usize, usize, u64)>> = BinaryHeap::new();
    // Pods evicted by a reclamation, arriving again: (time, pod index).
    let mut rearrivals: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut next_pod = 0;
    loop {
        // Events in time order: departures, then reclamations, then node faults, then
        // re-arrivals, then the trace's next arrival.
        let departure = departures.peek().map(|Reverse((t, _))| *t);
        let reclamation = reclamations.get(next_reclamation).map(|(t, _)| *t);
        let fault = faults.peek().map(|Reverse((t, ..))| *t);
        let rearrival = rearrivals.peek().map(|Reverse((t, _))| *t);
        let arrival = pods.get(next_pod).map(|p| p.arrival_s());
        let Some(next_arrival) = rearrival.into_iter().chain(arrival).min() else {
            break;
        };
        let before_events =
            |d: u64| reclamation.is_none_or(|r| d <= r) && fault.is_none_or(|f| d <= f);
        if departure.is_some_and(|d| d <= next_arrival && before_events(d)) {
            let Some(Reverse((dt, p))) = departures.pop() else {
                unreachable!()
            };
            sim.advance(dt);
            sim.unbind(by_idx[&p], dt);
            continue;
        }
        if let Some(rt) =
            reclamation.filter(|r| *r <= next_arrival && fault.is_none_or(|f| *r <= f))
        {
            let node = reclamations[next_reclamation].1;
            next_reclamation += 1;
            sim.advance(rt);
            let evicted = sim.reclaim(node, rt, &by_idx, &mut m);
            if !evicted.is_empty() {
                // The reporter sees a spot node deleted with pods on it.
                scheduler.reclaimed(world, node, rt * 1000)?;
            }
            for p in evicted {
                if by_idx[&p].trace.deletion_s.is_none_or(|d| d > rt) {
                    rearrivals.push(Reverse((rt, p)));
                }
            }
            continue;
        }
        if fault.is_some_and(|f| f <= next_arrival) {
            if let Some((ft, p)) = sim.next_fault(&mut faults, &by_idx, &mut m) {
                if by_idx[&p].trace.deletion_s.is_none_or(|d| d > ft) {
                    rearrivals.push(Reverse((ft, p)));
                }
            }
            continue;
        }
        let (pod, first) = if rearrival.is_some_and(|r| arrival.is_none_or(|a| r <= a)) {
            let Some(Reverse((_, p))) = rearrivals.pop() else {
                unreachable!()
            };
            (by_idx[&p], false)
        } else {
            next_pod += 1;
            (pods[next_pod - 1], true)
        };
        let t = next_arrival;
        sim.advance(t);
        for due in std::mem::take(&mut sim.outcomes_due) {
            let outcome = match (params.outcomes, due.cause) {
                (OutcomeReports::QosCost, cause) => Outcome::Observed(ObservedOutcome {
                    quality: due.quality,
                    cost_per_hour: Some(due.cost_per_hour),
                    slowdown: due.slowdown,
                    cause,
                }),
                (_, Some(cause)) => Outcome::Observed(ObservedOutcome {
                    quality: due.quality,
                    cost_per_hour: None,
                    slowdown: None,
                    cause: Some(cause),
                }),
                (_, None) => Outcome::Quality(due.quality),
            };
            m.outcomes_reported += 1;
            scheduler.outcome(world, by_idx[&due.pod], due.node, outcome, due.at_s * 1000)?;
        }
        if last_report.is_none_or(|l| t >= l + params.report_interval_s) {
            let batch = sim.batch(t, last_report, last_report.is_none());
            scheduler.report_batch(world, &batch, t * 1000)?;
            last_report = Some(t);
        }
        let candidates: Vec<usize> = (0..world.nodes.len())
            .filter(|n| sim.alloc[*n].fits(&world.nodes[*n], pod))
            .collect();
        m.decisions += 1;
        let chosen = if candidates.is_empty() {
            None
        } else {
            scheduler.schedule(world, &sim.alloc, pod, &candidates, t * 1000, &mut tie)?
        };
        if let Some(node) = chosen {
            sim.bind(pod, node, t);
            scheduler.placed(world, &sim.alloc, pod, node, t * 1000)?;
            if let Some(ft) =
                params
                    .node_faults
                    .failure_s(world, params.seed, node, &pod.trace.name, t)
            {
                faults.push(Reverse((ft, pod.idx, node, t)));
            }
        }
        match (chosen, first) {
            (Some(_), true) => {
                m.placed += 1;
                m.gpu_requested += pod.trace.gpu_units();
                // Pushed once: an evicted pod that lands again leaves at the same time, from its new node.
                if let Some(d) = pod.trace.deletion_s {
                    // Work stretches by the first node's slowdown; services (still running when
                    // the trace ends) leave when they are deleted, whatever the node.
                    let s = match (chosen, d < trace_end) {
                        (Some(n), true) => params.performance.slowdown(
                            params.seed,
                            &world.nodes[n].name,
                            &pod.tenant,
                        ),
                        _ => 1.0,
                    };
                    let d = if s != 1.0 {
                        sim.stretched.insert(pod.idx, s);
                        t + ((d.saturating_sub(t)) as f64 * s).round() as u64
                    } else {
                        d
                    };
                    departures.push(Reverse((d, pod.idx)));
                }
                if pod.ls {
                    m.ls_placed += 1;
                }
            }
            (None, true) => {
                m.unplaced += 1;
                m.gpu_requested += pod.trace.gpu_units();
                m.gpu_unallocated += pod.trace.gpu_units();
            }
            (Some(_), false) => m.rescheduled += 1,
            (None, false) => m.evicted_unplaced += 1,
        }
        if !first {
            result.placements.push((
                pod.trace.name.clone(),
                chosen.map(|n| world.nodes[n].name.clone()),
            ));
            continue;
        }
        let i = next_pod - 1;
        result.placements.push((
            pod.trace.name.clone(),
            chosen.map(|n| world.nodes[n].name.clone()),
        ));
        result.cost_timeline.push((sim.hours(t), sim.cost_at(t)));
        if (i + 1) % snapshot_every == 0 || i + 1 == pods.len() {
            for (tenant, rows) in scheduler.pheromones(world)? {
                for (node, tau) in rows.into_iter().take(8) {
                    result
                        .pheromone_timeline
                        .push((sim.hours(t), tenant.clone(), node, tau));
                }
            }
        }
        if observe_every > 0 && ((i + 1) % observe_every == 0 || i + 1 == pods.len()) {
            m.cost_busy_usd = sim.cost_at(t);
            let ph = scheduler.pheromones(world)?;
            observer(world, &m, &ph);
        }
    }
    // After the last arrival: departures, reclamations and node faults (whose pods have nowhere
    // to go now that nothing is scheduled; they count as evicted and unplaced).
    let end = departures
        .iter()
        .map(|Reverse((t, _))| *t)
        .max()
        .unwrap_or(0)
        .max(pods.last().map_or(0, |p| p.arrival_s() + 3600));
    loop {
        let departure = departures.peek().map(|Reverse((t, _))| *t);
        let reclamation = reclamations
            .get(next_reclamation)
            .map(|(t, _)| *t)
            .filter(|r| *r < end);
        let fault = faults
            .peek()
            .map(|Reverse((t, ..))| *t)
            .filter(|f| *f < end);
        let first = |t: u64, other: Option<u64>| other.is_none_or(|o| t <= o);
        if let Some(dt) = departure.filter(|d| first(*d, reclamation) && first(*d, fault)) {
            let Some(Reverse((_, p))) = departures.pop() else {
                unreachable!()
            };
            sim.advance(dt);
            sim.unbind(by_idx[&p], dt);
        } else if let Some(r) = reclamation.filter(|r| first(*r, fault)) {
            let node = reclamations[next_reclamation].1;
            next_reclamation += 1;
            sim.advance(r);
            m.evicted_unplaced += sim.reclaim(node, r, &by_idx, &mut m).len();
        } else if fault.is_some() {
            m.evicted_unplaced += sim.next_fault(&mut faults, &by_idx, &mut m).is_some() as usize;
        } else {
            break;
        }
    }
    sim.advance(end);
    // Pods that never leave are billed until `end`.
    for node in 0..world.nodes.len() {
        if let Some(since) = sim.busy_since[node] {
            sim.closed_cost += world.nodes[node].price * (end - since) as f64 / 3600.0;
        }
    }
    m.cost_busy_usd = sim.closed_cost;
    m.cost_all_on_usd =
        world.nodes.iter().map(|n| n.price).sum::<f64>() * (end - start_s) as f64 / 3600.0;
    m.nodes_used = sim.used.len();
    for (p, w) in &sim.ls {
        let target_met = by_idx[p]
            .latency_target_us
            .is_none_or(|target| world.nodes[w.node].latency_us <= target);
        m.ls_latency_target_misses += (!target_met) as usize;
        m.ls_compliant += (!w.violated && target_met) as usize;
        m.ls_safe += (!w.unsafe_) as usize;
        if w.violated {
            result.ls_violations.push((
                by_idx[p].trace.name.clone(),
                world.nodes[w.node].name.clone(),
                w.alone,
            ));
        }
    }
    m.ls_violated_alone = sim.violated_alone;
    m.ls_compliance = ratio(m.ls_compliant, m.ls_placed);
    m.safe_routing_rate = ratio(m.ls_safe, m.ls_placed);
    let (tied, tie_nodes) = scheduler.tie_stats();
    m.decisions_with_top_ties = tied;
    m.mean_top_tie_size = if tied > 0 {
        tie_nodes as f64 / tied as f64
    } else {
        0.0
    };
    m.wall_s = started.elapsed().as_secs_f64();
    m.decisions_per_s = m.decisions as f64 / m.wall_s.max(1e-9);
    result.cost_timeline.push((sim.hours(end), sim.closed_cost));
    result.violation_timeline = sim.violation_timeline;
    result.metrics = m;
    Ok(result)
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{WorldParams, GPU_MILLI_RESOURCE};
    use crate::native::NativeScheduler;
    use crate::policy;
    use crate::predictor::PredictorKind;
    use crate::prices::PriceTable;
    use crate::trace::{TraceNode, TracePod};
    use aco_core::api::nodes::{NodeReport, UtilisationSample};
    use aco_core::facts::NodeFacts;
    use aco_core::k8s::QuantityText;

    fn prices() -> PriceTable {
        PriceTable::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/prices"),
        )
        .unwrap()
    }

    fn node(name: &str, cpu: i64, mem_gib: i64, gpus: u32, model: Option<&str>) -> TraceNode {
        TraceNode {
            name: name.into(),
            cpu_milli: cpu,
            memory_mib: mem_gib * 1024,
            gpus,
            model: model.map(String::from),
        }
    }

    fn pod(
        name: &str,
        cpu: i64,
        mem_gib: i64,
        gpus: u32,
        milli: u32,
        start: u64,
        end: u64,
    ) -> TracePod {
        TracePod {
            name: name.into(),
            cpu_milli: cpu,
            memory_mib: mem_gib * 1024,
            num_gpu: gpus,
            gpu_milli: milli,
            gpu_spec: None,
            qos: "BE".into(),
            creation_s: start,
            deletion_s: Some(end),
        }
    }

    fn world(nodes: &[TraceNode], pods: &[TracePod]) -> World {
        World::build(
            nodes,
            pods,
            &prices(),
            WorldParams {
                spot_share: 0.0,
                ..WorldParams::default()
            },
        )
    }

    fn placements(w: &World, policy: &str, seed: u64) -> Vec<Option<String>> {
        let mut s = NativeScheduler::new(
            policy::by_name(policy, seed).unwrap(),
            w.config.clone(),
            PredictorKind::Ema(0.5),
        );
        let params = SimParams {
            seed,
            ..SimParams::default()
        };
        run(
            w,
            &LoadModel {
                seed,
                ..LoadModel::default()
            },
            &params,
            &mut s,
        )
        .unwrap()
        .placements
        .into_iter()
        .map(|(_, n)| n)
        .collect()
    }

    #[test]
    fn pods_scored_together_see_where_the_extender_put_the_ones_before_them() {
        // Two latency-critical pods in the same second, one facts report before them: both see
        // the 8-CPU node empty and cheapest. Together they would load it to 7/8, past the SLA
        // threshold; the second sees the first assumed there and opens the bigger node.
        let nodes = [
            node("a", 8_000, 32, 0, None),
            node("b", 16_000, 64, 0, None),
        ];
        let ls = |name: &str| TracePod {
            qos: "LS".into(),
            ..pod(name, 3_500, 4, 0, 0, 100, 4_000)
        };
        let mut w = world(&nodes, &[ls("p1"), ls("p2")]);
        for policy in ["heuristic", "colony"] {
            let got = placements(&w, policy, 1);
            assert_eq!(got, [Some("a".into()), Some("b".into())], "{policy}");
        }
        // Without assumptions the second pod is scored on the facts alone, and stacks.
        w.config.assumed.assumed_ttl_ms = 0;
        for policy in ["heuristic", "colony"] {
            let got = placements(&w, policy, 1);
            assert_eq!(got, [Some("a".into()), Some("a".into())], "{policy}");
        }
    }

    #[test]
    fn the_colony_learns_hidden_node_faults_that_eta_cannot_see() {
        let w = crate::cluster::sample_world(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
            1,
        )
        .unwrap();
        let run_with = |policy: &str, faults: &str| {
            let mut s = NativeScheduler::new(
                policy::by_name(policy, 1).unwrap(),
                w.config.clone(),
                PredictorKind::Ema(0.5),
            );
            let params = SimParams {
                seed: 1,
                node_faults: faults.parse().unwrap(),
                ..SimParams::default()
            };
            run(&w, &LoadModel::default(), &params, &mut s).unwrap()
        };
        // No hidden fault: every failure is one η prices, and the colony is η alone.
        let (eta, colony) = (run_with("heuristic", "none"), run_with("colony", "none"));
        assert_eq!(eta.placements, colony.placements);
        assert_eq!(eta.metrics.node_faults_hit, 0);
        // A third of the nodes fail their pods: the failures name the node, its reliability
        // learns them, and the colony moves pods off the nodes η still finds cheapest.
        let (eta, colony) = (run_with("heuristic", "0.3,2"), run_with("colony", "0.3,2"));
        assert!(eta.metrics.node_faults_hit > 0, "{:?}", eta.metrics);
        assert!(
            colony.metrics.node_faults_hit < eta.metrics.node_faults_hit,
            "colony {} vs η alone {} pods failed",
            colony.metrics.node_faults_hit,
            eta.metrics.node_faults_hit
        );
    }

    /// small: 4 CPU / 16 GiB (cheap), big: 16 CPU / 64 GiB, gpu: 8 CPU / 32 GiB with 2 T4.
    fn three_nodes() -> Vec<TraceNode> {
        vec![
            node("big", 16000, 64, 0, None),
            node("small", 4000, 16, 0, None),
            node("gpu", 8000, 32, 2, Some("T4")),
        ]
    }

    #[test]
    fn a_reclamation_evicts_every_pod_on_the_node_fails_the_ls_ones_and_they_land_again() {
        let mut ls = pod("ls", 2000, 4, 0, 0, 0, 1000);
        ls.qos = "LS".into();
        let pods = [
            ls,
            pod("be", 1000, 2, 0, 0, 10, 1000),
            pod("late", 1000, 2, 0, 0, 600, 700),
        ];
        let w = world(&three_nodes(), &pods);
        let run_with = |reclaim: Option<Vec<(u64, usize)>>| {
            let mut s = NativeScheduler::new(
                policy::by_name("first-fit", 1).unwrap(),
                w.config.clone(),
                PredictorKind::Ema(0.5),
            );
            let params = SimParams {
                reclamations_override: reclaim,
                ..SimParams::default()
            };
            run(&w, &LoadModel::default(), &params, &mut s).unwrap()
        };
        let calm = run_with(Some(Vec::new()));
        let first = calm.placements[0].1.clone().unwrap();
        let node = w.nodes.iter().position(|n| n.name == first).unwrap();
        assert_eq!(
            calm.placements[1].1.as_deref(),
            Some(first.as_str()),
            "first-fit packs both"
        );
        assert_eq!(
            (calm.metrics.ls_compliant, calm.metrics.evicted_pods),
            (1, 0)
        );

        let hit = run_with(Some(vec![(300, node)]));
        let m = &hit.metrics;
        assert_eq!(
            (
                m.spot_reclamations_hit,
                m.evicted_pods,
                m.rescheduled,
                m.evicted_unplaced
            ),
            (1, 2, 2, 0)
        );
        assert_eq!(
            (m.placed, m.ls_placed, m.ls_compliant),
            (3, 1, 0),
            "counted once each; the evicted LS pod broke its QoS"
        );
        assert_eq!(m.decisions, 5, "3 arrivals + 2 re-arrivals");
        // Both evicted pods land again (first-fit: the same node, back at once), before `late`.
        let names: Vec<&str> = hit.placements.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names, ["ls", "be", "ls", "be", "late"]);
        // Outcomes are sent before the next decision: the two evictions' failures went out before
        // the re-arrivals; the departures all come after the last arrival, when nothing learns.
        assert_eq!(
            (m.outcomes_reported, calm.metrics.outcomes_reported),
            (2, 0)
        );
        // A reclamation of an idle node, or after every pod left, evicts nothing.
        let idle = w.nodes.iter().position(|n| n.name != first).unwrap();
        assert_eq!(
            run_with(Some(vec![(300, idle), (5000, node)]))
                .metrics
                .evicted_pods,
            0
        );
    }

    #[test]
    fn outcomes_reach_the_colony_once_per_pod_and_change_its_trail() {
        let w = crate::cluster::sample_world(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")),
            1,
        )
        .unwrap();
        let trails = |outcomes: OutcomeReports| {
            let mut s = NativeScheduler::new(
                policy::by_name("colony", 1).unwrap(),
                w.config.clone(),
                PredictorKind::Ema(0.5),
            );
            let params = SimParams {
                outcomes,
                max_pods: Some(150),
                spot_reclamation: false,
                ..SimParams::default()
            };
            let r = run(&w, &LoadModel::default(), &params, &mut s).unwrap();
            (r.metrics.outcomes_reported, s.pheromones_snapshot())
        };
        let (none_n, none_t) = trails(OutcomeReports::None);
        let (qos_n, qos_t) = trails(OutcomeReports::Qos);
        let (cost_n, cost_t) = trails(OutcomeReports::QosCost);
        assert_eq!(none_n, 0);
        assert!(qos_n > 0 && qos_n <= 150, "{qos_n}");
        assert_eq!(qos_n, cost_n);
        let nodes = |t: &crate::scheduler::TenantTrails| -> usize {
            t.iter().map(|(_, rows)| rows.len()).sum()
        };
        assert_eq!(nodes(&none_t), 0, "placements deposit nothing: {none_t:?}");
        assert!(nodes(&qos_t) > 0, "the outcomes were deposited");
        assert_eq!(qos_t, cost_t, "the observed cost is not learned");
    }

    #[test]
    fn baselines_on_a_tiny_cluster() {
        let w = world(&three_nodes(), &[pod("p", 2000, 4, 0, 0, 0, 100)]);
        let one = |p: &str| placements(&w, p, 1)[0].clone().unwrap();
        assert_eq!(one("first-fit"), "big", "cluster order");
        assert_eq!(one("best-fit"), "small", "least left over");
        assert_eq!(one("k8s-default"), "big", "least allocated, balanced");
        // MostAllocated: 2000/4000 cpu + 4/16 GiB on small (50, 25) beats big (12, 6); the GPU
        // node has GPUs, scored 0 for this pod, which lowers its mean.
        assert_eq!(
            one("k8s-mostallocated"),
            "small",
            "most allocated after placing"
        );
        assert_eq!(one("cheapest-fit"), "small");
        assert_eq!(one("heuristic"), "small", "cheapest, all else neutral");
        assert_eq!(one("colony"), "small");
        // Tetris: demand/cap · free/cap is largest on the small node (2000/4000 · 1).
        assert_eq!(one("tetris"), "small");
        let seen: std::collections::BTreeSet<String> = (0..40)
            .map(|s| placements(&w, "random", s)[0].clone().unwrap())
            .collect();
        assert_eq!(seen.len(), 3, "{seen:?}");
    }

    #[test]
    fn gpu_pods_and_shares_go_to_gpu_nodes_and_respect_per_gpu_capacity() {
        let pods = [
            pod("w", 1000, 1, 1, 1000, 0, 100),
            pod("s1", 1000, 1, 1, 600, 1, 100),
            pod("s2", 1000, 1, 1, 600, 2, 100),
            pod("w2", 1000, 1, 1, 1000, 3, 100),
        ];
        let w = world(&three_nodes(), &pods);
        let p = placements(&w, "first-fit", 1);
        assert_eq!(p[0].as_deref(), Some("gpu"));
        assert_eq!(p[1].as_deref(), Some("gpu"), "600m share fits the free GPU");
        assert_eq!(
            p[2], None,
            "a second 600m share does not fit in the 400m left (no GPU is free)"
        );
        assert_eq!(p[3], None);
    }

    #[test]
    fn cost_bills_busy_nodes_once_for_overlapping_pods() {
        let w = world(
            &[node("only", 4000, 16, 0, None)],
            &[
                pod("a", 1000, 1, 0, 0, 0, 3600),
                pod("b", 1000, 1, 0, 0, 1800, 7200),
                pod("c", 1000, 1, 0, 0, 10800, 14400),
            ],
        );
        let mut s = NativeScheduler::new(
            policy::by_name("first-fit", 1).unwrap(),
            w.config.clone(),
            PredictorKind::Ema(0.5),
        );
        let r = run(&w, &LoadModel::default(), &SimParams::default(), &mut s).unwrap();
        let price = w.nodes[0].price;
        assert!(
            (r.metrics.cost_busy_usd - price * 3.0).abs() < 1e-9,
            "{} vs {}",
            r.metrics.cost_busy_usd,
            price * 3.0
        );
        assert!((r.metrics.cost_all_on_usd - price * 4.0).abs() < 1e-9);
        assert_eq!(
            (r.metrics.placed, r.metrics.unplaced, r.metrics.nodes_used),
            (3, 0, 1)
        );
    }

    #[test]
    fn fact_reports_fold_the_same_natively_and_through_json() {
        let mut requested = BTreeMap::new();
        requested.insert("cpu".to_string(), QuantityText("1500m".to_string()));
        requested.insert(
            GPU_MILLI_RESOURCE.to_string(),
            QuantityText("460".to_string()),
        );
        let mut labels = BTreeMap::new();
        labels.insert("aco/gpu-type".to_string(), "T4".to_string());
        let r = NodeReport {
            name: aco_core::names::NodeName::parse("n1").unwrap(),
            labels: Some(labels.clone()),
            allocatable: Some(
                labels
                    .iter()
                    .map(|_| ("cpu".to_string(), QuantityText("8".to_string())))
                    .collect(),
            ),
            requested: Some(requested),
            latency_us: Some(120.0),
            observed_at_ms: Some(60_000),
            utilisation: vec![
                UtilisationSample {
                    at_ms: 45_000,
                    value: 0.25,
                },
                UtilisationSample {
                    at_ms: 60_000,
                    value: 0.75,
                },
            ],
            gpu_free_milli: Some(vec![540, 1000]),
        };
        let config = crate::cluster::sim_config();
        let wire: NodeReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        wire.validate("nodes[0]", 60_000).unwrap();
        let (mut a, mut b) = (NodeFacts::default(), NodeFacts::default());
        a.apply(&r, 60_000, &config.load);
        b.apply(&wire, 60_000, &config.load);
        assert_eq!(a, b);
        assert_eq!(a.load.unwrap().value.samples, 2);
    }

    #[test]
    fn runs_are_deterministic_per_seed() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/openb-sample");
        let nodes = crate::trace::read_nodes(&root.join("nodes.csv")).unwrap();
        let pods = crate::trace::read_pods(&root.join("pods.csv"), 60).unwrap();
        let w = World::build(&nodes, &pods, &prices(), WorldParams::default());
        let a = placements(&w, "colony", 3);
        assert_eq!(a, placements(&w, "colony", 3));
        assert!(a.iter().filter(|p| p.is_some()).count() > 250);
    }
}
