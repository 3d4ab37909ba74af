//! A pod's fate, read from its status: what the Worker's reliability posterior learns from.
//!
//! Failure signals win over success (a pod that was OOM-killed and then ran is a failure of that
//! placement). In order:
//! 1. the `DisruptionTarget` condition (preemption, kubelet eviction, Eviction API, taint manager,
//!    pod GC) or `status.reason = Evicted`;
//! 2. any container (init, sidecar or app) terminated now or last time with `OOMKilled`, or with
//!    a non-zero exit code;
//! 3. phase `Failed`;
//! 4. restarts above a threshold;
//! 5. phase `Succeeded`, or Running and Ready without restarts for `healthy_after_ms` — success.
//!
//! Anything else is not known yet (`None`).

use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus};

use crate::time::ms;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    Succeeded,
    /// Ran healthy for the configured time.
    Healthy,
    /// Why, in Kubernetes' words (`OOMKilled`, `PreemptionByScheduler`, `Error (exit 1)`, …).
    Failed(String),
}

impl Fate {
    pub fn is_success(&self) -> bool {
        !matches!(self, Fate::Failed(_))
    }

    /// A short label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Fate::Succeeded => "succeeded",
            Fate::Healthy => "healthy",
            Fate::Failed(_) => "failed",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct OutcomeRules {
    /// More restarts than this (summed over containers) is a failure.
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

fn all_containers(status: &PodStatus) -> impl Iterator<Item = &ContainerStatus> {
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
}

fn terminated_badly(c: &ContainerStatus) -> Option<String> {
    let states = [c.state.as_ref(), c.last_state.as_ref()];
    for t in states
        .into_iter()
        .flatten()
        .filter_map(|s| s.terminated.as_ref())
    {
        let reason = t.reason.clone().unwrap_or_default();
        if reason == "OOMKilled" {
            return Some(reason);
        }
        if t.exit_code != 0 {
            let reason = if reason.is_empty() {
                "Error".to_string()
            } else {
                reason
            };
            return Some(format!("{reason} (exit {})", t.exit_code));
        }
    }
    None
}

pub fn classify(pod: &Pod, now_ms: u64, rules: &OutcomeRules) -> Option<Fate> {
    let status = pod.status.as_ref()?;
    let conditions = status.conditions.as_deref().unwrap_or_default();
    if let Some(c) = conditions
        .iter()
        .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")
    {
        return Some(Fate::Failed(
            c.reason
                .clone()
                .unwrap_or_else(|| "DisruptionTarget".into()),
        ));
    }
    if status.reason.as_deref() == Some("Evicted") {
        return Some(Fate::Failed("Evicted".into()));
    }
    // A Succeeded pod's containers all exited 0; init containers of a Succeeded pod did too.
    if let Some(reason) = all_containers(status).find_map(terminated_badly) {
        return Some(Fate::Failed(reason));
    }
    match status.phase.as_deref() {
        Some("Failed") => {
            return Some(Fate::Failed(
                status.reason.clone().unwrap_or_else(|| "Failed".into()),
            ))
        }
        Some("Succeeded") => return Some(Fate::Succeeded),
        _ => {}
    }
    let restarts: i32 = all_containers(status).map(|c| c.restart_count).sum();
    if restarts > rules.max_restarts {
        return Some(Fate::Failed(format!("Restarts ({restarts})")));
    }
    if status.phase.as_deref() == Some("Running") && restarts == 0 {
        let ready_since = conditions
            .iter()
            .find(|c| c.type_ == "Ready" && c.status == "True")
            .and_then(|c| c.last_transition_time.as_ref())
            .map(ms)?;
        if now_ms.saturating_sub(ready_since) >= rules.healthy_after_ms {
            return Some(Fate::Healthy);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: &str = "2026-12-01T10:30:00Z";

    fn now() -> u64 {
        crate::time::parse_rfc3339_ms(NOW).unwrap()
    }

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "x"}]},
            "status": status
        }))
        .unwrap()
    }

    fn ready(since: &str) -> serde_json::Value {
        json!([{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T10:00:00Z"},
               {"type": "Ready", "status": "True", "lastTransitionTime": since}])
    }

    #[test]
    fn oom_killed_in_last_state_is_a_failure_even_when_running_again() {
        let p = pod(json!({
            "phase": "Running", "conditions": ready("2026-12-01T10:01:00Z"),
            "containerStatuses": [{"name": "app", "image": "x", "imageID": "", "ready": true, "restartCount": 1,
                "state": {"running": {"startedAt": "2026-12-01T10:05:00Z"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                    "startedAt": "2026-12-01T10:01:00Z", "finishedAt": "2026-12-01T10:04:59Z"}}}]
        }));
        assert_eq!(
            classify(&p, now(), &OutcomeRules::default()),
            Some(Fate::Failed("OOMKilled".into()))
        );
    }

    #[test]
    fn kubelet_eviction_is_a_failure() {
        let p = pod(json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: memory."}));
        assert_eq!(
            classify(&p, now(), &OutcomeRules::default()),
            Some(Fate::Failed("Evicted".into()))
        );
    }

    #[test]
    fn disruption_target_names_the_cause() {
        let p = pod(json!({"phase": "Running", "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
             "message": "Preempted in order to admit critical pod", "lastTransitionTime": "2026-12-01T10:10:00Z"}]}));
        assert_eq!(
            classify(&p, now(), &OutcomeRules::default()),
            Some(Fate::Failed("PreemptionByScheduler".into()))
        );
        let cleared = pod(json!({"phase": "Running", "conditions": [
            {"type": "DisruptionTarget", "status": "False", "reason": "PreemptionByScheduler"}]}));
        assert_eq!(classify(&cleared, now(), &OutcomeRules::default()), None);
    }

    #[test]
    fn error_exit_and_failed_phase() {
        let p = pod(
            json!({"phase": "Failed", "containerStatuses": [{"name": "app", "image": "x", "imageID": "",
            "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}]}),
        );
        assert_eq!(
            classify(&p, now(), &OutcomeRules::default()),
            Some(Fate::Failed("Error (exit 2)".into()))
        );
        let bare = pod(json!({"phase": "Failed"}));
        assert_eq!(
            classify(&bare, now(), &OutcomeRules::default()),
            Some(Fate::Failed("Failed".into()))
        );
    }

    #[test]
    fn succeeded_and_healthy() {
        let done = pod(
            json!({"phase": "Succeeded", "containerStatuses": [{"name": "app", "image": "x", "imageID": "",
            "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
        );
        assert_eq!(
            classify(&done, now(), &OutcomeRules::default()),
            Some(Fate::Succeeded)
        );
        let running = |since: &str| {
            pod(
                json!({"phase": "Running", "conditions": ready(since), "containerStatuses": [{"name": "app",
                "image": "x", "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {}}}]}),
            )
        };
        assert_eq!(
            classify(
                &running("2026-12-01T10:20:00Z"),
                now(),
                &OutcomeRules::default()
            ),
            Some(Fate::Healthy)
        );
        assert_eq!(
            classify(
                &running("2026-12-01T10:25:00Z"),
                now(),
                &OutcomeRules::default()
            ),
            None
        );
    }

    #[test]
    fn restarts_above_the_threshold() {
        let p = |n: i32| {
            pod(
                json!({"phase": "Running", "containerStatuses": [{"name": "app", "image": "x", "imageID": "",
                "ready": true, "restartCount": n, "state": {"running": {}},
                "lastState": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
            )
        };
        assert_eq!(classify(&p(3), now(), &OutcomeRules::default()), None);
        assert_eq!(
            classify(&p(4), now(), &OutcomeRules::default()),
            Some(Fate::Failed("Restarts (4)".into()))
        );
    }

    #[test]
    fn pending_pods_have_no_fate_yet() {
        assert_eq!(
            classify(
                &pod(json!({"phase": "Pending"})),
                now(),
                &OutcomeRules::default()
            ),
            None
        );
        assert_eq!(
            classify(&pod(json!(null)), now(), &OutcomeRules::default()),
            None
        );
    }
}
