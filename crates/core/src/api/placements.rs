//! `POST /v1/placements`: confirmed placements and, later, their outcomes ([`PlacementsBatch`] of
//! [`PlacementReport`]s), and the Worker's reply ([`PlacementsSummary`]). What a report does to
//! the tenant's colony is `crate::colony::report`'s; the Worker's route validates it.

use serde::{Deserialize, Serialize};

use crate::colony::Outcome;
use crate::names::{NodeName, PodKey};

/// A confirmed placement, or the later outcome of one (same pod, same node, `outcome` set).
/// The pod is named by `podUid`, else by `namespace` and `name`; its tenant defaults to the
/// namespace. The reporter always sends all four.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlacementReport {
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
}

impl PlacementReport {
    /// The pod's key in its colony: the UID, else `namespace/name`; `None` when neither is given,
    /// an error when the namespace and name make no valid key.
    pub fn pod_key(&self) -> Option<Result<PodKey, String>> {
        pod_key(
            self.pod_uid.as_ref(),
            self.namespace.as_deref(),
            self.name.as_deref(),
        )
    }
}

/// A report's pod key: its UID (valid as read), else `namespace/name` (the colony's key for the
/// pod; checked here, where it is made from its parts).
pub fn pod_key(
    uid: Option<&PodKey>,
    namespace: Option<&str>,
    name: Option<&str>,
) -> Option<Result<PodKey, String>> {
    match (uid, namespace, name) {
        (Some(uid), _, _) => Some(Ok(uid.clone())),
        (_, Some(ns), Some(name)) if !ns.is_empty() && !name.is_empty() => {
            Some(PodKey::namespaced(ns, name))
        }
        _ => None,
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementsBatch {
    pub placements: Vec<PlacementReport>,
}

/// The reply to `POST /v1/placements` (and to `/v1/bind`'s learning step): what the batch did,
/// summed over its tenants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementsSummary {
    pub received: u64,
    pub deposited: u64,
    pub outcomes: u64,
    pub duplicates: u64,
    pub unknown_pod: u64,
    pub not_a_candidate: u64,
    /// Reports whose pod's decision had not reached its colony yet: held for it, applied when
    /// it arrives (at most `colony_store::HOLD_MS`), else counted as unknown then.
    #[serde(default)]
    pub held: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony::{FailureCause, ObservedOutcome, OutcomeLabel};

    fn named(uid: &str) -> PlacementReport {
        PlacementReport {
            pod_uid: Some(PodKey::parse(uid).unwrap()),
            namespace: Some("team-a".into()),
            name: Some("p".into()),
            tenant: Some("team-a".into()),
            node: NodeName::parse("n1").unwrap(),
            outcome: None,
        }
    }

    #[test]
    fn a_batch_has_fixed_bytes_and_parses_back() {
        let batch = PlacementsBatch {
            placements: vec![
                named("u1"),
                PlacementReport {
                    outcome: Some(Outcome::Label(OutcomeLabel::Failed)),
                    ..named("u2")
                },
                PlacementReport {
                    outcome: Some(Outcome::Observed(ObservedOutcome {
                        quality: 1.0,
                        cost_per_hour: Some(0.5),
                        slowdown: Some(1.25),
                        cause: None,
                    })),
                    ..named("u3")
                },
                PlacementReport {
                    outcome: Some(Outcome::Observed(ObservedOutcome {
                        quality: 0.0,
                        cost_per_hour: None,
                        slowdown: None,
                        cause: Some(FailureCause::NodeGone),
                    })),
                    ..named("u5")
                },
                PlacementReport {
                    outcome: Some(Outcome::Quality(0.75)),
                    ..named("u4")
                },
            ],
        };
        let bytes = concat!(
            r#"{"placements":["#,
            r#"{"podUid":"u1","namespace":"team-a","name":"p","tenant":"team-a","node":"n1"},"#,
            r#"{"podUid":"u2","namespace":"team-a","name":"p","tenant":"team-a","node":"n1","outcome":"failed"},"#,
            r#"{"podUid":"u3","namespace":"team-a","name":"p","tenant":"team-a","node":"n1","outcome":{"quality":1.0,"costPerHour":0.5,"slowdown":1.25}},"#,
            r#"{"podUid":"u5","namespace":"team-a","name":"p","tenant":"team-a","node":"n1","outcome":{"quality":0.0,"cause":"nodeGone"}},"#,
            r#"{"podUid":"u4","namespace":"team-a","name":"p","tenant":"team-a","node":"n1","outcome":0.75}"#,
            "]}"
        );
        assert_eq!(serde_json::to_string(&batch).unwrap(), bytes);
        assert_eq!(
            serde_json::from_str::<PlacementsBatch>(bytes).unwrap(),
            batch
        );
    }

    #[test]
    fn a_report_may_name_its_pod_by_namespace_and_name_alone() {
        let r: PlacementReport =
            serde_json::from_str(r#"{"namespace":"ns","name":"p","node":"n"}"#).unwrap();
        assert_eq!(r.pod_key(), Some(PodKey::parse("ns/p")));
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"namespace":"ns","name":"p","node":"n"}"#
        );
        assert_eq!(named("u1").pod_key(), Some(PodKey::parse("u1")));
        let nameless: PlacementReport = serde_json::from_str(r#"{"node":"n"}"#).unwrap();
        assert_eq!(nameless.pod_key(), None);
        // An empty UID is an absent one (the key is then namespace/name), as before.
        let r: PlacementReport =
            serde_json::from_str(r#"{"podUid":"","namespace":"ns","name":"p","node":"n"}"#)
                .unwrap();
        assert_eq!(
            (r.pod_uid.as_ref(), r.pod_key()),
            (None, Some(PodKey::parse("ns/p")))
        );
        // Parts that make no key are refused where the key is made, with the validator's words.
        let r: PlacementReport =
            serde_json::from_str(r#"{"namespace":"ns","name":"a b","node":"n"}"#).unwrap();
        assert!(r
            .pod_key()
            .unwrap()
            .unwrap_err()
            .contains("is not a pod UID"));
        // A bad UID or node is refused as the body is read, naming the validator's reason.
        for (bad, needle) in [
            (r#"{"podUid":"a b","node":"n"}"#, "is not a pod UID"),
            (
                r#"{"podUid":"u","node":"Not_A_Node"}"#,
                "is not a valid Kubernetes name",
            ),
        ] {
            let e = serde_json::from_str::<PlacementReport>(bad).unwrap_err();
            assert!(e.to_string().contains(needle), "{e}");
        }
        assert!(serde_json::from_str::<PlacementReport>(r#"{"node":"n","pod":{}}"#).is_err());
    }

    #[test]
    fn the_summary_has_fixed_bytes_and_parses_back() {
        let s = PlacementsSummary {
            received: 7,
            deposited: 2,
            outcomes: 1,
            duplicates: 1,
            unknown_pod: 1,
            not_a_candidate: 1,
            held: 1,
        };
        let bytes = r#"{"received":7,"deposited":2,"outcomes":1,"duplicates":1,"unknownPod":1,"notACandidate":1,"held":1}"#;
        assert_eq!(serde_json::to_string(&s).unwrap(), bytes);
        assert_eq!(serde_json::from_str::<PlacementsSummary>(bytes).unwrap(), s);
    }
}
