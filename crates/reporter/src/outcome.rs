//! Why a pod ended, read from its status: what the Worker's reliability posterior may learn from.
//!
//! Every end is attributed to a cause, and only the node's own doing is charged to the node.
//! The table (first matching row wins; every row is unit-tested below against the status a
//! real kubelet or controller writes):
//!
//! | # | what the pod shows | cause | verdict |
//! |---|---|---|---|
//! | 1 | condition `DisruptionTarget=True`, reason `TerminationByKubelet` (node-pressure eviction; a graceful node shutdown, told apart by `status.reason` `Terminated`/`NodeShutdown`, is reported under that reason) | node | failed |
//! | 2 | `DisruptionTarget` reason `DeletionByTaintManager` (NoExecute taint: node not ready / unreachable) | node | failed |
//! | 3 | `DisruptionTarget` reason `DeletionByPodGC` (orphaned: its node is gone) | node gone | failed |
//! | 4 | `DisruptionTarget` reason `EvictionByEvictionAPI` (drain, descheduler, autoscaler scale-down) | operator | neutral |
//! | 5 | `DisruptionTarget` reason `PreemptionByScheduler` | operator | neutral |
//! | 6 | `DisruptionTarget` with any other reason | unknown | neutral |
//! | 7 | `status.reason` `Evicted`, `Terminated`/`NodeShutdown` (kubelet), `OutOf<resource>` or `UnexpectedAdmissionError` (rejected at admission by the node) | node | failed |
//! | 8 | the pod was deleted and its node is gone too (spot reclaim, node deleted with its pods) | node gone | failed |
//! | 9 | phase `Succeeded` (native sidecars stopped at the end may exit non-zero: ignored) | — | succeeded, with its run time |
//! | 10 | being deleted (`deletionTimestamp`) or deleted, and no container failed before the deletion was asked for (rollout, scale-down, Job end, `kubectl delete`: exits 143/137 after SIGTERM) | operator | neutral |
//! | 11 | a container `OOMKilled` (now or last time) that has a memory limit: its own limit | workload | neutral |
//! | 12 | a container `OOMKilled` without a memory limit: the node ran out | node | failed |
//! | 13 | a non-zero exit (regular or init container, now or last time; sidecars too while the pod runs), phase `Failed`, or restarts above the threshold | application | judged by the workload's history ([`crate::attribution`]): failing on more than one node → workload, neutral; ≥ 2 failures on this node only → node, failed; else undecided |
//! | 14 | Running and Ready without restarts for `healthy_after_ms` | — | healthy |
//! | 15 | deleted with no fate | operator | neutral |
//!
//! Anything else is not known yet (`None`).

use aco_core::colony::FailureCause;

use crate::pod_record::PodRecord;

/// A pod's end, by cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The node is to blame (row in the table): a failed outcome on its node.
    NodeFailed(String),
    /// Ran to completion; `run_ms` from its regular containers' start and finish times.
    Succeeded { run_ms: Option<u64> },
    /// Ran healthy for the configured time.
    Healthy,
    /// Operator- or workload-caused, or unknown: nothing for the node to learn.
    Neutral(String),
    /// The application failed (exit code, phase Failed, restarts): whose fault depends on where
    /// else the same workload fails.
    AppError(String),
}

impl Verdict {
    /// A short label for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Verdict::NodeFailed(_) => "node_failed",
            Verdict::Succeeded { .. } => "succeeded",
            Verdict::Healthy => "healthy",
            Verdict::Neutral(_) => "neutral",
            Verdict::AppError(_) => "app_error",
        }
    }

    /// Why a node failed its pod, for the Worker (`FailureCause`): the node's reliability learns
    /// only what the node facts do not already say. A node-pressure eviction (row 1
    /// `TerminationByKubelet`, row 7 `Evicted`) or a container the node's memory ran out under
    /// (row 12) is its load; a node gone (rows 3, 8) its pool's risk; everything else — not
    /// ready, an admission the node's devices failed, an application failing on this node only,
    /// a graceful node shutdown (rows 1 and 7 `Terminated`/`NodeShutdown`) — the node's own.
    pub fn failure_cause(&self) -> Option<FailureCause> {
        let Verdict::NodeFailed(reason) = self else {
            return None;
        };
        Some(match reason.as_str() {
            "TerminationByKubelet" | "Evicted" => FailureCause::Load,
            r if r.starts_with("OOMKilled") => FailureCause::Load,
            "DeletionByPodGC" | "NodeGone" => FailureCause::NodeGone,
            _ => FailureCause::Node,
        })
    }
}

#[derive(Debug, Clone, Copy)]
pub struct OutcomeRules {
    /// More restarts than this (summed over containers) is an application failure.
    pub max_restarts: i32,
    /// Running and Ready this long without a restart counts as success.
    pub healthy_after_ms: u64,
}

impl Default for OutcomeRules {
    fn default() -> Self {
        OutcomeRules {
            max_restarts: 3,
            healthy_after_ms: 10 * 60 * 1000,
        }
    }
}

/// What the watch knows beside the pod object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Presence {
    /// The pod is gone from the API server (a watch `Deleted` event: force delete, PodGC, or
    /// the end of a graceful deletion).
    pub deleted: bool,
    /// Its node is gone too (not in the node cache when the pod was deleted).
    pub node_gone: bool,
}

const NODE_STATUS_REASONS: [&str; 4] = [
    "Evicted",
    "Terminated",
    "NodeShutdown",
    "UnexpectedAdmissionError",
];

/// Native sidecars: init containers with `restartPolicy: Always`, by name.
fn sidecars(pod: &PodRecord) -> Vec<&str> {
    pod.containers
        .iter()
        .filter(|c| c.sidecar)
        .map(|c| &*c.name)
        .collect()
}

fn has_memory_limit(pod: &PodRecord, container: &str) -> bool {
    pod.containers
        .iter()
        .find(|c| &*c.name == container)
        .is_some_and(|c| c.memory_limit)
}

/// One bad termination: the container, why, and when it finished (unix ms) if known.
struct BadExit<'a> {
    container: &'a str,
    oom: bool,
    reason: String,
    finished_ms: Option<u64>,
}

/// Bad terminations of every container, now or last time. A sidecar's exit is left out once
/// every regular container has exited 0 (the kubelet stops sidecars at a Job's end).
fn bad_exits(pod: &PodRecord) -> Vec<BadExit<'_>> {
    let sidecars = sidecars(pod);
    let mut regular = pod.statuses.iter().filter(|c| !c.init).peekable();
    let regular_done = regular.peek().is_some()
        && regular.all(|c| c.terminated.as_ref().is_some_and(|t| t.exit_code == 0));
    let mut out = Vec::new();
    for c in pod.statuses.iter() {
        if regular_done && sidecars.contains(&&*c.name) {
            continue;
        }
        for t in [c.terminated.as_ref(), c.last_terminated.as_ref()]
            .into_iter()
            .flatten()
        {
            let reason = t.reason.as_deref().unwrap_or_default();
            let oom = reason == "OOMKilled";
            if oom || t.exit_code != 0 {
                let reason = match (oom, reason.is_empty()) {
                    (true, _) => reason.to_owned(),
                    (false, true) => format!("Error (exit {})", t.exit_code),
                    (false, false) => format!("{reason} (exit {})", t.exit_code),
                };
                out.push(BadExit {
                    container: &c.name,
                    oom,
                    reason,
                    finished_ms: t.finished_ms,
                });
            }
        }
    }
    out
}

/// Run time of a finished pod: from the first regular container's start to the last one's
/// finish (its `state.terminated` times).
pub fn run_time_ms(pod: &PodRecord) -> Option<u64> {
    let mut start: Option<u64> = None;
    let mut end: Option<u64> = None;
    for c in pod.statuses.iter().filter(|c| !c.init) {
        let t = c.terminated.as_ref()?;
        let (s, f) = (t.started_ms?, t.finished_ms?);
        start = Some(start.map_or(s, |v| v.min(s)));
        end = Some(end.map_or(f, |v| v.max(f)));
    }
    let (s, e) = (start?, end?);
    (e >= s).then(|| e - s)
}

/// When the deletion was asked for: `deletionTimestamp − deletionGracePeriodSeconds`.
fn deletion_requested_ms(pod: &PodRecord) -> Option<u64> {
    let d = pod.deletion?;
    Some(d.at_ms.saturating_sub(d.grace_s * 1000))
}

pub fn classify(
    pod: &PodRecord,
    presence: Presence,
    now_ms: u64,
    rules: &OutcomeRules,
) -> Option<Verdict> {
    let reason = pod.reason.as_deref();
    let phase = pod.phase.as_deref();
    // 1–6: the condition set before a disruption.
    if let Some(disruption) = pod.disruption.as_deref() {
        let d = disruption.to_owned();
        return Some(match disruption {
            // The kubelet writes this condition for a node-pressure eviction and for a graceful
            // node shutdown alike; its status reason tells them apart (the node's load, the
            // node's own going away).
            "TerminationByKubelet" => match reason {
                Some(r @ ("Terminated" | "NodeShutdown")) => Verdict::NodeFailed(r.to_string()),
                _ => Verdict::NodeFailed(d),
            },
            "DeletionByTaintManager" | "DeletionByPodGC" => Verdict::NodeFailed(d),
            "EvictionByEvictionAPI" | "PreemptionByScheduler" => Verdict::Neutral(d),
            _ => Verdict::Neutral(format!("DisruptionTarget {d}")),
        });
    }
    // 7: the kubelet's own words.
    if let Some(reason) = reason {
        if NODE_STATUS_REASONS.contains(&reason) || reason.starts_with("OutOf") {
            return Some(Verdict::NodeFailed(reason.to_string()));
        }
    }
    // 8
    if presence.deleted && presence.node_gone {
        return Some(Verdict::NodeFailed("NodeGone".into()));
    }
    // 9
    if phase == Some("Succeeded") {
        return Some(Verdict::Succeeded {
            run_ms: run_time_ms(pod),
        });
    }
    let exits = bad_exits(pod);
    // 10: exits after the deletion was asked for are the deletion's doing.
    let deleting = pod.deletion.is_some() || presence.deleted;
    let exits: Vec<BadExit> = if deleting {
        let asked = deletion_requested_ms(pod);
        let before: Vec<BadExit> = exits
            .into_iter()
            .filter(|e| matches!((e.finished_ms, asked), (Some(f), Some(a)) if f < a))
            .collect();
        if before.is_empty() {
            return Some(Verdict::Neutral("Deleted".into()));
        }
        before
    } else {
        exits
    };
    // 11, 12
    if let Some(oom) = exits.iter().find(|e| e.oom) {
        return Some(if has_memory_limit(pod, oom.container) {
            Verdict::Neutral("OOMKilled at its own memory limit".into())
        } else {
            Verdict::NodeFailed("OOMKilled without a memory limit (node memory)".into())
        });
    }
    // 13
    if let Some(e) = exits.first() {
        return Some(Verdict::AppError(e.reason.clone()));
    }
    if phase == Some("Failed") {
        return Some(Verdict::AppError(reason.unwrap_or("Failed").to_owned()));
    }
    let restarts: i32 = pod.statuses.iter().map(|c| c.restarts).sum();
    if restarts > rules.max_restarts {
        return Some(Verdict::AppError(format!("Restarts ({restarts})")));
    }
    // 14
    if phase == Some("Running") && restarts == 0 {
        if let Some(since) = pod.ready_since_ms {
            if now_ms.saturating_sub(since) >= rules.healthy_after_ms {
                return Some(Verdict::Healthy);
            }
        }
    }
    // 15
    presence.deleted.then(|| Verdict::Neutral("Deleted".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const NOW: &str = "2026-12-01T10:30:00Z";

    fn now() -> u64 {
        crate::time::parse_rfc3339_ms(NOW).unwrap()
    }

    fn live() -> Presence {
        Presence::default()
    }

    /// A pod as the API server returns it: metadata, a spec with `containers` (and optional
    /// init containers), and `status`.
    fn pod_with(meta: Value, spec: Value, status: Value) -> PodRecord {
        let mut m = json!({"name": "p", "namespace": "ns", "uid": "u",
            "creationTimestamp": "2026-12-01T10:00:00Z"});
        m.as_object_mut()
            .unwrap()
            .extend(meta.as_object().cloned().unwrap_or_default());
        let mut s = json!({"nodeName": "n1", "restartPolicy": "Always",
            "containers": [{"name": "app", "image": "x"}]});
        s.as_object_mut()
            .unwrap()
            .extend(spec.as_object().cloned().unwrap_or_default());
        crate::pod_record::tests::record(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": m, "spec": s, "status": status}))
    }

    fn pod(status: Value) -> PodRecord {
        pod_with(json!({}), json!({}), status)
    }

    fn verdict(p: &PodRecord) -> Option<Verdict> {
        classify(p, live(), now(), &OutcomeRules::default())
    }

    fn ready(since: &str) -> Value {
        json!([{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T10:00:00Z"},
               {"type": "Ready", "status": "True", "lastTransitionTime": since}])
    }

    fn terminated(exit: i32, reason: &str, started: &str, finished: &str) -> Value {
        json!({"terminated": {"exitCode": exit, "reason": reason, "startedAt": started, "finishedAt": finished,
            "containerID": "containerd://abc"}})
    }

    fn status_of(name: &str, state: Value, last: Value, restarts: i32) -> Value {
        json!({"name": name, "image": "x", "imageID": "sha", "ready": false, "restartCount": restarts,
            "started": false, "state": state, "lastState": last})
    }

    fn disruption(reason: &str, message: &str) -> Value {
        json!({"type": "DisruptionTarget", "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": "2026-12-01T10:20:00Z"})
    }

    /// Rows 1–6: the DisruptionTarget condition as each component writes it.
    #[test]
    fn disruption_targets_by_who_caused_them() {
        let rows = [
            // kubelet node-pressure eviction (with status.reason Evicted, phase Failed)
            (
                "TerminationByKubelet",
                "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi.",
                Verdict::NodeFailed("TerminationByKubelet".into()),
            ),
            (
                "DeletionByTaintManager",
                "Taint manager: deleting due to NoExecute taint",
                Verdict::NodeFailed("DeletionByTaintManager".into()),
            ),
            (
                "DeletionByPodGC",
                "PodGC: node no longer exists",
                Verdict::NodeFailed("DeletionByPodGC".into()),
            ),
            (
                "EvictionByEvictionAPI",
                "Eviction API: evicting",
                Verdict::Neutral("EvictionByEvictionAPI".into()),
            ),
            (
                "PreemptionByScheduler",
                "aco-scheduler: preempting to accommodate a higher priority pod",
                Verdict::Neutral("PreemptionByScheduler".into()),
            ),
            (
                "SomethingNew",
                "a future component",
                Verdict::Neutral("DisruptionTarget SomethingNew".into()),
            ),
        ];
        for (reason, message, want) in rows {
            // The API-initiated ones are deleted too; the containers exit 143 after SIGTERM.
            let p = pod_with(
                json!({"deletionTimestamp": "2026-12-01T10:20:30Z", "deletionGracePeriodSeconds": 30}),
                json!({}),
                json!({"phase": "Failed", "conditions": [disruption(reason, message)],
                    "containerStatuses": [status_of("app",
                        terminated(143, "Error", "2026-12-01T10:00:05Z", "2026-12-01T10:20:01Z"), json!({}), 0)]}),
            );
            assert_eq!(verdict(&p), Some(want), "{reason}");
        }
        // A graceful node shutdown writes the same condition; its status reason names it.
        let shutdown = pod(json!({"phase": "Failed", "reason": "Terminated",
            "conditions": [disruption("TerminationByKubelet", "Pod was terminated in response to imminent node shutdown.")]}));
        assert_eq!(
            verdict(&shutdown),
            Some(Verdict::NodeFailed("Terminated".into()))
        );
        assert_eq!(
            verdict(&shutdown).unwrap().failure_cause(),
            Some(FailureCause::Node)
        );
        let cleared = pod(json!({"phase": "Running", "conditions": [
            {"type": "DisruptionTarget", "status": "False", "reason": "PreemptionByScheduler"}]}));
        assert_eq!(verdict(&cleared), None);
    }

    /// Row 7: the kubelet's eviction (older clusters: no condition), graceful node shutdown and
    /// admission rejections.
    #[test]
    fn kubelet_status_reasons_are_the_nodes_doing() {
        for (reason, message) in [
            ("Evicted", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."),
            ("Terminated", "Pod was terminated in response to imminent node shutdown."),
            ("OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 7000, capacity: 8000"),
            ("OutOfnvidia.com/gpu", "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu"),
            ("UnexpectedAdmissionError", "Allocate failed due to no healthy devices present"),
        ] {
            let p = pod(json!({"phase": "Failed", "reason": reason, "message": message}));
            assert_eq!(verdict(&p), Some(Verdict::NodeFailed(reason.into())), "{reason}");
        }
        // activeDeadlineSeconds is the workload's own limit: an application end, not the node's.
        let deadline = pod(json!({"phase": "Failed", "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline"}));
        assert_eq!(
            verdict(&deadline),
            Some(Verdict::AppError("DeadlineExceeded".into()))
        );
    }

    /// Rows 8 and 15: a pod gone from the API server.
    #[test]
    fn deleted_pods_blame_the_node_only_when_it_is_gone_too() {
        let running = pod(
            json!({"phase": "Running", "conditions": ready("2026-12-01T10:01:00Z"),
            "containerStatuses": [status_of("app", json!({"running": {"startedAt": "2026-12-01T10:00:05Z"}}), json!({}), 0)]}),
        );
        let rules = OutcomeRules::default();
        let gone = Presence {
            deleted: true,
            node_gone: true,
        };
        assert_eq!(
            classify(&running, gone, now(), &rules),
            Some(Verdict::NodeFailed("NodeGone".into()))
        );
        let force_deleted = Presence {
            deleted: true,
            node_gone: false,
        };
        assert_eq!(
            classify(&running, force_deleted, now(), &rules),
            Some(Verdict::Neutral("Deleted".into()))
        );
    }

    /// Row 9: a Job pod with a native sidecar that exits non-zero when the Job's work is done.
    #[test]
    fn a_succeeded_pod_with_a_sidecar_that_exited_143_is_a_success_with_its_run_time() {
        let p = pod_with(
            json!({"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j1", "controller": true}]}),
            json!({"restartPolicy": "Never",
                "initContainers": [{"name": "log-shipper", "image": "x", "restartPolicy": "Always"}]}),
            json!({"phase": "Succeeded",
                "initContainerStatuses": [status_of("log-shipper",
                    terminated(143, "Error", "2026-12-01T10:00:02Z", "2026-12-01T10:10:04Z"), json!({}), 0)],
                "containerStatuses": [status_of("app",
                    terminated(0, "Completed", "2026-12-01T10:00:04Z", "2026-12-01T10:10:04Z"), json!({}), 0)]}),
        );
        assert_eq!(
            verdict(&p),
            Some(Verdict::Succeeded {
                run_ms: Some(600_000)
            })
        );
        // The same pod a moment earlier (phase not yet updated): the sidecar's stop is no failure.
        let mut stopping = p.clone();
        stopping.phase = Some("Running".into());
        assert_eq!(verdict(&stopping), None);
    }

    /// Row 10: a rollout, a scale-down, a Job's end, `kubectl delete`.
    #[test]
    fn exits_after_a_deletion_was_asked_for_are_neutral() {
        // Deployment scale-down: deletionTimestamp = request + 30 s; app exited 143 at once.
        let sigterm = pod_with(
            json!({"deletionTimestamp": "2026-12-01T10:20:30Z", "deletionGracePeriodSeconds": 30}),
            json!({}),
            json!({"phase": "Failed", "containerStatuses": [status_of("app",
                terminated(143, "Error", "2026-12-01T10:00:05Z", "2026-12-01T10:20:01Z"), json!({}), 0)]}),
        );
        assert_eq!(verdict(&sigterm), Some(Verdict::Neutral("Deleted".into())));
        // SIGKILL after the grace period: 137.
        let sigkill = pod_with(
            json!({"deletionTimestamp": "2026-12-01T10:20:30Z", "deletionGracePeriodSeconds": 30}),
            json!({}),
            json!({"phase": "Failed", "containerStatuses": [status_of("app",
                terminated(137, "Error", "2026-12-01T10:00:05Z", "2026-12-01T10:20:30Z"), json!({}), 0)]}),
        );
        assert_eq!(verdict(&sigkill), Some(Verdict::Neutral("Deleted".into())));
        // Still running while terminating: nothing to charge either.
        let terminating = pod_with(
            json!({"deletionTimestamp": "2026-12-01T10:20:30Z", "deletionGracePeriodSeconds": 30}),
            json!({}),
            json!({"phase": "Running", "containerStatuses": [status_of("app",
                json!({"running": {"startedAt": "2026-12-01T10:00:05Z"}}), json!({}), 0)]}),
        );
        assert_eq!(
            verdict(&terminating),
            Some(Verdict::Neutral("Deleted".into()))
        );
        // But a crash before the deletion (a failed Job pod cleaned up later) is still judged.
        let crashed_then_deleted = pod_with(
            json!({"deletionTimestamp": "2026-12-01T10:25:00Z", "deletionGracePeriodSeconds": 0}),
            json!({"restartPolicy": "Never"}),
            json!({"phase": "Failed", "containerStatuses": [status_of("app",
                terminated(1, "Error", "2026-12-01T10:00:05Z", "2026-12-01T10:05:00Z"), json!({}), 0)]}),
        );
        assert_eq!(
            verdict(&crashed_then_deleted),
            Some(Verdict::AppError("Error (exit 1)".into()))
        );
    }

    /// Rows 11 and 12: whose memory ran out.
    #[test]
    fn oom_at_the_containers_own_limit_is_the_workloads_and_without_a_limit_the_nodes() {
        let limited = json!({"containers": [{"name": "app", "image": "x",
            "resources": {"requests": {"memory": "256Mi"}, "limits": {"memory": "256Mi"}}}]});
        let oom_status = json!({"phase": "Running", "conditions": ready("2026-12-01T10:05:00Z"),
            "containerStatuses": [status_of("app", json!({"running": {"startedAt": "2026-12-01T10:05:00Z"}}),
                terminated(137, "OOMKilled", "2026-12-01T10:01:00Z", "2026-12-01T10:04:59Z"), 1)]});
        let own = pod_with(json!({}), limited, oom_status.clone());
        assert_eq!(
            verdict(&own),
            Some(Verdict::Neutral("OOMKilled at its own memory limit".into()))
        );
        let unlimited = pod(oom_status);
        assert_eq!(
            verdict(&unlimited),
            Some(Verdict::NodeFailed(
                "OOMKilled without a memory limit (node memory)".into()
            ))
        );
    }

    /// Row 13: application failures are judged by the workload's history, not here.
    #[test]
    fn application_failures_are_left_to_the_workload_history() {
        let never = pod_with(
            json!({}),
            json!({"restartPolicy": "Never"}),
            json!({"phase": "Failed", "containerStatuses": [status_of("app",
                terminated(1, "Error", "2026-12-01T10:00:05Z", "2026-12-01T10:00:07Z"), json!({}), 0)]}),
        );
        assert_eq!(
            verdict(&never),
            Some(Verdict::AppError("Error (exit 1)".into()))
        );
        let crash_loop = pod(
            json!({"phase": "Running", "containerStatuses": [status_of("app",
            json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}}),
            terminated(2, "Error", "2026-12-01T10:00:05Z", "2026-12-01T10:00:07Z"), 1)]}),
        );
        assert_eq!(
            verdict(&crash_loop),
            Some(Verdict::AppError("Error (exit 2)".into()))
        );
        let failed_init = pod(
            json!({"phase": "Pending", "initContainerStatuses": [status_of("migrate",
            terminated(3, "Error", "2026-12-01T10:00:05Z", "2026-12-01T10:00:07Z"), json!({}), 0)]}),
        );
        assert_eq!(
            verdict(&failed_init),
            Some(Verdict::AppError("Error (exit 3)".into()))
        );
        let bare = pod(json!({"phase": "Failed"}));
        assert_eq!(verdict(&bare), Some(Verdict::AppError("Failed".into())));
        let restarts = |n: i32| {
            pod(
                json!({"phase": "Running", "containerStatuses": [status_of("app",
                json!({"running": {"startedAt": "2026-12-01T10:20:00Z"}}),
                terminated(0, "Completed", "2026-12-01T10:00:05Z", "2026-12-01T10:19:59Z"), n)]}),
            )
        };
        assert_eq!(verdict(&restarts(3)), None);
        assert_eq!(
            verdict(&restarts(4)),
            Some(Verdict::AppError("Restarts (4)".into()))
        );
    }

    /// Row 14 and the undecided cases.
    #[test]
    fn healthy_after_the_configured_time_and_pending_pods_undecided() {
        let running = |since: &str| {
            pod(
                json!({"phase": "Running", "conditions": ready(since), "containerStatuses": [status_of("app",
                json!({"running": {"startedAt": "2026-12-01T10:00:05Z"}}), json!({}), 0)]}),
            )
        };
        assert_eq!(
            verdict(&running("2026-12-01T10:20:00Z")),
            Some(Verdict::Healthy)
        );
        assert_eq!(verdict(&running("2026-12-01T10:25:00Z")), None);
        assert_eq!(verdict(&pod(json!({"phase": "Pending"}))), None);
        assert_eq!(verdict(&pod(Value::Null)), None);
    }

    #[test]
    fn run_time_spans_the_regular_containers() {
        let p = pod(json!({"phase": "Succeeded", "containerStatuses": [
            status_of("a", terminated(0, "Completed", "2026-12-01T10:00:10Z", "2026-12-01T10:01:10Z"), json!({}), 0),
            status_of("b", terminated(0, "Completed", "2026-12-01T10:00:05Z", "2026-12-01T10:00:50Z"), json!({}), 0)]}));
        assert_eq!(run_time_ms(&p), Some(65_000));
        let no_times = pod(json!({"phase": "Succeeded", "containerStatuses": [
            status_of("a", json!({"terminated": {"exitCode": 0}}), json!({}), 0)]}));
        assert_eq!(run_time_ms(&no_times), None);
    }

    #[test]
    fn a_node_failure_names_what_the_facts_already_price() {
        let cause = |r: &str| Verdict::NodeFailed(r.into()).failure_cause();
        assert_eq!(cause("TerminationByKubelet"), Some(FailureCause::Load));
        assert_eq!(cause("Evicted"), Some(FailureCause::Load));
        assert_eq!(
            cause("OOMKilled without a memory limit (node memory)"),
            Some(FailureCause::Load)
        );
        assert_eq!(cause("DeletionByPodGC"), Some(FailureCause::NodeGone));
        assert_eq!(cause("NodeGone"), Some(FailureCause::NodeGone));
        for r in [
            "DeletionByTaintManager",
            "UnexpectedAdmissionError",
            "OutOfnvidia.com/gpu",
            "NodeShutdown",
            "Terminated",
        ] {
            assert_eq!(cause(r), Some(FailureCause::Node), "{r}");
        }
        assert_eq!(Verdict::Healthy.failure_cause(), None);
        assert_eq!(Verdict::AppError("exit 1".into()).failure_cause(), None);
    }
}
