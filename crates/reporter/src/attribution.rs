//! From a pod's [`Verdict`] to what the Worker is told, once per pod:
//! - node-caused ends → `failed` on the pod's node;
//! - successes → `succeeded`, or `{"quality": 1, "slowdown": s}` for a pod that ran to completion
//!   once its workload has enough earlier run times (`aco_core::run_time`, threshold 5);
//! - operator- and workload-caused ends → nothing (neutral);
//! - application errors → judged by where else the same workload fails: on two or more nodes it
//!   is the workload's doing (neutral); two or more failures on this node and none elsewhere make
//!   it the node's (`failed`); otherwise undecided (judged again on the next scan, until the
//!   outcome window closes). A pod with no workload (no controller, no workload label) has no
//!   history to compare: neutral.
//!
//! A workload is the pod's controller (`<Kind>/<namespace>/<name>`: a Job, a ReplicaSet — one per
//! Deployment template —, a StatefulSet or DaemonSet with its `controller-revision-hash`), or the
//! value of `--workload-label` when the pod has it.
//!
//! Memory: failure history for at most [`MAX_WORKLOADS`] workloads (least recently failed
//! forgotten first), [`MAX_NODES`] nodes per workload and [`MAX_PODS`] pods per node — enough
//! to decide, since two nodes or two pods settle every question asked.

use std::collections::{BTreeMap, BTreeSet};

use crate::outcome::Verdict;
use crate::pod_record::{PodRecord, REVISION_LABEL};
use aco_core::colony::{FailureCause, ObservedOutcome, Outcome, OutcomeLabel};
use aco_core::run_time::RunTimes;

pub const MAX_WORKLOADS: usize = 4_096;
pub const MAX_NODES: usize = 8;
pub const MAX_PODS: usize = 8;

/// What a pod's end comes to, final once made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Tell the Worker this outcome.
    Report(Outcome),
    /// Nothing for the node to learn.
    Neutral,
}

/// The pod's workload key (see the module docs), if it has one.
pub fn workload_of(pod: &PodRecord, label: Option<&str>) -> Option<String> {
    let ns = &pod.namespace;
    if let Some(value) = label.and_then(|l| pod.label(l)) {
        return Some(format!("label/{ns}/{value}"));
    }
    let (kind, name) = pod.controller.as_ref()?;
    let revision = matches!(&**kind, "StatefulSet" | "DaemonSet")
        .then(|| pod.label(REVISION_LABEL))
        .flatten();
    Some(match revision {
        Some(r) => format!("{kind}/{ns}/{name}@{r}"),
        None => format!("{kind}/{ns}/{name}"),
    })
}

#[derive(Debug, Default)]
struct Failures {
    by_node: BTreeMap<String, BTreeSet<String>>,
    stamp: u64,
}

/// Which nodes each workload's application errors happened on, bounded.
#[derive(Debug, Default)]
pub struct WorkloadFailures {
    workloads: BTreeMap<String, Failures>,
    by_recency: BTreeMap<u64, String>,
    next_stamp: u64,
}

/// Whose fault an application error is, as far as the history tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    Node,
    Workload,
    Undecided,
}

impl WorkloadFailures {
    /// Records that pod `uid` of `workload` failed on `node` (idempotent), and judges it.
    pub fn record(&mut self, workload: &str, node: &str, uid: &str) -> Blame {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        if !self.workloads.contains_key(workload) {
            while self.workloads.len() >= MAX_WORKLOADS {
                let Some((_, oldest)) = self.by_recency.pop_first() else {
                    break;
                };
                self.workloads.remove(&oldest);
            }
        }
        let f = self.workloads.entry(workload.to_string()).or_default();
        self.by_recency.remove(&f.stamp);
        f.stamp = stamp;
        self.by_recency.insert(stamp, workload.to_string());
        if f.by_node.contains_key(node) || f.by_node.len() < MAX_NODES {
            let pods = f.by_node.entry(node.to_string()).or_default();
            if pods.len() < MAX_PODS {
                pods.insert(uid.to_string());
            }
        }
        if f.by_node.len() >= 2 {
            Blame::Workload
        } else if f.by_node.get(node).is_some_and(|p| p.len() >= 2) {
            Blame::Node
        } else {
            Blame::Undecided
        }
    }

    pub fn len(&self) -> usize {
        self.workloads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workloads.is_empty()
    }
}

/// The reporter's memory of workloads: failures by node and run times.
#[derive(Debug, Default)]
pub struct Attribution {
    pub failures: WorkloadFailures,
    pub run_times: RunTimes,
}

/// A failed outcome, with its cause when the facts already price it (`Verdict::failure_cause`):
/// a failure that is the node's own is the plain `"failed"` (a cause left out means the node's),
/// which every Worker reads; `load` and `nodeGone` need a Worker that knows causes.
fn failed(cause: Option<FailureCause>) -> Outcome {
    match cause {
        Some(cause @ (FailureCause::Load | FailureCause::NodeGone)) => {
            Outcome::Observed(ObservedOutcome {
                quality: 0.0,
                cost_per_hour: None,
                slowdown: None,
                cause: Some(cause),
            })
        }
        Some(FailureCause::Node) | None => Outcome::Label(OutcomeLabel::Failed),
    }
}

impl Attribution {
    /// The decision for a pod's verdict, or `None` while it cannot be made yet. Call once per
    /// pod for a success (it records the run time); an application error may be judged again.
    pub fn decide(
        &mut self,
        verdict: &Verdict,
        workload: Option<&str>,
        node: &str,
        uid: &str,
    ) -> Option<Decision> {
        Some(match verdict {
            Verdict::NodeFailed(_) => Decision::Report(failed(verdict.failure_cause())),
            Verdict::Neutral(_) => Decision::Neutral,
            Verdict::Healthy => Decision::Report(Outcome::Label(OutcomeLabel::Succeeded)),
            Verdict::Succeeded { run_ms } => {
                let slowdown = match (workload, run_ms) {
                    (Some(w), Some(run)) => self.run_times.observe(w, *run),
                    _ => None,
                };
                Decision::Report(match slowdown {
                    Some(s) => Outcome::Observed(ObservedOutcome {
                        quality: 1.0,
                        cost_per_hour: None,
                        slowdown: Some(s),
                        cause: None,
                    }),
                    None => Outcome::Label(OutcomeLabel::Succeeded),
                })
            }
            Verdict::AppError(_) => match workload {
                None => Decision::Neutral,
                Some(w) => match self.failures.record(w, node, uid) {
                    Blame::Node => Decision::Report(failed(Some(FailureCause::Node))),
                    Blame::Workload => Decision::Neutral,
                    Blame::Undecided => return None,
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owned(kind: &str, name: &str, labels: serde_json::Value) -> PodRecord {
        crate::pod_record::tests::record(
            json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "1"},
                {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "2", "controller": true}]}}),
        )
    }

    #[test]
    fn workloads_are_the_controller_or_the_label() {
        assert_eq!(
            workload_of(&owned("Job", "train", json!({})), None).as_deref(),
            Some("Job/ns/train")
        );
        assert_eq!(
            workload_of(
                &owned(
                    "ReplicaSet",
                    "web-5d8f",
                    json!({"pod-template-hash": "5d8f"})
                ),
                None
            )
            .as_deref(),
            Some("ReplicaSet/ns/web-5d8f")
        );
        assert_eq!(
            workload_of(
                &owned(
                    "StatefulSet",
                    "db",
                    json!({"controller-revision-hash": "db-7c"})
                ),
                None
            )
            .as_deref(),
            Some("StatefulSet/ns/db@db-7c")
        );
        let labelled = owned(
            "Job",
            "train",
            json!({"app.kubernetes.io/instance": "exp-1"}),
        );
        assert_eq!(
            workload_of(&labelled, Some("app.kubernetes.io/instance")).as_deref(),
            Some("label/ns/exp-1")
        );
        let bare =
            crate::pod_record::tests::record(json!({"metadata": {"name": "p", "namespace": "ns"}}));
        assert_eq!(workload_of(&bare, Some("app")), None);
    }

    #[test]
    fn failures_on_one_node_only_are_the_nodes_and_on_several_the_workloads() {
        let mut a = Attribution::default();
        let err = Verdict::AppError("Error (exit 1)".into());
        assert_eq!(
            a.decide(&err, Some("Job/ns/j"), "n1", "u1"),
            None,
            "one failure: undecided"
        );
        assert_eq!(
            a.decide(&err, Some("Job/ns/j"), "n1", "u1"),
            None,
            "the same pod again"
        );
        assert_eq!(
            a.decide(&err, Some("Job/ns/j"), "n1", "u2"),
            Some(Decision::Report(failed(Some(FailureCause::Node))))
        );
        assert_eq!(
            a.decide(&err, Some("Job/ns/j"), "n1", "u1"),
            Some(Decision::Report(failed(Some(FailureCause::Node)))),
            "the first pod, judged again"
        );
        // Another workload failing everywhere: its own fault.
        assert_eq!(a.decide(&err, Some("Job/ns/bad"), "n1", "v1"), None);
        assert_eq!(
            a.decide(&err, Some("Job/ns/bad"), "n2", "v2"),
            Some(Decision::Neutral)
        );
        assert_eq!(
            a.decide(&err, Some("Job/ns/bad"), "n1", "v1"),
            Some(Decision::Neutral)
        );
        assert_eq!(
            a.decide(&err, None, "n1", "w"),
            Some(Decision::Neutral),
            "no workload"
        );
    }

    #[test]
    fn successes_carry_a_slowdown_once_the_workload_has_five_earlier_runs() {
        let mut a = Attribution::default();
        let ok = |ms| Verdict::Succeeded { run_ms: Some(ms) };
        for (i, run) in [100_000, 100_000, 100_000, 100_000, 100_000]
            .iter()
            .enumerate()
        {
            assert_eq!(
                a.decide(&ok(*run), Some("Job/ns/j"), "n1", &format!("u{i}")),
                Some(Decision::Report(Outcome::Label(OutcomeLabel::Succeeded)))
            );
        }
        let slow = a
            .decide(&ok(150_000), Some("Job/ns/j"), "slow", "u9")
            .unwrap();
        let Decision::Report(outcome) = slow else {
            panic!("{slow:?}")
        };
        assert_eq!(outcome.slowdown().unwrap(), Some(1.5));
        assert_eq!(outcome.quality().unwrap(), 1.0);
        // The wire form the Worker parses.
        assert_eq!(
            serde_json::to_value(outcome).unwrap(),
            json!({"quality": 1.0, "slowdown": 1.5})
        );
        assert_eq!(
            a.decide(&ok(1), None, "n1", "x"),
            Some(Decision::Report(Outcome::Label(OutcomeLabel::Succeeded))),
            "no workload: no slowdown"
        );
        assert_eq!(
            a.decide(
                &Verdict::NodeFailed("DeletionByPodGC".into()),
                None,
                "n",
                "y"
            ),
            Some(Decision::Report(failed(Some(FailureCause::NodeGone))))
        );
        // The wire form: a node gone is priced by its pool, not learned as the node's fault.
        assert_eq!(
            serde_json::to_value(failed(Some(FailureCause::NodeGone))).unwrap(),
            json!({"quality": 0.0, "cause": "nodeGone"})
        );
        assert_eq!(
            a.decide(&Verdict::Neutral("Deleted".into()), None, "n", "z"),
            Some(Decision::Neutral)
        );
    }

    #[test]
    fn failure_history_is_bounded() {
        let mut f = WorkloadFailures::default();
        for i in 0..MAX_WORKLOADS + 10 {
            f.record(&format!("w{i}"), "n", "u");
        }
        assert_eq!(f.len(), MAX_WORKLOADS);
        for n in 0..MAX_NODES + 5 {
            for p in 0..MAX_PODS + 5 {
                f.record("big", &format!("n{n}"), &format!("p{p}"));
            }
        }
        let big = &f.workloads["big"];
        assert_eq!(big.by_node.len(), MAX_NODES);
        assert!(big.by_node.values().all(|p| p.len() <= MAX_PODS));
    }
}
