//! The view of one candidate node that the filter and the heuristic work on: the node object
//! (when kube-scheduler sent it) overlaid with fresh facts (from the cluster's Facts Durable Object). Stale measurements are dropped
//! here, in one place, so that every rule fails open the same way.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::config::{Config, LoadModel, NodeKeys};
use crate::facts::{NodeFacts, Observed};
use crate::k8s::{parse_resource_list, NodeView, ResourceAmounts, ResourceError};
use crate::node_labels::{LabelReading, NodeProfile};
use crate::predict::{spike_probability, Predictor};

/// Name, labels and resource amounts are borrowed from the request and the facts it was
/// assembled from (a verb reads thousands of candidates, each with tens of labels and two
/// maps of amounts); [`NodeState::into_owned`] for a state kept beyond them.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeState<'a> {
    pub name: Cow<'a, str>,
    pub labels: Cow<'a, BTreeMap<String, String>>,
    /// Unknown when only a name was sent and no facts carry allocatable. Owned when parsed
    /// from the node object kube-scheduler sent, else borrowed from the facts.
    pub allocatable: Option<Cow<'a, ResourceAmounts>>,
    /// Resources already requested by pods on the node (fresh facts only).
    pub requested: Option<Cow<'a, ResourceAmounts>>,
    /// Network latency in µs: fresh fact, else label.
    pub latency_us: Option<f64>,
    /// Forecast utilisation and spike probability (fresh facts only).
    pub load: Option<LoadOutlook>,
    /// Free milli-GPU of each physical GPU (fresh facts only). Not scored yet.
    pub gpu_free_milli: Option<Vec<u32>>,
    /// True when the node had facts but some were too old to use.
    pub stale_facts: bool,
    /// True when kube-scheduler sent only the name and we hold no facts for it at all.
    pub unknown: bool,
    /// What its labels say (price, spot pool): read once per facts record where the facts
    /// lookup keeps it (borrowed), else here.
    pub profile: Cow<'a, NodeProfile>,
    /// Share of allocatable already requested (the largest over CPU, memory and GPUs) from fresh
    /// facts; `Some(0.0)` is a node known idle.
    pub committed_share: Option<f64>,
}

/// Resources whose shares matter: CPU, memory and GPUs.
pub fn counted(name: &str, keys: &NodeKeys) -> bool {
    counted_name(name, keys).is_some()
}

/// [`counted`], answering with the name as spelled here or in the config: a borrow that
/// outlives the pod the name was read from.
pub fn counted_name<'c>(name: &str, keys: &'c NodeKeys) -> Option<&'c str> {
    match name {
        "cpu" => Some("cpu"),
        "memory" => Some("memory"),
        _ => keys
            .gpu_resources
            .iter()
            .map(String::as_str)
            .find(|g| *g == name),
    }
}

/// `amount` as a share of `allocatable`, 0–1 (1 when nothing is allocatable).
pub fn share(amount: i64, allocatable: i64) -> f64 {
    if allocatable <= 0 {
        1.0
    } else {
        (amount as f64 / allocatable as f64).clamp(0.0, 1.0)
    }
}

/// The largest share of `allocatable` that `requested` takes over the counted resources.
pub fn committed_share(
    allocatable: Option<&ResourceAmounts>,
    requested: Option<&ResourceAmounts>,
    keys: &NodeKeys,
) -> Option<f64> {
    let (alloc, requested) = (allocatable?, requested?);
    Some(
        requested
            .iter()
            .filter(|(name, amount)| *amount > 0 && counted(name, keys))
            .map(|(name, amount)| share(amount, alloc.get(name)))
            .fold(0.0, f64::max),
    )
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadOutlook {
    pub predicted_utilisation: f64,
    pub spike_probability: f64,
}

impl LoadOutlook {
    /// What a predictor of the node's utilisation foresees (`None` before its first sample).
    pub fn of<P: Predictor + ?Sized>(predictor: &P, model: &LoadModel) -> Option<LoadOutlook> {
        predictor.forecast().map(|u| LoadOutlook {
            predicted_utilisation: u,
            spike_probability: spike_probability(
                u,
                predictor.volatility(),
                model.spike_threshold,
                model.spike_band,
            ),
        })
    }
}

/// The value of a measurement if it is fresh; flags `stale` when one exists but is too old.
fn fresh<'f, T>(
    observed: Option<&'f Observed<T>>,
    now_ms: u64,
    ttl_ms: u64,
    stale: &mut bool,
) -> Option<&'f T> {
    let observed = observed?;
    let value = observed.fresh(now_ms, ttl_ms);
    *stale |= value.is_none();
    value
}

/// [`fresh`], copied out (for the small values a state owns).
fn keep_fresh<T: Clone>(
    observed: Option<&Observed<T>>,
    now_ms: u64,
    ttl_ms: u64,
    stale: &mut bool,
) -> Option<T> {
    fresh(observed, now_ms, ttl_ms, stale).cloned()
}

/// The labels of a node known by name only and without facts.
static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl<'a> NodeState<'a> {
    /// Builds the state from the node object (full-`Nodes` mode) and/or its facts.
    /// `field` names the node in errors (e.g. `Nodes.items[3]`).
    /// Takes the whole Config: it reads four groups (node keys, spot pools, facts freshness, load).
    pub fn assemble(
        name: &'a str,
        node: Option<&'a NodeView>,
        facts: Option<&'a NodeFacts>,
        now_ms: u64,
        config: &Config,
        field: &str,
    ) -> Result<Self, ResourceError> {
        Self::assemble_read(name, node, facts, None, now_ms, config, field)
    }

    /// [`NodeState::assemble`] with the facts' labels already read
    /// ([`crate::facts::FactsLookup::get_read`]), used when no node object was sent (its
    /// labels win); `None` reads whichever labels count here.
    pub fn assemble_read(
        name: &'a str,
        node: Option<&'a NodeView>,
        facts: Option<&'a NodeFacts>,
        facts_reading: Option<Cow<'a, LabelReading>>,
        now_ms: u64,
        config: &Config,
        field: &str,
    ) -> Result<Self, ResourceError> {
        let ttl = config.facts.facts_ttl_ms;
        let mut labels = facts.map_or(&NO_LABELS, |f| &f.labels);
        let mut allocatable = facts
            .and_then(|f| f.allocatable.as_ref())
            .map(Cow::Borrowed);
        let mut reading = facts_reading;
        if let Some(node) = node {
            // The object kube-scheduler sent is authoritative for identity.
            labels = &node.metadata.labels;
            // The field's path is formatted only for an error: this runs per candidate.
            allocatable = Some(Cow::Owned(
                parse_resource_list(&node.status.allocatable, "").map_err(|mut e| {
                    e.field = format!("{field}.status.allocatable{}", e.field);
                    e
                })?,
            ));
            reading = None;
        }
        let reading = reading.unwrap_or_else(|| {
            Cow::Owned(LabelReading::of(labels, &config.node_keys, &config.spot))
        });
        let (profile, label_latency) = match reading {
            Cow::Borrowed(r) => (Cow::Borrowed(&r.profile), r.latency_us),
            Cow::Owned(r) => (Cow::Owned(r.profile), r.latency_us),
        };
        let mut stale = false;
        let requested = facts
            .and_then(|f| fresh(f.requested.as_ref(), now_ms, ttl, &mut stale))
            .map(Cow::Borrowed);
        let fact_latency =
            facts.and_then(|f| keep_fresh(f.latency_us.as_ref(), now_ms, ttl, &mut stale));
        let load = facts.and_then(|f| keep_fresh(f.load.as_ref(), now_ms, ttl, &mut stale));
        let gpu_free_milli =
            facts.and_then(|f| keep_fresh(f.gpu_free_milli.as_ref(), now_ms, ttl, &mut stale));
        let latency_us = fact_latency.or(label_latency);
        let load = load.and_then(|ema| LoadOutlook::of(&ema, &config.load));
        Ok(NodeState {
            name: Cow::Borrowed(name),
            profile,
            committed_share: committed_share(
                allocatable.as_deref(),
                requested.as_deref(),
                &config.node_keys,
            ),
            labels: Cow::Borrowed(labels),
            allocatable,
            requested,
            latency_us,
            load,
            gpu_free_milli,
            stale_facts: stale,
            unknown: node.is_none() && facts.is_none(),
        })
    }

    /// The same state owning its name and labels, to be kept beyond the request or facts.
    pub fn into_owned(self) -> NodeState<'static> {
        NodeState {
            name: Cow::Owned(self.name.into_owned()),
            labels: Cow::Owned(self.labels.into_owned()),
            allocatable: self.allocatable.map(|a| Cow::Owned(a.into_owned())),
            requested: self.requested.map(|r| Cow::Owned(r.into_owned())),
            latency_us: self.latency_us,
            load: self.load,
            gpu_free_milli: self.gpu_free_milli,
            stale_facts: self.stale_facts,
            unknown: self.unknown,
            profile: Cow::Owned(self.profile.into_owned()),
            committed_share: self.committed_share,
        }
    }

    /// The node's GPU model, from the first configured GPU-type label present (read once, by
    /// [`NodeProfile::of`]: the filter and the heuristic ask for it per candidate).
    pub fn gpu_model(&self) -> Option<&str> {
        self.profile.gpu_model.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::nodes::NodeReport;

    fn facts(json: &str, now: u64) -> NodeFacts {
        let r: NodeReport = serde_json::from_str(json).unwrap();
        let mut f = NodeFacts::default();
        f.apply(&r, now, &Default::default());
        f
    }

    #[test]
    fn fresh_fact_latency_wins_over_label_and_stale_falls_back() {
        let node: NodeView = serde_json::from_str(
            r#"{"metadata":{"name":"n","labels":{"aco/latency-us":"500"}},"status":{"allocatable":{"cpu":"4"}}}"#,
        )
        .unwrap();
        let f = facts(r#"{"name":"n","latencyUs":80,"observedAtMs":1000}"#, 1000);
        let c = Config::default();
        let s = NodeState::assemble("n", Some(&node), Some(&f), 2000, &c, "x").unwrap();
        assert_eq!(s.latency_us, Some(80.0));
        assert!(!s.stale_facts);
        let later = 1000 + c.facts.facts_ttl_ms + 1;
        let s = NodeState::assemble("n", Some(&node), Some(&f), later, &c, "x").unwrap();
        assert_eq!(s.latency_us, Some(500.0));
        assert!(s.stale_facts);
    }

    #[test]
    fn names_only_uses_fact_identity_and_flags_unknown_nodes() {
        let f = facts(
            r#"{"name":"n","labels":{"aco/gpu-type":"T4"},"allocatable":{"cpu":"4"},"utilisation":[{"atMs":10,"value":0.95}]}"#,
            10,
        );
        let c = Config::default();
        let s = NodeState::assemble("n", None, Some(&f), 20, &c, "x").unwrap();
        assert_eq!(s.gpu_model(), Some("T4"));
        assert_eq!(s.allocatable.unwrap().get("cpu"), 4000);
        assert!(s.load.unwrap().spike_probability > 0.5);
        let s = NodeState::assemble("m", None, None, 20, &c, "x").unwrap();
        assert!(s.unknown);
    }

    #[test]
    fn gpu_free_milli_is_kept_while_fresh() {
        let f = facts(
            r#"{"name":"n","observedAtMs":10,"gpuFreeMilli":[500,1000]}"#,
            10,
        );
        let c = Config::default();
        let s = NodeState::assemble("n", None, Some(&f), 20, &c, "x").unwrap();
        assert_eq!(
            (s.gpu_free_milli, s.stale_facts),
            (Some(vec![500, 1000]), false)
        );
        let s =
            NodeState::assemble("n", None, Some(&f), 11 + c.facts.facts_ttl_ms, &c, "x").unwrap();
        assert_eq!((s.gpu_free_milli, s.stale_facts), (None, true));
    }

    #[test]
    fn a_kept_label_reading_gives_the_state_assemble_reads_and_a_node_object_overrides_it() {
        let c = Config::default();
        let f = facts(
            r#"{"name":"n","labels":{"aco/gpu-type":"T4","aco/latency-us":"300","aco/cost-per-hour":"2.5"},"allocatable":{"cpu":"4"}}"#,
            10,
        );
        let read = NodeState::assemble("n", None, Some(&f), 20, &c, "x").unwrap();
        let reading = LabelReading::of(&f.labels, &c.node_keys, &c.spot);
        let with_reading = |node| {
            let reading = Some(Cow::Borrowed(&reading));
            NodeState::assemble_read("n", node, Some(&f), reading, 20, &c, "x").unwrap()
        };
        let kept = with_reading(None);
        assert_eq!(kept, read);
        assert!(matches!(kept.profile, Cow::Borrowed(_)));
        assert_eq!(
            (
                kept.gpu_model(),
                kept.latency_us,
                kept.profile.cost_per_hour
            ),
            (Some("T4"), Some(300.0), Some(2.5))
        );
        // The object kube-scheduler sent names another model: its labels count, not the reading.
        let node: NodeView = serde_json::from_str(
            r#"{"metadata":{"name":"n","labels":{"aco/gpu-type":"A100"}},"status":{"allocatable":{"cpu":"4"}}}"#,
        )
        .unwrap();
        let s = with_reading(Some(&node));
        assert_eq!(
            (s.gpu_model(), s.latency_us, s.profile.cost_per_hour),
            (Some("A100"), None, None)
        );
    }
}
