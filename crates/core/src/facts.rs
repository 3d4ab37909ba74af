//! Node facts: what the in-cluster reporter tells us about each node (`PUT /v1/nodes`), kept by
//! the cluster's Facts Durable Object as one record per node (`facts_shards`). A report is merged into the stored record: identity facts (labels,
//! allocatable) replace the old ones; measurements (requested resources, latency, utilisation)
//! carry the time they were observed, so that readers can ignore them once stale.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

use serde::{Deserialize, Serialize};

use crate::api::nodes::NodeReport;
use crate::config::{LoadModel, NodeKeys, SpotRisk};
use crate::k8s::{parse_resource_list, ResourceAmounts};
use crate::node_labels::LabelReading;
use crate::predict::{Ema, Predictor};

/// A measurement and when it was observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observed<T> {
    pub value: T,
    pub at_ms: u64,
}

impl<T> Observed<T> {
    pub fn fresh(&self, now_ms: u64, ttl_ms: u64) -> Option<&T> {
        (now_ms.saturating_sub(self.at_ms) <= ttl_ms).then_some(&self.value)
    }
}

/// The stored record for one node (in its Facts shard).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFacts {
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Parsed allocatable (cpu in milli, others in units), if ever reported.
    pub allocatable: Option<ResourceAmounts>,
    pub requested: Option<Observed<ResourceAmounts>>,
    pub latency_us: Option<Observed<f64>>,
    /// EMA state of utilisation, and when its newest sample was taken.
    pub load: Option<Observed<Ema>>,
    /// Free milli-GPU of each physical GPU. Absent in records written before it existed.
    #[serde(default)]
    pub gpu_free_milli: Option<Observed<Vec<u32>>>,
    pub updated_at_ms: u64,
}

/// A report that cannot be stored; names the field (`nodes[2].utilisation[0].value`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct FactsError {
    pub field: String,
    pub reason: String,
}

/// How far into the future an observation time may be before we call it a clock error.
const MAX_CLOCK_SKEW_MS: u64 = 5 * 60 * 1000;
/// One GPU, in milli-GPU.
pub const MILLI_PER_GPU: u32 = 1000;
/// More GPUs than any real node has: a longer `gpuFreeMilli` is a reporter bug, not a node.
pub const MAX_GPUS_PER_NODE: usize = 1024;

impl NodeReport {
    /// Checks the report without touching any stored state, so that a bad batch changes nothing.
    /// `field` is the report's path in the batch, e.g. `nodes[3]`.
    pub fn validate(&self, field: &str, now_ms: u64) -> Result<(), FactsError> {
        let fail = |sub: &str, reason: String| {
            Err(FactsError {
                field: format!("{field}.{sub}"),
                reason,
            })
        };
        for (key, list) in [
            ("allocatable", &self.allocatable),
            ("requested", &self.requested),
        ] {
            if let Some(list) = list {
                parse_resource_list(list, &format!("{field}.{key}")).map_err(|e| FactsError {
                    field: e.field.clone(),
                    reason: e.source.to_string(),
                })?;
            }
        }
        if let Some(l) = self.latency_us {
            if !(l.is_finite() && l >= 0.0) {
                return fail(
                    "latencyUs",
                    format!("{l} is not a non-negative number of microseconds"),
                );
            }
        }
        let future = now_ms.saturating_add(MAX_CLOCK_SKEW_MS);
        if self.observed_at_ms.is_some_and(|t| t > future) {
            return fail(
                "observedAtMs",
                "lies more than 5 minutes in the future".into(),
            );
        }
        for (i, s) in self.utilisation.iter().enumerate() {
            if !(s.value.is_finite() && (0.0..=1.0).contains(&s.value)) {
                return fail(
                    &format!("utilisation[{i}].value"),
                    format!("{} is outside 0.0–1.0", s.value),
                );
            }
            if s.at_ms > future {
                return fail(
                    &format!("utilisation[{i}].atMs"),
                    "lies more than 5 minutes in the future".into(),
                );
            }
        }
        if let Some(gpus) = &self.gpu_free_milli {
            if gpus.len() > MAX_GPUS_PER_NODE {
                return fail(
                    "gpuFreeMilli",
                    format!("{} GPUs; at most {MAX_GPUS_PER_NODE} per node", gpus.len()),
                );
            }
            if let Some((j, m)) = gpus.iter().enumerate().find(|(_, m)| **m > MILLI_PER_GPU) {
                return fail(
                    &format!("gpuFreeMilli[{j}]"),
                    format!("{m} milli-GPU is more than one GPU (0–{MILLI_PER_GPU})"),
                );
            }
        }
        Ok(())
    }
}

impl NodeFacts {
    /// Merges a validated report into this record. Utilisation samples not newer than the last
    /// one already folded into the EMA are skipped, so re-sending a batch is harmless.
    pub fn apply(&mut self, report: &NodeReport, now_ms: u64, load_model: &LoadModel) {
        self.name = report.name.to_string();
        let observed_at = report.observed_at_ms.unwrap_or(now_ms);
        if let Some(labels) = &report.labels {
            self.labels = labels.clone();
        }
        if let Some(list) = &report.allocatable {
            self.allocatable = parse_resource_list(list, "allocatable").ok();
        }
        if let Some(list) = &report.requested {
            if let Ok(amounts) = parse_resource_list(list, "requested") {
                self.requested = Some(Observed {
                    value: amounts,
                    at_ms: observed_at,
                });
            }
        }
        if let Some(l) = report.latency_us {
            self.latency_us = Some(Observed {
                value: l,
                at_ms: observed_at,
            });
        }
        if let Some(gpus) = &report.gpu_free_milli {
            self.gpu_free_milli = Some(Observed {
                value: gpus.clone(),
                at_ms: observed_at,
            });
        }
        let mut samples = report.utilisation.clone();
        samples.sort_by_key(|s| s.at_ms);
        let mut load = self.load.take().unwrap_or(Observed {
            value: Ema::new(load_model.ema_alpha),
            at_ms: 0,
        });
        for s in samples {
            if load.value.samples == 0 || s.at_ms > load.at_ms {
                load.value.observe(s.value);
                load.at_ms = s.at_ms;
            }
        }
        self.load = (load.value.samples > 0).then_some(load);
        self.updated_at_ms = now_ms;
    }
}

/// Where the verbs find a candidate's facts, read in place: a map built for one call (tests,
/// the simulator) or a reader's shared copy of the whole cluster (the Worker's isolate), so
/// that a request never copies the records it reads.
pub trait FactsLookup {
    fn get(&self, name: &str) -> Option<&NodeFacts>;

    /// [`FactsLookup::get`] with what the record's labels say under `node_keys` and `spot`: read here, or
    /// borrowed where the lookup keeps a reading beside each record (the Worker's copy,
    /// read again only when a record changes).
    fn get_read(
        &self,
        name: &str,
        node_keys: &NodeKeys,
        spot: &SpotRisk,
    ) -> Option<(&NodeFacts, Cow<'_, LabelReading>)> {
        self.get(name)
            .map(|f| (f, Cow::Owned(LabelReading::of(&f.labels, node_keys, spot))))
    }
}

impl<S: BuildHasher> FactsLookup for HashMap<String, NodeFacts, S> {
    fn get(&self, name: &str) -> Option<&NodeFacts> {
        HashMap::get(self, name)
    }
}

/// A facts record and what its labels say under the config it was read with: the form a
/// long-lived copy keeps (the Worker's isolate), so that the verbs borrow the reading.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadFacts {
    pub facts: NodeFacts,
    pub reading: LabelReading,
}

impl ReadFacts {
    pub fn read(facts: NodeFacts, node_keys: &NodeKeys, spot: &SpotRisk) -> Self {
        let reading = LabelReading::of(&facts.labels, node_keys, spot);
        Self { facts, reading }
    }

    /// The labels read again, under another config.
    pub fn read_again(&mut self, node_keys: &NodeKeys, spot: &SpotRisk) {
        self.reading = LabelReading::of(&self.facts.labels, node_keys, spot);
    }
}

/// Records read under one config: `get_read` hands out their readings whatever keys it is
/// asked with, so the holder reads them again when its config changes.
/// The records a long-lived copy keeps, by node name. Hashed with Fx, not SipHash: a verb looks
/// up every candidate (SipHash was ~200 instructions of a name's ~2,400 in names-mode filter),
/// and only the authenticated reporter chooses the names that are stored.
pub type KeptFacts = HashMap<String, ReadFacts, rustc_hash::FxBuildHasher>;

impl<S: BuildHasher> FactsLookup for HashMap<String, ReadFacts, S> {
    fn get(&self, name: &str) -> Option<&NodeFacts> {
        HashMap::get(self, name).map(|r| &r.facts)
    }

    fn get_read(
        &self,
        name: &str,
        _node_keys: &NodeKeys,
        _spot: &SpotRisk,
    ) -> Option<(&NodeFacts, Cow<'_, LabelReading>)> {
        HashMap::get(self, name).map(|r| (&r.facts, Cow::Borrowed(&r.reading)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::NodeName;

    fn report(json: &str) -> NodeReport {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn merge_keeps_identity_and_timestamps_measurements() {
        let mut f = NodeFacts::default();
        let r = report(
            r#"{"name":"n1","labels":{"aco/gpu-type":"T4"},"allocatable":{"cpu":"8","memory":"32Gi"},
            "requested":{"cpu":"500m"},"latencyUs":120,"observedAtMs":1000,
            "utilisation":[{"atMs":900,"value":0.2},{"atMs":800,"value":0.6}]}"#,
        );
        r.validate("nodes[0]", 2000).unwrap();
        f.apply(&r, 2000, &Default::default());
        assert_eq!(f.labels["aco/gpu-type"], "T4");
        assert_eq!(f.allocatable.as_ref().unwrap().get("cpu"), 8000);
        assert_eq!(f.requested.as_ref().unwrap().value.get("cpu"), 500);
        assert_eq!(
            f.latency_us,
            Some(Observed {
                value: 120.0,
                at_ms: 1000
            })
        );
        // sorted by time: 0.6 then 0.2 → EMA 0.4
        let load = f.load.clone().unwrap();
        assert_eq!(load.at_ms, 900);
        assert!((load.value.forecast().unwrap() - 0.4).abs() < 1e-12);

        // A later report without labels keeps them; a re-sent old sample is not counted twice.
        f.apply(
            &report(r#"{"name":"n1","utilisation":[{"atMs":900,"value":0.2}]}"#),
            3000,
            &Default::default(),
        );
        assert_eq!(f.labels["aco/gpu-type"], "T4");
        assert_eq!(f.load.as_ref().unwrap().value.samples, 2);
    }

    #[test]
    fn gpu_free_milli_is_stored_with_its_observation_time_and_old_records_still_parse() {
        let mut f = NodeFacts::default();
        let r = report(r#"{"name":"n1","observedAtMs":1500,"gpuFreeMilli":[1000,250,0]}"#);
        r.validate("nodes[0]", 2000).unwrap();
        f.apply(&r, 2000, &Default::default());
        assert_eq!(
            f.gpu_free_milli,
            Some(Observed {
                value: vec![1000, 250, 0],
                at_ms: 1500
            })
        );
        // A report without the field keeps the last observation.
        f.apply(
            &report(r#"{"name":"n1","latencyUs":3}"#),
            3000,
            &Default::default(),
        );
        assert_eq!(f.gpu_free_milli.as_ref().unwrap().value, vec![1000, 250, 0]);
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(
            json["gpuFreeMilli"],
            serde_json::json!({"value": [1000, 250, 0], "atMs": 1500})
        );
        // A record written before the field existed.
        let old: NodeFacts = serde_json::from_str(r#"{"name":"n0","labels":{},"allocatable":null,"requested":null,"latencyUs":null,"load":null,"updatedAtMs":5}"#).unwrap();
        assert_eq!(old.gpu_free_milli, None);
        let too_many = NodeReport {
            gpu_free_milli: Some(vec![0; MAX_GPUS_PER_NODE + 1]),
            ..NodeReport::named(NodeName::parse("n").unwrap())
        };
        assert_eq!(
            too_many.validate("nodes[4]", 0).unwrap_err().field,
            "nodes[4].gpuFreeMilli"
        );
        assert!(serde_json::from_str::<NodeReport>(r#"{"name":"n","gpuFreeMilli":[-1]}"#).is_err());
    }

    #[test]
    fn freshness_is_judged_against_the_ttl() {
        let o = Observed {
            value: 1,
            at_ms: 1_000,
        };
        assert_eq!(o.fresh(1_500, 500), Some(&1));
        assert_eq!(o.fresh(1_501, 500), None);
    }

    #[test]
    fn validation_names_the_field() {
        for (json, field) in [
            (
                r#"{"name":"n","allocatable":{"cpu":"x"}}"#,
                "nodes[0].allocatable.cpu",
            ),
            (
                r#"{"name":"n","utilisation":[{"atMs":1,"value":1.5}]}"#,
                "nodes[0].utilisation[0].value",
            ),
            (r#"{"name":"n","latencyUs":-3}"#, "nodes[0].latencyUs"),
            (
                r#"{"name":"n","observedAtMs":99999999999999}"#,
                "nodes[0].observedAtMs",
            ),
            (
                r#"{"name":"n","gpuFreeMilli":[1000,0,1001]}"#,
                "nodes[0].gpuFreeMilli[2]",
            ),
        ] {
            assert_eq!(
                report(json).validate("nodes[0]", 1000).unwrap_err().field,
                field,
                "{json}"
            );
        }
        assert!(serde_json::from_str::<NodeReport>(r#"{"name":"n","latency":3}"#).is_err());
        // The name is typed: a bad one is refused as the report is read, at its path.
        let (path, message) = crate::k8s::parse_json_at::<crate::api::nodes::NodesBatch>(
            r#"{"nodes":[{"name":"ok"},{"name":"Bad_Name"}]}"#,
        )
        .unwrap_err();
        assert_eq!(path.as_deref(), Some("nodes[1].name"));
        assert!(
            message.contains("is not a valid Kubernetes name"),
            "{message}"
        );
    }
}
