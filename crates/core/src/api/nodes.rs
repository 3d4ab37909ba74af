//! `PUT /v1/nodes`: node facts from the reporter ([`NodesBatch`] of [`NodeReport`]s) and the
//! Worker's reply ([`NodesReply`]). Validated by `NodeReport::validate` / `NodesBatch::validate`
//! and folded into the stored record by `NodeFacts::apply` (`crate::facts`, `crate::facts_shards`).
//!
//! Quantities stay Kubernetes text ([`QuantityText`], always sent as a JSON string: `"1500m"`,
//! `"32Gi"`); the Worker parses them exactly. A bare JSON number is accepted on the way in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::k8s::{unique_keys_opt, RawResourceList};
use crate::names::NodeName;

#[cfg(test)]
use crate::k8s::QuantityText;

/// One node in a `PUT /v1/nodes` batch. Every field but `name` is optional: a push on a pod
/// event carries only `requested`, the first report of a node its identity too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeReport {
    pub name: NodeName,
    /// The node labels the Worker reads (the reporter sends only those).
    #[serde(
        default,
        deserialize_with = "unique_keys_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(
        default,
        deserialize_with = "unique_keys_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub allocatable: Option<RawResourceList>,
    #[serde(
        default,
        deserialize_with = "unique_keys_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub requested: Option<RawResourceList>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<f64>,
    /// When `requested`/`latencyUs` were observed (unix ms); defaults to the time of the request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub utilisation: Vec<UtilisationSample>,
    /// Free share of each physical GPU in milli-GPU (0–1000, index = GPU index), as observed at
    /// `observedAtMs`. Read by the fragmentation factor of η (`heuristic/fragmentation.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_free_milli: Option<Vec<u32>>,
}

impl NodeReport {
    /// A report of `name` alone; set what it carries with `NodeReport { …, ..named(…) }`.
    pub fn named(name: NodeName) -> Self {
        NodeReport {
            name,
            labels: None,
            allocatable: None,
            requested: None,
            latency_us: None,
            observed_at_ms: None,
            utilisation: Vec::new(),
            gpu_free_milli: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UtilisationSample {
    /// The sample's own time (a NodeMetrics `timestamp`, unix ms), not the time it was read.
    pub at_ms: u64,
    /// Fraction of the node's capacity in use, 0.0–1.0.
    pub value: f64,
}

/// `PUT /v1/nodes`: reports, and the names of nodes that left the cluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodesBatch {
    #[serde(default)]
    pub nodes: Vec<NodeReport>,
    /// Nodes that no longer exist: their facts are forgotten.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<NodeName>,
    /// Nodes that left because their spot capacity was reclaimed (deleted while pods were bound
    /// to them, not drained first): forgotten like `deleted` (a name may be in both), and
    /// counted against the node's spot pool, whose interruption rate η's spot risk learns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reclaimed: Vec<NodeName>,
}

/// The reply to `PUT /v1/nodes` (the cluster's Facts object answers it; the Worker passes it on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodesReply {
    /// Distinct nodes reported.
    pub stored: usize,
    /// Distinct names deleted.
    pub forgotten: usize,
    /// SQLite rows this batch wrote (0 when nothing changed materially).
    pub rows_written: u64,
    /// Nodes the cluster has after the batch.
    pub nodes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> NodeName {
        NodeName::parse(name).unwrap()
    }

    fn text(pairs: &[(&str, &str)]) -> RawResourceList {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), QuantityText(v.to_string())))
            .collect()
    }

    /// What the reporter sends for a node it knows everything about.
    fn full_report() -> NodeReport {
        NodeReport {
            name: node("gpu-1"),
            labels: Some(BTreeMap::from([("aco/gpu-type".into(), "V100M16".into())])),
            allocatable: Some(text(&[("cpu", "96"), ("memory", "512Gi")])),
            requested: Some(text(&[("cpu", "1500m"), ("nvidia.com/gpu", "2")])),
            latency_us: Some(120.0),
            observed_at_ms: Some(1_000),
            utilisation: vec![UtilisationSample {
                at_ms: 900,
                value: 0.25,
            }],
            gpu_free_milli: Some(vec![1000, 250]),
        }
    }

    const FULL_REPORT: &str = r#"{"name":"gpu-1","labels":{"aco/gpu-type":"V100M16"},"allocatable":{"cpu":"96","memory":"512Gi"},"requested":{"cpu":"1500m","nvidia.com/gpu":"2"},"latencyUs":120.0,"observedAtMs":1000,"utilisation":[{"atMs":900,"value":0.25}],"gpuFreeMilli":[1000,250]}"#;

    #[test]
    fn a_full_node_report_has_fixed_bytes_and_parses_back() {
        assert_eq!(serde_json::to_string(&full_report()).unwrap(), FULL_REPORT);
        let back: NodeReport = serde_json::from_str(FULL_REPORT).unwrap();
        assert_eq!(back, full_report());
    }

    #[test]
    fn absent_fields_are_left_out_and_read_back_as_absent() {
        // The reporter's push on a pod event: only what changed.
        let requested_only = NodeReport {
            requested: Some(text(&[("cpu", "500m")])),
            observed_at_ms: Some(7),
            ..NodeReport::named(node("n1"))
        };
        let bytes = r#"{"name":"n1","requested":{"cpu":"500m"},"observedAtMs":7}"#;
        assert_eq!(serde_json::to_string(&requested_only).unwrap(), bytes);
        assert_eq!(
            serde_json::from_str::<NodeReport>(bytes).unwrap(),
            requested_only
        );
        // An empty sample list written out (as older simulators did) reads as none sent.
        let with_empty: NodeReport = serde_json::from_str(
            r#"{"name":"n1","requested":{"cpu":"500m"},"observedAtMs":7,"utilisation":[]}"#,
        )
        .unwrap();
        assert_eq!(with_empty, requested_only);
    }

    #[test]
    fn quantities_keep_their_text_and_a_bare_number_reads_as_its_text() {
        let r: NodeReport =
            serde_json::from_str(r#"{"name":"n","allocatable":{"cpu":8,"memory":"16Gi"}}"#)
                .unwrap();
        assert_eq!(
            r.allocatable,
            Some(text(&[("cpu", "8"), ("memory", "16Gi")]))
        );
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"name":"n","allocatable":{"cpu":"8","memory":"16Gi"}}"#
        );
    }

    #[test]
    fn a_batch_has_fixed_bytes_and_parses_back() {
        let batch = NodesBatch {
            nodes: vec![full_report()],
            deleted: vec![node("old-1")],
            reclaimed: vec![node("spot-2")],
        };
        let bytes =
            format!(r#"{{"nodes":[{FULL_REPORT}],"deleted":["old-1"],"reclaimed":["spot-2"]}}"#);
        assert_eq!(serde_json::to_string(&batch).unwrap(), bytes);
        assert_eq!(serde_json::from_str::<NodesBatch>(&bytes).unwrap(), batch);
        // Empty lists of names are left out; `nodes` is always written, and optional to read.
        let empty = NodesBatch::default();
        assert_eq!(serde_json::to_string(&empty).unwrap(), r#"{"nodes":[]}"#);
        let reclaimed_only: NodesBatch = serde_json::from_str(r#"{"reclaimed":["s"]}"#).unwrap();
        assert_eq!(reclaimed_only.reclaimed, ["s"]);
        assert!(reclaimed_only.nodes.is_empty());
    }

    #[test]
    fn the_reply_has_fixed_bytes_and_parses_back() {
        let reply = NodesReply {
            stored: 2,
            forgotten: 1,
            rows_written: 3,
            nodes: 40,
        };
        let bytes = r#"{"stored":2,"forgotten":1,"rowsWritten":3,"nodes":40}"#;
        assert_eq!(serde_json::to_string(&reply).unwrap(), bytes);
        assert_eq!(serde_json::from_str::<NodesReply>(bytes).unwrap(), reply);
    }

    #[test]
    fn unknown_fields_and_repeated_keys_are_refused() {
        assert!(serde_json::from_str::<NodeReport>(r#"{"name":"n","latency":3}"#).is_err());
        assert!(serde_json::from_str::<NodesBatch>(r#"{"nodes":[],"gone":[]}"#).is_err());
        // Names are typed: a bad one is refused as the batch is read, with the validator's words.
        for bad in [
            r#"{"nodes":[{"name":"Bad_Name"}]}"#,
            r#"{"deleted":["a","Bad_Name"]}"#,
        ] {
            let e = serde_json::from_str::<NodesBatch>(bad).unwrap_err();
            assert!(
                e.to_string().contains("is not a valid Kubernetes name"),
                "{e}"
            );
        }
        assert!(
            serde_json::from_str::<NodeReport>(r#"{"name":"n","labels":{"a":"1","a":"2"}}"#)
                .is_err()
        );
    }
}
