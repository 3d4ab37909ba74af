//! Placements the extender has named that its node facts do not show yet: the extender's
//! counterpart of kube-scheduler's assumed pods.
//!
//! Node facts arrive with the reporter's pushes (every 15 s by default, every 60 s in the
//! simulator) and an isolate keeps them `FACTS_CACHE_MS`. Pods that arrive together — a Job's
//! pods, a Deployment's replicas — were all scored against the same facts, so every one of them
//! saw the same half-empty node as the best and kube-scheduler stacked them on it: its own fit
//! check stops at the node's capacity, not at the headroom a latency-critical pod needs. In the
//! simulator that was most of the LS QoS breaches (docs/history/simulation.md, v8).
//!
//! So the node prioritize puts alone at the top (`colony::single_out_top`, the node
//! kube-scheduler binds), or the only node filter passes, is assumed to hold the pod from the
//! decision on: prioritize reads its facts with the pod's request added to `requested` and its
//! GPUs taken from the per-GPU free shares as the device plugin takes them. Filter reads the
//! facts alone: an assumption is a guess, and a guess must never reject a node (kube-scheduler's
//! own fit check is exact; a pod assumed on a node it has already left would keep others off
//! it). A pod with preferences kube-scheduler scores itself (`PodDemand::scheduler_preferences`)
//! is not assumed: kube-scheduler may bind it elsewhere, and counted on the wrong node it would
//! turn the next pods' scores against kube-scheduler's choice. An assumption stands until
//! the node's `requested` is observed more than `ASSUMED_SETTLE_MS` after it (the reporter has
//! seen the binding), and at most `ASSUMED_TTL_MS` (a reporter that stopped, a binding that
//! failed); `ASSUMED_TTL_MS=0` turns assumptions off. A pod that leaves is not un-assumed: until
//! the facts show it gone, its node looks as busy as before, never busier than it is. A pod
//! scored again (kube-scheduler retries one whose binding failed) is scored with its earlier
//! assumption still counted, then counts only where it is named last.
//!
//! Held per isolate (the Worker) or per run (the simulator); bounded by
//! [`MAX_ASSUMED_PLACEMENTS`], the oldest dropped first.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use crate::config::{AssumedTiming, Config, NodeKeys, SpotRisk};
use crate::demand::PodDemand;
use crate::facts::{FactsLookup, NodeFacts, ReadFacts, MILLI_PER_GPU};
use crate::heuristic::{pod_gpus, PodGpus};
use crate::k8s::ResourceAmounts;
use crate::node_labels::LabelReading;

/// At most this many assumptions are held (per cluster in an isolate); beyond it the oldest go
/// first. At 500 pods/s and a 20 s window (push interval plus cache) a cluster holds ~10,000.
pub const MAX_ASSUMED_PLACEMENTS: usize = 16_384;

/// One pod counted on a node ahead of the facts.
#[derive(Debug, Clone, PartialEq)]
struct Assumption {
    /// The pod's key (`PodDemand::key`): a pod scored again replaces its earlier assumption.
    pod: String,
    at_ms: u64,
    request: ResourceAmounts,
    gpus: PodGpus,
}

impl Assumption {
    /// The record as the reporter will report it once it has seen the pod bound there.
    fn apply_to(&self, facts: &mut NodeFacts) {
        if let Some(requested) = facts.requested.as_mut() {
            for (name, amount) in self.request.iter() {
                requested.value.add_to(name, amount);
            }
        }
        if let Some(free) = facts.gpu_free_milli.as_mut() {
            take_gpus(&mut free.value, self.gpus);
        }
    }

    /// The facts show the pod (requested observed after it settled) or it is too old to keep.
    fn is_over(&self, facts: Option<&NodeFacts>, now_ms: u64, rules: &AssumedTiming) -> bool {
        let shown = facts
            .and_then(|f| f.requested.as_ref())
            .is_some_and(|r| r.at_ms > self.at_ms.saturating_add(rules.assumed_settle_ms));
        shown || now_ms.saturating_sub(self.at_ms) > rules.assumed_ttl_ms
    }
}

/// Takes the pod's GPUs from the per-GPU free shares as the GPU-share device plugins do: a share
/// on the fullest GPU it fits (lowest index among equals), whole GPUs from the free ones in
/// index order. Facts too old to have room for it are left as they are.
fn take_gpus(free: &mut [u32], pod: PodGpus) {
    if pod.num_gpu == 0 || pod.gpu_milli == 0 {
        return;
    }
    if pod.num_gpu == 1 && pod.gpu_milli < MILLI_PER_GPU {
        if let Some(i) = (0..free.len())
            .filter(|&i| free[i] >= pod.gpu_milli)
            .min_by_key(|&i| (free[i], i))
        {
            free[i] -= pod.gpu_milli;
        }
        return;
    }
    let whole: Vec<usize> = (0..free.len())
        .filter(|&i| free[i] >= MILLI_PER_GPU)
        .take(pod.num_gpu as usize)
        .collect();
    if whole.len() == pod.num_gpu as usize {
        for i in whole {
            free[i] = 0;
        }
    }
}

/// A node's assumptions and the record the verbs read for it.
#[derive(Debug, Clone)]
struct Pending {
    /// Oldest first (by `at_ms`: concurrent requests of one isolate may assume out of order).
    assumptions: Vec<Assumption>,
    /// The node's facts with every assumption applied (`None`: no facts for the node, so
    /// nothing to add to; the verbs then read what they would have read).
    record: Option<ReadFacts>,
    /// What `record` was built from: the base record's `updatedAtMs` and `requested` time.
    base_stamp: Option<(u64, Option<u64>)>,
}

fn stamp(facts: &NodeFacts) -> (u64, Option<u64>) {
    (
        facts.updated_at_ms,
        facts.requested.as_ref().map(|r| r.at_ms),
    )
}

/// The assumed placements of one cluster.
/// Its methods take the whole Config: they read three groups (the assumed TTL, and the node
/// keys and spot pools that read a record's labels).
#[derive(Debug, Clone, Default)]
pub struct AssumedPlacements {
    nodes: FxHashMap<String, Pending>,
    /// Pod key → the node it is assumed on.
    pods: FxHashMap<String, String>,
    len: usize,
    /// The earliest time an assumption expires (`u64::MAX`: none held).
    next_expiry_ms: u64,
}

impl AssumedPlacements {
    pub fn new() -> Self {
        Self {
            next_expiry_ms: u64::MAX,
            ..Self::default()
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pod goes to `node` at `now_ms`: its request counts there until the facts show it.
    /// A pod assumed before (kube-scheduler tries a pod again when its binding failed) counts
    /// only where it was named last; the other node it was counted on is returned (its record
    /// changed too).
    pub fn assume<L: FactsLookup + ?Sized>(
        &mut self,
        node: &str,
        pod: &PodDemand,
        base: &L,
        now_ms: u64,
        config: &Config,
    ) -> Option<String> {
        // A pod kube-scheduler may bind elsewhere by preferences of its own is left to the facts:
        // counted on the wrong node, it would turn the next pods' scores against kube-scheduler's
        // choice.
        if config.assumed.assumed_ttl_ms == 0 || pod.scheduler_preferences {
            return None;
        }
        let before = self.forget(&pod.key, base, config);
        if self.len >= MAX_ASSUMED_PLACEMENTS {
            self.drop_oldest();
        }
        self.pods.insert(pod.key.clone(), node.to_string());
        let assumption = Assumption {
            pod: pod.key.clone(),
            at_ms: now_ms,
            request: pod.request.clone(),
            gpus: pod_gpus(pod),
        };
        let pending = self
            .nodes
            .entry(node.to_string())
            .or_insert_with(|| Pending {
                assumptions: Vec::new(),
                record: None,
                base_stamp: None,
            });
        match pending.record.as_mut() {
            Some(record) => assumption.apply_to(&mut record.facts),
            None => {
                if let Some((facts, reading)) = base.get_read(node, &config.node_keys, &config.spot)
                {
                    let all = pending.assumptions.iter().chain([&assumption]);
                    pending.record = Some(record_with(facts, reading, all));
                    pending.base_stamp = Some(stamp(facts));
                }
            }
        }
        let at = pending
            .assumptions
            .partition_point(|a| a.at_ms <= assumption.at_ms);
        pending.assumptions.insert(at, assumption);
        self.len += 1;
        self.next_expiry_ms = self
            .next_expiry_ms
            .min(now_ms.saturating_add(config.assumed.assumed_ttl_ms));
        before.filter(|b| b != node)
    }

    /// The pod `key` is no longer assumed anywhere; its node's record is built again from
    /// `base`. Returns that node.
    fn forget<L: FactsLookup + ?Sized>(
        &mut self,
        key: &str,
        base: &L,
        config: &Config,
    ) -> Option<String> {
        let node = self.pods.remove(key)?;
        let pending = self.nodes.get_mut(&node)?;
        pending.assumptions.retain(|a| a.pod != key);
        self.len -= 1;
        if pending.assumptions.is_empty() {
            self.nodes.remove(&node);
            return Some(node);
        }
        let current = base.get_read(&node, &config.node_keys, &config.spot);
        pending.base_stamp = current.as_ref().map(|(f, _)| stamp(f));
        pending.record =
            current.map(|(facts, reading)| record_with(facts, reading, &pending.assumptions));
        Some(node)
    }

    /// Brings every assumed node up to `base` at `now_ms`: drops the assumptions its facts show
    /// or that expired, and builds the record of a node whose facts changed again from them.
    /// Cheap when nothing changed (one stamp comparison per assumed node). Returns the nodes
    /// whose record changed, for a caller that keeps derived state per node (the simulator).
    pub fn refresh<L: FactsLookup + ?Sized>(
        &mut self,
        base: &L,
        now_ms: u64,
        config: &Config,
    ) -> Vec<String> {
        let mut changed = Vec::new();
        if self.is_empty() {
            return changed;
        }
        let mut len = 0;
        let mut next_expiry = u64::MAX;
        let pods = &mut self.pods;
        self.nodes.retain(|node, pending| {
            let current = base.get_read(node, &config.node_keys, &config.spot);
            let facts = current.as_ref().map(|(f, _)| *f);
            let before = pending.assumptions.len();
            pending.assumptions.retain(|a| {
                let keep = !a.is_over(facts, now_ms, &config.assumed);
                if !keep {
                    pods.remove(&a.pod);
                }
                keep
            });
            let base_changed = pending.base_stamp != facts.map(stamp);
            if pending.assumptions.len() != before || base_changed {
                pending.record = current
                    .map(|(facts, reading)| record_with(facts, reading, &pending.assumptions));
                pending.base_stamp = facts.map(stamp);
                changed.push(node.clone());
            }
            len += pending.assumptions.len();
            if let Some(first) = pending.assumptions.first() {
                next_expiry =
                    next_expiry.min(first.at_ms.saturating_add(config.assumed.assumed_ttl_ms));
            }
            !pending.assumptions.is_empty()
        });
        self.len = len;
        self.next_expiry_ms = next_expiry;
        changed
    }

    /// Whether [`AssumedPlacements::refresh`] has anything to do at `now_ms` for facts that did
    /// not change: an assumption has expired.
    pub fn expires_by(&self, now_ms: u64) -> bool {
        now_ms > self.next_expiry_ms
    }

    /// The record the verbs read for `node`, if the node has assumptions and facts.
    pub fn record(&self, node: &str) -> Option<&ReadFacts> {
        self.nodes.get(node)?.record.as_ref()
    }

    /// The facts as the verbs read them: `base`, with the assumed nodes' records in place of
    /// theirs.
    pub fn over<'a, L: FactsLookup + ?Sized>(&'a self, base: &'a L) -> WithAssumed<'a, L> {
        WithAssumed {
            base,
            assumed: self,
        }
    }

    fn drop_oldest(&mut self) {
        let oldest = self
            .nodes
            .iter()
            .filter_map(|(node, p)| Some((p.assumptions.first()?.at_ms, node)))
            .min()
            .map(|(_, node)| node.clone());
        let Some(node) = oldest else { return };
        let mut gone = false;
        if let Some(p) = self.nodes.get_mut(&node) {
            let dropped = p.assumptions.remove(0);
            self.pods.remove(&dropped.pod);
            self.len -= 1;
            // Rebuilt from the base record at the next refresh.
            p.base_stamp = None;
            gone = p.assumptions.is_empty();
        }
        if gone {
            self.nodes.remove(&node);
        }
    }
}

fn record_with<'x>(
    facts: &NodeFacts,
    reading: Cow<'_, LabelReading>,
    assumptions: impl IntoIterator<Item = &'x Assumption>,
) -> ReadFacts {
    let mut facts = facts.clone();
    for a in assumptions {
        a.apply_to(&mut facts);
    }
    ReadFacts {
        facts,
        reading: reading.into_owned(),
    }
}

/// [`AssumedPlacements::over`]: a [`FactsLookup`] that answers an assumed node with its record.
pub struct WithAssumed<'a, L: ?Sized> {
    base: &'a L,
    assumed: &'a AssumedPlacements,
}

impl<L: FactsLookup + ?Sized> FactsLookup for WithAssumed<'_, L> {
    fn get(&self, name: &str) -> Option<&NodeFacts> {
        if !self.assumed.is_empty() {
            if let Some(r) = self.assumed.record(name) {
                return Some(&r.facts);
            }
        }
        self.base.get(name)
    }

    fn get_read(
        &self,
        name: &str,
        node_keys: &NodeKeys,
        spot: &SpotRisk,
    ) -> Option<(&NodeFacts, Cow<'_, LabelReading>)> {
        if !self.assumed.is_empty() {
            if let Some(r) = self.assumed.record(name) {
                return Some((&r.facts, Cow::Borrowed(&r.reading)));
            }
        }
        self.base.get_read(name, node_keys, spot)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::api::nodes::NodeReport;
    use crate::filter::test_support::pod;
    use crate::node_state::NodeState;

    const GPU_POD: &str = r#"{"metadata":{"name":"p","namespace":"ns","uid":"u1"},
        "spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"4","memory":"8Gi",
        "nvidia.com/gpu":"1"},"limits":{"nvidia.com/gpu":"1"}}}]}}"#;

    /// A node with 2 GPUs, half its CPU requested, as the reporter saw it at `at_ms`.
    fn facts_at(at_ms: u64) -> HashMap<String, NodeFacts> {
        let report: NodeReport = serde_json::from_str(&format!(
            r#"{{"name":"n1","allocatable":{{"cpu":"16","memory":"64Gi","nvidia.com/gpu":"2"}},
            "requested":{{"cpu":"8","memory":"8Gi","nvidia.com/gpu":"1"}},
            "gpuFreeMilli":[0,1000],"observedAtMs":{at_ms}}}"#
        ))
        .unwrap();
        let mut f = NodeFacts::default();
        f.apply(&report, at_ms, &Default::default());
        HashMap::from([("n1".to_string(), f)])
    }

    /// `p` under another pod key.
    fn named(p: &PodDemand, key: &str) -> PodDemand {
        PodDemand {
            key: key.into(),
            ..p.clone()
        }
    }

    fn committed(lookup: &impl FactsLookup, now_ms: u64) -> Option<f64> {
        let c = Config::default();
        let facts = lookup.get("n1");
        NodeState::assemble("n1", None, facts, now_ms, &c, "n1")
            .unwrap()
            .committed_share
    }

    #[test]
    fn an_assumed_pod_counts_on_its_node_until_the_facts_show_it() {
        let c = Config::default();
        let base = facts_at(1_000);
        let mut assumed = AssumedPlacements::new();
        assert_eq!(committed(&assumed.over(&base), 1_500), Some(0.5));
        assumed.assume("n1", &pod(GPU_POD), &base, 1_500, &c);
        let read = assumed.over(&base);
        // 12 of 16 CPUs, both GPUs: the node is full in GPUs now.
        assert_eq!(committed(&read, 1_500), Some(1.0));
        let f = read.get("n1").unwrap();
        assert_eq!(f.requested.as_ref().unwrap().value.get("cpu"), 12_000);
        assert_eq!(f.gpu_free_milli.as_ref().unwrap().value, vec![0, 0]);
        assert_eq!(
            base["n1"].requested.as_ref().unwrap().value.get("cpu"),
            8_000
        );

        // A report taken before the binding could be seen keeps the assumption...
        let early = facts_at(1_500 + c.assumed.assumed_settle_ms);
        assert!(
            !assumed.refresh(&early, 4_000, &c).is_empty(),
            "rebuilt on the new base"
        );
        assert_eq!(assumed.len(), 1);
        assert_eq!(committed(&assumed.over(&early), 4_000), Some(1.0));
        // ...one taken after it ends it: the facts count the pod themselves.
        let late = facts_at(1_501 + c.assumed.assumed_settle_ms);
        assert_eq!(assumed.refresh(&late, 4_000, &c), vec!["n1".to_string()]);
        assert!(assumed.is_empty());
        assert_eq!(committed(&assumed.over(&late), 4_000), Some(0.5));
    }

    #[test]
    fn assumptions_add_up_expire_and_can_be_turned_off() {
        let c = Config::default();
        let base = facts_at(1_000);
        let mut assumed = AssumedPlacements::new();
        let cpu_pod = pod(
            r#"{"metadata":{"name":"q","namespace":"ns"},"spec":{"containers":
            [{"name":"c","resources":{"requests":{"cpu":"2"}}}]}}"#,
        );
        assumed.assume("n1", &named(&cpu_pod, "ns/q1"), &base, 2_000, &c);
        assumed.assume("n1", &named(&cpu_pod, "ns/q2"), &base, 3_000, &c);
        assert_eq!(assumed.len(), 2);
        assert_eq!(committed(&assumed.over(&base), 3_000), Some(0.75));
        assert!(!assumed.expires_by(2_000 + c.assumed.assumed_ttl_ms));
        assert!(assumed.expires_by(2_001 + c.assumed.assumed_ttl_ms));
        // The first expires, the second still counts.
        assumed.refresh(&base, 2_001 + c.assumed.assumed_ttl_ms, &c);
        assert_eq!(assumed.len(), 1);
        assert_eq!(committed(&assumed.over(&base), 3_000), Some(0.625));

        let off = Config::default().with(|c| c.assumed.assumed_ttl_ms = 0);
        let mut none = AssumedPlacements::new();
        none.assume("n1", &cpu_pod, &base, 2_000, &off);
        assert!(none.is_empty());
    }

    #[test]
    fn a_node_without_facts_reads_as_it_would_and_the_bound_drops_the_oldest() {
        let c = Config::default();
        let base = facts_at(1_000);
        let mut assumed = AssumedPlacements::new();
        let p = pod(GPU_POD);
        assumed.assume("unknown", &p, &base, 1_000, &c);
        assert!(assumed.over(&base).get("unknown").is_none());
        for i in 0..MAX_ASSUMED_PLACEMENTS as u64 {
            assumed.assume("n1", &named(&p, &format!("ns/p{i}")), &base, 2_000 + i, &c);
        }
        assert_eq!(assumed.len(), MAX_ASSUMED_PLACEMENTS);
        assert!(assumed.record("unknown").is_none() && assumed.nodes.len() == 1);
    }

    #[test]
    fn a_pod_scored_again_counts_only_where_it_was_named_last() {
        let c = Config::default();
        let mut base = facts_at(1_000);
        let mut n2 = base["n1"].clone();
        n2.name = "n2".into();
        base.insert("n2".into(), n2);
        let mut assumed = AssumedPlacements::new();
        let p = pod(GPU_POD);
        assert_eq!(assumed.assume("n1", &p, &base, 2_000, &c), None);
        let moved = assumed.assume("n2", &p, &base, 3_000, &c);
        assert_eq!(moved.as_deref(), Some("n1"), "n1's record changed too");
        assert_eq!(assumed.len(), 1);
        let read = assumed.over(&base);
        let cpu = |n: &str| {
            read.get(n)
                .unwrap()
                .requested
                .as_ref()
                .unwrap()
                .value
                .get("cpu")
        };
        assert_eq!((cpu("n1"), cpu("n2")), (8_000, 12_000));
        assert_eq!(assumed.assume("n2", &p, &base, 4_000, &c), None);
        assert_eq!(assumed.len(), 1, "the same node again: still once");
        assert_eq!(
            assumed
                .over(&base)
                .get("n2")
                .unwrap()
                .requested
                .as_ref()
                .unwrap()
                .value
                .get("cpu"),
            12_000
        );
    }

    #[test]
    fn a_pod_kube_scheduler_may_place_by_its_own_preferences_is_not_assumed() {
        let c = Config::default();
        let base = facts_at(1_000);
        let preferring = pod(
            r#"{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c",
            "resources":{"requests":{"cpu":"2"}}}],"affinity":{"nodeAffinity":{
            "preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"preference":{
            "matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}}]}}}}"#,
        );
        assert!(preferring.scheduler_preferences);
        let mut assumed = AssumedPlacements::new();
        assert_eq!(assumed.assume("n1", &preferring, &base, 2_000, &c), None);
        assert!(assumed.is_empty());
        let spread = pod(
            r#"{"metadata":{"name":"q","namespace":"ns"},"spec":{"containers":[],
            "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone",
            "whenUnsatisfiable":"ScheduleAnyway"}]}}"#,
        );
        assert!(spread.scheduler_preferences);
        let strict = pod(
            r#"{"metadata":{"name":"r","namespace":"ns"},"spec":{"containers":[],
            "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone",
            "whenUnsatisfiable":"DoNotSchedule"}],"affinity":{"nodeAffinity":{
            "requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}}}}"#,
        );
        assert!(!strict.scheduler_preferences, "filters, not preferences");
        assert!(!pod(GPU_POD).scheduler_preferences);
    }

    /// What the records must say: the base's requested CPU plus every assumption's.
    fn check_books(assumed: &AssumedPlacements, base: &HashMap<String, NodeFacts>) {
        let listed: usize = assumed.nodes.values().map(|p| p.assumptions.len()).sum();
        assert_eq!(assumed.len(), listed);
        assert_eq!(assumed.pods.len(), listed);
        for (pod, node) in &assumed.pods {
            let on = &assumed.nodes[node].assumptions;
            assert_eq!(
                on.iter().filter(|a| &a.pod == pod).count(),
                1,
                "{pod} on {node}"
            );
        }
        for (node, pending) in &assumed.nodes {
            assert!(!pending.assumptions.is_empty(), "{node} kept empty");
            assert!(pending
                .assumptions
                .windows(2)
                .all(|w| w[0].at_ms <= w[1].at_ms));
            if let (Some(r), Some(f)) = (&pending.record, base.get(node)) {
                let added: i64 = pending
                    .assumptions
                    .iter()
                    .map(|a| a.request.get("cpu"))
                    .sum();
                let cpu = |f: &NodeFacts| f.requested.as_ref().unwrap().value.get("cpu");
                assert_eq!(cpu(&r.facts), cpu(f) + added, "{node}");
            }
        }
    }

    proptest::proptest! {
        /// Any order of assumptions, reports and expiries keeps the books: every assumption is
        /// counted once, on one node, and a node's record is its facts plus its assumptions.
        #[test]
        fn the_books_balance_whatever_happens(
            ops in proptest::collection::vec((0u8..4, 0usize..3, 0usize..6, 0u64..3_000), 1..80)
        ) {
            let c = Config::default();
            let names = ["n0", "n1", "n2"];
            let mut base: HashMap<String, NodeFacts> = names
                .iter()
                .map(|n| {
                    let mut f = facts_at(0)["n1"].clone();
                    f.name = n.to_string();
                    (n.to_string(), f)
                })
                .collect();
            let cpu_pod = pod(r#"{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":
                [{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}"#);
            let mut assumed = AssumedPlacements::new();
            let mut now = 1_000u64;
            for (kind, node, pod_i, dt) in ops {
                now += dt;
                match kind {
                    0 | 1 => {
                        let p = named(&cpu_pod, &format!("ns/p{pod_i}"));
                        assumed.assume(names[node], &p, &base, now, &c);
                    }
                    2 => {
                        // The reporter's push: the node's requested observed now (with what
                        // it shows of the pods bound since). Facts are versioned by their
                        // observation time, and a reporter observes one node's requests once
                        // per push: new values come at a later millisecond than the last.
                        now += 1;
                        let f = base.get_mut(names[node]).unwrap();
                        let requested = f.requested.as_mut().unwrap();
                        requested.at_ms = now;
                        *requested.value.get_mut("cpu").unwrap() += 500;
                        f.updated_at_ms = now;
                        assumed.refresh(&base, now, &c);
                    }
                    _ => {
                        assumed.refresh(&base, now + c.assumed.assumed_ttl_ms / 2, &c);
                    }
                }
                check_books(&assumed, &base);
            }
            // Long after, every assumption has expired.
            assumed.refresh(&base, now + c.assumed.assumed_ttl_ms + 10_000, &c);
            proptest::prop_assert!(assumed.is_empty() && assumed.pods.is_empty());
        }
    }

    #[test]
    fn gpus_are_taken_as_the_device_plugins_take_them() {
        let share = |milli| PodGpus {
            cpu_milli: 0,
            num_gpu: 1,
            gpu_milli: milli,
        };
        let whole = |n| PodGpus {
            cpu_milli: 0,
            num_gpu: n,
            gpu_milli: 1000,
        };
        let mut free = vec![1000, 600, 300, 600];
        take_gpus(&mut free, share(300));
        assert_eq!(free, vec![1000, 600, 0, 600], "the fullest GPU it fits");
        take_gpus(&mut free, share(500));
        assert_eq!(free, vec![1000, 100, 0, 600], "lowest index among equals");
        take_gpus(&mut free, whole(1));
        assert_eq!(free, vec![0, 100, 0, 600]);
        take_gpus(&mut free, whole(1));
        assert_eq!(
            free,
            vec![0, 100, 0, 600],
            "no room: facts too old, left alone"
        );
        take_gpus(&mut free, share(700));
        assert_eq!(free, vec![0, 100, 0, 600]);
    }
}
