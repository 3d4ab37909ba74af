//! What one placement report does, given what the colony remembers about the pod.
//!
//! The in-cluster reporter delivers at least once and re-derives its reports after a restart, so
//! the same placement, and the same outcome, may arrive any number of times. Every transition
//! here is idempotent per pod key (pod UID, else `namespace/name`):
//!
//! | remembered | report | effect |
//! |---|---|---|
//! | decision | any | decision → confirmed; an outcome with it deposited on the node's trail |
//! | confirmed, no outcome yet | no outcome | duplicate: nothing |
//! | confirmed, no outcome yet | outcome, same node | deposited on the node's trail, once |
//! | confirmed, no outcome yet | outcome, other node | not a candidate: nothing |
//! | confirmed, outcome recorded | any | duplicate: nothing |
//! | nothing | any | unknown pod: nothing (we never scored it, or it expired) |
//!
//! Only an outcome deposits: a placement says where kube-scheduler bound the pod, which the
//! colony's own scores largely decided, and a trail fed by placements would reinforce itself.
//!
//! A decision always wins over a confirmation: a new decision for the key means the pod was
//! scheduled again (e.g. a StatefulSet pod recreated under the same name).

use serde::{Deserialize, Serialize};

use super::{Confirmation, Decision, Outcome, TenantColony};
use crate::config::CostModel;

/// A placement the colony has learnt from, remembered for `CONFIRMED_TTL_MS` so that replays
/// and the pod's later outcome are recognised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Confirmed {
    /// The node the placement was confirmed on; a later outcome is that node's.
    pub node: String,
    pub confirmed_ms: u64,
    /// The pod's outcome has already been deposited on the node's trail. (Records stored when
    /// placements deposited also carry `depositQuality` and `depositEpoch`, ignored.)
    pub outcome_recorded: bool,
}

/// What the colony remembers about one pod key (unexpired entries only).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodRecord {
    pub decision: Option<Decision>,
    pub confirmed: Option<Confirmed>,
}

/// What one report did.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportEffect {
    /// The first report of a remembered decision: the placement confirmed. `outcome` is the
    /// quality the report carried, if any (deposited on the node's trail).
    Placed {
        node: String,
        exact: bool,
        outcome: Option<f64>,
    },
    /// The later outcome of a confirmed placement, of quality `quality`: deposited on the
    /// node's trail.
    OutcomeRecorded { node: String, quality: f64 },
    /// Already counted: nothing changed.
    Duplicate,
    /// Never scored by this colony (or forgotten after its TTL): nothing changed.
    UnknownPod,
    /// The report names a node that cannot be the pod's: nothing changed.
    NotACandidate,
}

impl TenantColony {
    /// Applies one report for a pod whose remembered state is `record`, updating both the colony
    /// and `record` (which the caller persists). An invalid outcome is an error and changes nothing.
    pub fn report(
        &mut self,
        record: &mut PodRecord,
        node: &str,
        outcome: Option<Outcome>,
        now_ms: u64,
        cost: &CostModel,
    ) -> Result<ReportEffect, String> {
        let quality = outcome.map(Outcome::quality).transpose()?;
        if let Some(decision) = &record.decision {
            return Ok(
                match self.confirm_decision(decision, node, outcome, now_ms, cost)? {
                    Confirmation::Confirmed { node, exact } => {
                        record.decision = None;
                        record.confirmed = Some(Confirmed {
                            node: node.clone(),
                            confirmed_ms: now_ms,
                            outcome_recorded: quality.is_some(),
                        });
                        ReportEffect::Placed {
                            node,
                            exact,
                            outcome: quality,
                        }
                    }
                    Confirmation::NotACandidate => ReportEffect::NotACandidate,
                },
            );
        }
        let Some(confirmed) = &mut record.confirmed else {
            self.counters.unknown_placements += 1;
            return Ok(ReportEffect::UnknownPod);
        };
        match quality.zip(outcome) {
            Some((q, o)) if !confirmed.outcome_recorded => {
                if confirmed.node != node {
                    self.counters.non_candidate_placements += 1;
                    return Ok(ReportEffect::NotACandidate);
                }
                self.record_outcome(&confirmed.node, q, o, now_ms, cost);
                self.counters.late_outcomes += 1;
                confirmed.outcome_recorded = true;
                Ok(ReportEffect::OutcomeRecorded {
                    node: confirmed.node.clone(),
                    quality: q,
                })
            }
            _ => {
                self.counters.duplicate_reports += 1;
                Ok(ReportEffect::Duplicate)
            }
        }
    }

    /// One observed outcome of quality `q` on `node`, deposited on the node's trail: `q`
    /// successes and `1 − q` failures — unless it is a failure η prices already
    /// ([`Outcome::teaches_reliability`]), which is only counted — and the run's slowdown, if
    /// the reporter measured one.
    pub(crate) fn record_outcome(
        &mut self,
        node: &str,
        q: f64,
        outcome: Outcome,
        now_ms: u64,
        cost: &CostModel,
    ) {
        self.counters.failed_outcomes += (q < 0.5) as u64;
        if outcome.teaches_reliability() {
            self.pheromones.entry(node).record(q, now_ms, cost);
        }
        if let Ok(Some(slowdown)) = outcome.slowdown() {
            self.pheromones
                .entry(node)
                .record_slowdown(slowdown, now_ms, cost);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony::{FailureCause, ObservedOutcome, OutcomeLabel, PheromoneTable};
    use crate::demand::WorkloadClass;
    use crate::heuristic::OutcomeStats;

    fn decision(nodes: &[(&str, f64)]) -> Decision {
        Decision {
            created_ms: 0,
            workload: WorkloadClass::Batch,
            candidate_count: nodes.len(),
            etas: nodes.iter().map(|(n, e)| (n.to_string(), *e)).collect(),
            explanation: None,
        }
    }

    const FAILED: Option<Outcome> = Some(Outcome::Label(OutcomeLabel::Failed));
    const SUCCEEDED: Option<Outcome> = Some(Outcome::Label(OutcomeLabel::Succeeded));

    #[test]
    fn failures_the_facts_price_are_counted_but_teach_no_reliability() {
        let cost = CostModel::default();
        let mut c = TenantColony::default();
        let failed = |cause| {
            Some(Outcome::Observed(ObservedOutcome {
                quality: 0.0,
                cost_per_hour: None,
                slowdown: None,
                cause,
            }))
        };
        for (i, (node, outcome)) in [
            ("hot", failed(Some(FailureCause::Load))),
            ("gone", failed(Some(FailureCause::NodeGone))),
            ("flaky", failed(Some(FailureCause::Node))),
            ("old-reporter", FAILED),
        ]
        .into_iter()
        .enumerate()
        {
            let mut r = PodRecord {
                decision: Some(decision(&[(node, 0.5)])),
                confirmed: None,
            };
            // With the placement, and again later as the placement's outcome: same rule.
            c.report(&mut r, node, outcome, 100 + i as u64, &cost)
                .unwrap();
        }
        assert_eq!(c.counters.failed_outcomes, 4);
        let learned: Vec<&str> = c.pheromones.trails.keys().map(String::as_str).collect();
        assert_eq!(
            learned,
            ["flaky", "old-reporter"],
            "only what no fact shows"
        );

        let mut late = PodRecord {
            decision: Some(decision(&[("hot", 0.5)])),
            confirmed: None,
        };
        c.report(&mut late, "hot", None, 200, &cost).unwrap();
        let effect = c
            .report(
                &mut late,
                "hot",
                failed(Some(FailureCause::Load)),
                300,
                &cost,
            )
            .unwrap();
        assert!(
            matches!(effect, ReportEffect::OutcomeRecorded { .. }),
            "{effect:?}"
        );
        assert!(!c.pheromones.trails.contains_key("hot"));
        assert_eq!(c.counters.failed_outcomes, 5);
    }

    #[test]
    fn a_placement_replayed_is_confirmed_once_and_deposits_nothing() {
        let cost = CostModel::default();
        let mut c = TenantColony::default();
        let mut r = PodRecord {
            decision: Some(decision(&[("a", 0.5), ("b", 0.25)])),
            confirmed: None,
        };
        let first = c.report(&mut r, "a", None, 100, &cost).unwrap();
        assert!(
            matches!(
                first,
                ReportEffect::Placed {
                    exact: true,
                    outcome: None,
                    ..
                }
            ),
            "{first:?}"
        );
        let confirmed = Confirmed {
            node: "a".into(),
            confirmed_ms: 100,
            outcome_recorded: false,
        };
        assert_eq!(
            r,
            PodRecord {
                decision: None,
                confirmed: Some(confirmed)
            }
        );
        let after_first = c.pheromones.clone();
        for _ in 0..3 {
            assert_eq!(
                c.report(&mut r, "a", None, 200, &cost).unwrap(),
                ReportEffect::Duplicate
            );
        }
        assert_eq!(c.pheromones, after_first);
        assert_eq!((c.counters.deposits, c.counters.duplicate_reports), (1, 3));
        assert!(c.pheromones.trails.is_empty());
    }

    #[test]
    fn a_later_outcome_deposits_once() {
        let cost = CostModel::default();
        let mut c = TenantColony::default();
        let mut r = PodRecord {
            decision: Some(decision(&[("a", 0.5)])),
            confirmed: None,
        };
        c.report(&mut r, "a", None, 100, &cost).unwrap();
        // Other placements meanwhile.
        for i in 0..3 {
            let mut other = PodRecord {
                decision: Some(decision(&[("b", 0.5)])),
                confirmed: None,
            };
            c.report(&mut other, "b", None, 150 + i, &cost).unwrap();
        }
        let effect = c.report(&mut r, "a", FAILED, 300, &cost).unwrap();
        let ReportEffect::OutcomeRecorded { node, quality } = effect else {
            panic!("{effect:?}")
        };
        assert_eq!((node.as_str(), quality), ("a", 0.0));
        let trail = c.pheromones.clone();
        assert!(r.confirmed.as_ref().unwrap().outcome_recorded);
        // Replays of the outcome, and of the placement, change nothing more.
        for outcome in [FAILED, SUCCEEDED, None, Some(Outcome::Quality(0.7))] {
            assert_eq!(
                c.report(&mut r, "a", outcome, 400, &cost).unwrap(),
                ReportEffect::Duplicate
            );
        }
        assert_eq!(
            c.pheromones.trails["a"],
            OutcomeStats {
                successes: 0.0,
                failures: 1.0,
                as_of_ms: 300,
                ..OutcomeStats::default()
            }
        );
        assert_eq!(c.pheromones, trail, "replays deposit nothing");
        assert_eq!(
            (
                c.counters.late_outcomes,
                c.counters.failed_outcomes,
                c.counters.duplicate_reports
            ),
            (1, 1, 4)
        );
    }

    #[test]
    fn an_outcome_with_the_placement_is_recorded_once_and_later_outcomes_are_duplicates() {
        let cost = CostModel::default();
        let mut c = TenantColony::default();
        let mut r = PodRecord {
            decision: Some(decision(&[("a", 0.5)])),
            confirmed: None,
        };
        let effect = c
            .report(&mut r, "a", Some(Outcome::Quality(0.8)), 100, &cost)
            .unwrap();
        assert!(
            matches!(effect, ReportEffect::Placed { outcome: Some(q), .. } if (q - 0.8).abs() < 1e-12),
            "{effect:?}"
        );
        assert!(r.confirmed.as_ref().unwrap().outcome_recorded);
        assert_eq!(
            c.report(&mut r, "a", SUCCEEDED, 200, &cost).unwrap(),
            ReportEffect::Duplicate
        );
        let stats = c.pheromones.trails["a"];
        assert!(
            (stats.successes - 0.8).abs() < 1e-12 && (stats.failures - 0.2).abs() < 1e-12,
            "{stats:?}"
        );
    }

    #[test]
    fn an_outcome_naming_another_node_changes_nothing_and_the_right_one_still_counts() {
        let cost = CostModel::default();
        let mut c = TenantColony::default();
        let mut r = PodRecord {
            decision: Some(decision(&[("a", 0.5), ("b", 0.5)])),
            confirmed: None,
        };
        c.report(&mut r, "a", None, 100, &cost).unwrap();
        let before = (c.pheromones.clone(), r.clone());
        assert_eq!(
            c.report(&mut r, "b", FAILED, 200, &cost).unwrap(),
            ReportEffect::NotACandidate
        );
        assert_eq!((c.pheromones.clone(), r.clone()), before);
        assert!(c.pheromones.trails.is_empty());
        assert!(matches!(
            c.report(&mut r, "a", SUCCEEDED, 300, &cost).unwrap(),
            ReportEffect::OutcomeRecorded { quality: 1.0, .. }
        ));
    }

    #[test]
    fn unknown_pods_change_nothing_even_with_an_outcome() {
        let cost = CostModel::default();
        let mut c = TenantColony::default();
        let mut r = PodRecord::default();
        for outcome in [None, FAILED] {
            assert_eq!(
                c.report(&mut r, "a", outcome, 100, &cost).unwrap(),
                ReportEffect::UnknownPod
            );
        }
        assert_eq!(r, PodRecord::default());
        assert_eq!(c.pheromones, PheromoneTable::default());
        assert_eq!(c.counters.unknown_placements, 2);
    }

    #[test]
    fn a_placement_on_a_non_candidate_keeps_the_decision_and_invalid_outcomes_change_nothing() {
        let cost = CostModel::default();
        let mut c = TenantColony::default();
        let d = decision(&[("a", 0.5)]);
        let mut r = PodRecord {
            decision: Some(d.clone()),
            confirmed: None,
        };
        assert_eq!(
            c.report(&mut r, "zzz", None, 100, &cost).unwrap(),
            ReportEffect::NotACandidate
        );
        assert!(c
            .report(&mut r, "a", Some(Outcome::Quality(1.5)), 100, &cost)
            .is_err());
        assert_eq!(
            r,
            PodRecord {
                decision: Some(d),
                confirmed: None
            }
        );
        assert_eq!(c.pheromones, PheromoneTable::default());
        assert!(matches!(
            c.report(&mut r, "a", None, 100, &cost).unwrap(),
            ReportEffect::Placed { .. }
        ));
    }

    #[test]
    fn a_priced_outcome_teaches_its_quality_not_its_price() {
        let cost = CostModel::default();
        let (mut priced, mut plain) = (TenantColony::default(), TenantColony::default());
        let observed: Outcome = serde_json::from_str(r#"{"quality":1,"costPerHour":3.0}"#).unwrap();
        for (c, outcome) in [(&mut priced, observed), (&mut plain, Outcome::Quality(1.0))] {
            let mut r = PodRecord {
                decision: Some(decision(&[("a", 0.5)])),
                confirmed: None,
            };
            c.report(&mut r, "a", None, 100, &cost).unwrap();
            let effect = c.report(&mut r, "a", Some(outcome), 200, &cost).unwrap();
            assert!(
                matches!(effect, ReportEffect::OutcomeRecorded { quality: 1.0, .. }),
                "{effect:?}"
            );
        }
        assert_eq!(
            priced.pheromones, plain.pheromones,
            "the facts price the node (η); the trail learns what they cannot show"
        );
    }

    #[test]
    fn a_new_decision_for_a_confirmed_key_is_confirmed_again() {
        let cost = CostModel::default();
        let mut c = TenantColony::default();
        let mut r = PodRecord {
            decision: Some(decision(&[("a", 0.5)])),
            confirmed: None,
        };
        c.report(&mut r, "a", None, 100, &cost).unwrap();
        r.decision = Some(decision(&[("b", 0.5)]));
        assert!(matches!(
            c.report(&mut r, "b", None, 200, &cost).unwrap(),
            ReportEffect::Placed { .. }
        ));
        assert_eq!(r.confirmed.as_ref().unwrap().node, "b");
        assert_eq!(c.counters.deposits, 2);
    }
}
