//! `POST /v1/shadow`: pods bound by a scheduler the extender does not steer, or their later
//! outcomes ([`ShadowBatch`] of [`ShadowReport`]s), and the Worker's reply
//! ([`ShadowBatchSummary`]). How a pod is scored is `crate::shadow`'s.

use serde::{Deserialize, Serialize};

use super::placements::{pod_key, PlacementReport};
use crate::colony::Outcome;
use crate::names::{NodeName, PodKey};

/// A placement report (the fields of [`PlacementReport`], in its order) plus the pod as it was
/// bound, so that the Worker can score it as the tenant's colony would have. `P` is the pod as
/// its sender holds it (the reporter: a slimmed `k8s_openapi` Pod; the Worker reads JSON, then
/// `crate::k8s::PodView`). The fields are written out rather than flattened: serde cannot
/// refuse unknown fields of a struct with a flattened part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShadowReport<P = serde_json::Value> {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::names::empty_as_none"
    )]
    pub pod_uid: Option<PodKey>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub node: NodeName,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Required by the Worker (a 400 naming it otherwise); optional here so that its absence is
    /// reported by name rather than as a parse error of the whole batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<P>,
}

impl<P> ShadowReport<P> {
    /// The shadow report of `placement` carrying `pod`.
    pub fn of(placement: &PlacementReport, pod: P) -> Self {
        let PlacementReport {
            pod_uid,
            namespace,
            name,
            tenant,
            node,
            outcome,
        } = placement.clone();
        ShadowReport {
            pod_uid,
            namespace,
            name,
            tenant,
            node,
            outcome,
            pod: Some(pod),
        }
    }

    /// As [`PlacementReport::pod_key`].
    pub fn pod_key(&self) -> Option<Result<PodKey, String>> {
        pod_key(
            self.pod_uid.as_ref(),
            self.namespace.as_deref(),
            self.name.as_deref(),
        )
    }
}

/// `POST /v1/shadow`: same envelope as the placements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShadowBatch<P = serde_json::Value> {
    pub placements: Vec<ShadowReport<P>>,
}

/// The reply to `POST /v1/shadow`, summed over the batch's tenants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowBatchSummary {
    pub received: u64,
    pub scored: u64,
    pub outcomes: u64,
    pub duplicates: u64,
    pub unknown_pod: u64,
    pub not_feasible: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony::OutcomeLabel;

    fn placement(outcome: Option<Outcome>) -> PlacementReport {
        PlacementReport {
            pod_uid: Some(PodKey::parse("u1").unwrap()),
            namespace: Some("team-a".into()),
            name: Some("p".into()),
            tenant: Some("team-a".into()),
            node: NodeName::parse("n1").unwrap(),
            outcome,
        }
    }

    #[test]
    fn a_batch_has_fixed_bytes_and_parses_back() {
        let pod = serde_json::json!({"metadata": {"name": "p", "namespace": "team-a", "uid": "u1"},
                                     "spec": {"nodeName": "n1"}});
        let batch = ShadowBatch {
            placements: vec![
                ShadowReport::of(&placement(None), pod.clone()),
                ShadowReport::of(
                    &placement(Some(Outcome::Label(OutcomeLabel::Succeeded))),
                    pod,
                ),
            ],
        };
        let pod_bytes =
            r#"{"metadata":{"name":"p","namespace":"team-a","uid":"u1"},"spec":{"nodeName":"n1"}}"#;
        let bytes = format!(
            concat!(
                r#"{{"placements":["#,
                r#"{{"podUid":"u1","namespace":"team-a","name":"p","tenant":"team-a","node":"n1","pod":{pod}}},"#,
                r#"{{"podUid":"u1","namespace":"team-a","name":"p","tenant":"team-a","node":"n1","outcome":"succeeded","pod":{pod}}}"#,
                "]}}"
            ),
            pod = pod_bytes
        );
        assert_eq!(serde_json::to_string(&batch).unwrap(), bytes);
        assert_eq!(serde_json::from_str::<ShadowBatch>(&bytes).unwrap(), batch);
    }

    #[test]
    fn a_shadow_report_without_the_placement_fields_is_the_placement_report() {
        let shadow = ShadowReport::of(&placement(None), serde_json::json!({}));
        let mut v = serde_json::to_value(&shadow).unwrap();
        v.as_object_mut().unwrap().remove("pod");
        assert_eq!(v, serde_json::to_value(placement(None)).unwrap());
        assert_eq!(shadow.pod_key(), Some(PodKey::parse("u1")));
        let podless: ShadowReport = serde_json::from_str(r#"{"node":"n"}"#).unwrap();
        assert_eq!(podless.pod, None);
    }

    #[test]
    fn the_summary_has_fixed_bytes_and_parses_back() {
        let s = ShadowBatchSummary {
            received: 5,
            scored: 3,
            outcomes: 1,
            duplicates: 1,
            unknown_pod: 0,
            not_feasible: 1,
        };
        let bytes = r#"{"received":5,"scored":3,"outcomes":1,"duplicates":1,"unknownPod":0,"notFeasible":1}"#;
        assert_eq!(serde_json::to_string(&s).unwrap(), bytes);
        assert_eq!(
            serde_json::from_str::<ShadowBatchSummary>(bytes).unwrap(),
            s
        );
    }
}

/// `GET /v1/tenants/{t}/shadow`: the tenant's shadow summary as the operator reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowSummaryReply {
    pub tenant: String,
    pub cluster: String,
    pub pods: u64,
    pub agreements: u64,
    pub agreement_rate: f64,
    pub chosen_cost_per_hour: f64,
    pub colony_cost_per_hour: f64,
    pub saving_per_hour: f64,
    pub saving_fraction: f64,
    pub latency_critical: u64,
    pub latency_critical_on_hot_nodes: HotNodes,
    pub not_feasible: u64,
}

/// Latency-critical pods on a hot node: where they went, where the colony would have put them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HotNodes {
    pub chosen: u64,
    pub colony: u64,
}

impl ShadowSummaryReply {
    pub fn of(tenant: &str, cluster: &str, s: &crate::shadow::ShadowSummary) -> Self {
        ShadowSummaryReply {
            tenant: tenant.to_string(),
            cluster: cluster.to_string(),
            pods: s.pods,
            agreements: s.agreements,
            agreement_rate: s.agreement_rate(),
            chosen_cost_per_hour: s.chosen_cost_per_hour,
            colony_cost_per_hour: s.colony_cost_per_hour,
            saving_per_hour: s.saving_per_hour(),
            saving_fraction: s.saving_fraction(),
            latency_critical: s.latency_critical,
            latency_critical_on_hot_nodes: HotNodes {
                chosen: s.latency_critical_on_hot_chosen,
                colony: s.latency_critical_on_hot_colony,
            },
            not_feasible: s.not_feasible,
        }
    }
}
