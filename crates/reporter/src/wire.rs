//! What the reporter sends the Worker: the JSON of `PUT /v1/nodes`, `POST /v1/placements` and
//! `POST /v1/shadow`. The Worker parses these with `aco_core::facts::NodeReport` and its
//! placement `Report` (both `deny_unknown_fields`); the tests below check every shape against
//! the core's parser (a shadow report's `pod` against the core's `PodView`, what the Worker
//! reads a pod with).

use std::collections::BTreeMap;

use aco_core::colony::{Outcome, OutcomeLabel};
use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

/// One node's facts. Quantities stay Kubernetes text (`"1500m"`, `"32Gi"`); the Worker parses them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub allocatable: BTreeMap<String, String>,
    pub requested: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<f64>,
    /// When `requested` and `latencyUs` were observed (unix ms).
    pub observed_at_ms: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub utilisation: Vec<UtilisationSample>,
    /// Free share of each physical GPU in milli-GPU, where the cluster exposes per-GPU allocation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_free_milli: Option<Vec<u32>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UtilisationSample {
    /// The NodeMetrics sample's own `timestamp` (unix ms), not the time we read it.
    pub at_ms: u64,
    pub value: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NodesBatch {
    pub nodes: Vec<NodeReport>,
    /// Nodes that left the cluster: the Worker forgets their facts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
    /// Nodes that left because their spot capacity was reclaimed ([`crate::reclaim`]); forgotten
    /// like `deleted` (a name may be in both), counted against the node's spot pool.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reclaimed: Vec<String>,
}

/// A confirmed placement, or the later outcome of one (same pod, same node, `outcome` set).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementReport {
    pub pod_uid: String,
    pub namespace: String,
    pub name: String,
    pub tenant: String,
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlacementsBatch {
    pub placements: Vec<PlacementReport>,
}

/// A pod bound by a scheduler the extender does not steer (shadow mode), or its later outcome:
/// the placement fields plus the pod as it was bound (slimmed by [`crate::slim::wire_pod`]), so
/// that the Worker can score it as the tenant's colony would have.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShadowReport<'a> {
    #[serde(flatten)]
    pub placement: &'a PlacementReport,
    pub pod: &'a Pod,
}

/// `POST /v1/shadow`: same envelope as the placements.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ShadowBatch<'a> {
    pub placements: Vec<ShadowReport<'a>>,
}

/// `succeeded` / `failed` as the Worker's placement API spells them.
pub fn outcome_label(success: bool) -> Outcome {
    Outcome::Label(if success {
        OutcomeLabel::Succeeded
    } else {
        OutcomeLabel::Failed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_node() -> NodeReport {
        NodeReport {
            name: "gpu-1".into(),
            labels: BTreeMap::from([("aco/gpu-type".into(), "V100M16".into())]),
            allocatable: BTreeMap::from([
                ("cpu".into(), "96".into()),
                ("memory".into(), "512Gi".into()),
            ]),
            requested: BTreeMap::from([
                ("cpu".into(), "1500m".into()),
                ("nvidia.com/gpu".into(), "2".into()),
            ]),
            latency_us: Some(120.0),
            observed_at_ms: 1_000,
            utilisation: vec![UtilisationSample {
                at_ms: 900,
                value: 0.25,
            }],
            gpu_free_milli: None,
        }
    }

    #[test]
    fn node_reports_parse_and_validate_with_the_workers_own_types() {
        let json = serde_json::to_string(&sample_node()).unwrap();
        let parsed: aco_core::facts::NodeReport = serde_json::from_str(&json).unwrap();
        parsed.validate("nodes[0]", 2_000).unwrap();
        assert_eq!(parsed.name, "gpu-1");
        assert_eq!(parsed.latency_us, Some(120.0));
        assert_eq!(parsed.utilisation.len(), 1);
    }

    #[test]
    fn placements_serialise_in_the_workers_field_names() {
        let p = PlacementReport {
            pod_uid: "u1".into(),
            namespace: "team-a".into(),
            name: "p".into(),
            tenant: "team-a".into(),
            node: "n1".into(),
            outcome: Some(outcome_label(false)),
        };
        let v = serde_json::to_value(PlacementsBatch {
            placements: vec![p],
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"placements":[{"podUid":"u1","namespace":"team-a","name":"p","tenant":"team-a","node":"n1","outcome":"failed"}]})
        );
    }

    #[test]
    fn shadow_reports_are_placements_with_the_pod_as_the_worker_reads_it() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "team-a", "uid": "u1", "labels": {"aco/workload-type": "latency-critical"},
                         "annotations": {"scheduling.aco/latency-target-us": "800"}},
            "spec": {"schedulerName": "default-scheduler", "nodeName": "n1",
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]}
        }))
        .unwrap();
        let pod = crate::slim::wire_pod(&pod);
        let placement = PlacementReport {
            pod_uid: "u1".into(),
            namespace: "team-a".into(),
            name: "p".into(),
            tenant: "team-a".into(),
            node: "n1".into(),
            outcome: None,
        };
        let with_outcome = PlacementReport {
            outcome: Some(outcome_label(true)),
            ..placement.clone()
        };
        let batch = ShadowBatch {
            placements: vec![
                ShadowReport {
                    placement: &placement,
                    pod: &pod,
                },
                ShadowReport {
                    placement: &with_outcome,
                    pod: &pod,
                },
            ],
        };
        let v = serde_json::to_value(&batch).unwrap();
        let items = v["placements"].as_array().unwrap();
        let keys =
            |i: &serde_json::Value| i.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&items[0]),
            ["name", "namespace", "node", "pod", "podUid", "tenant"]
        );
        assert_eq!(
            keys(&items[1]),
            [
                "name",
                "namespace",
                "node",
                "outcome",
                "pod",
                "podUid",
                "tenant"
            ]
        );
        assert_eq!(items[1]["outcome"], "succeeded");
        // The placement fields are those of /v1/placements …
        let mut as_placement = items[1].clone();
        as_placement.as_object_mut().unwrap().remove("pod");
        assert_eq!(as_placement, serde_json::to_value(&with_outcome).unwrap());
        // … and the pod reads as the Worker reads pods (the core's PodView and PodDemand).
        let view: aco_core::k8s::PodView = serde_json::from_value(items[0]["pod"].clone()).unwrap();
        let config = aco_core::config::Config::default();
        let demand = aco_core::demand::PodDemand::from_pod(&view, &config).unwrap();
        assert_eq!(
            (
                demand.key.as_str(),
                demand.tenant.as_str(),
                demand.latency_target_us
            ),
            ("u1", "team-a", Some(800.0))
        );
        assert!(demand.workload.is_latency_critical());
        assert_eq!(demand.request.get("cpu"), 500);
        assert_eq!(items[0]["pod"]["spec"]["nodeName"], "n1");
        assert_eq!(
            items[0]["pod"]["spec"]["schedulerName"],
            "default-scheduler"
        );
    }
}
