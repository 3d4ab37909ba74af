//! The mutating admission webhook's decision for one pod (pure): the pod's hard constraints as
//! it is created, read by the Worker's own rules (`aco_core::demand::PodDemand`), written into
//! its required node affinity ([`crate::affinity`]) so that kube-scheduler enforces them and the
//! extender needs only its prioritize verb. An annotation the Worker could not use refuses the
//! pod with the Worker's message, where the filter verb would have kept it Pending with it.
//!
//! Scope: pods created with one of `--scheduler-names` (the `MutatingWebhookConfiguration`'s
//! `matchConditions` say so too; this is the second guard). Anything else is allowed unchanged.

use std::collections::BTreeSet;

use aco_core::config::Config;
use aco_core::demand::PodDemand;
use aco_core::k8s::PodView;
use k8s_openapi::api::core::v1::Pod;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use kube::core::response::StatusSummary;
use serde_json::{json, Value};

use crate::affinity::{self, LabelKeys};

/// The pod annotation that says, in words, what the webhook required (`kubectl describe pod`
/// shows annotations, not affinity; the FailedScheduling event only says the node affinity did
/// not match).
pub const ANNOTATION: &str = "scheduling.aco/required-node-affinity";

/// What the webhook did with one review, the `outcome` label of
/// `aco_reporter_admission_reviews_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Not ours (another scheduler, not a CREATE) or no constraint: allowed unchanged.
    Skipped,
    /// Constraints that the pod's affinity already carried: allowed unchanged.
    Unchanged,
    /// Constraints written into the pod's affinity.
    Mutated,
    /// An unusable annotation or constraints no node can meet: refused.
    Refused,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Skipped => "skipped",
            Outcome::Unchanged => "unchanged",
            Outcome::Mutated => "mutated",
            Outcome::Refused => "refused",
        }
    }
}

/// The settings a review needs: the Worker's (the same `[vars]` names) and the reporter's.
#[derive(Debug, Clone)]
pub struct Admission {
    pub config: Config,
    pub scheduler_names: Vec<String>,
    pub keys: LabelKeys,
}

impl Admission {
    pub fn new(config: Config, scheduler_names: Vec<String>, latency_fact_label: &str) -> Self {
        let keys = LabelKeys::new(
            &config.node_keys.gpu_type_labels,
            latency_fact_label,
            &config.node_keys.latency_labels,
        );
        Admission {
            config,
            scheduler_names,
            keys,
        }
    }

    /// The response to `req`; `known_models` gives the GPU model label values of the cluster's
    /// nodes (asked only when a pod names models).
    pub fn review(
        &self,
        req: &AdmissionRequest<Pod>,
        known_models: impl FnOnce() -> BTreeSet<String>,
    ) -> (AdmissionResponse, Outcome) {
        let allow = AdmissionResponse::from(req);
        let Some(pod) = req
            .object
            .as_ref()
            .filter(|_| req.operation == Operation::Create)
        else {
            return (allow, Outcome::Skipped);
        };
        let spec = pod.spec.as_ref();
        let scheduler = spec
            .and_then(|s| s.scheduler_name.as_deref())
            .unwrap_or("default-scheduler");
        if !self.scheduler_names.iter().any(|n| n == scheduler) {
            return (allow, Outcome::Skipped);
        }
        let refusal = allow.clone();
        let refuse = |message: String| {
            let mut r = refusal
                .clone()
                .deny(format!("{scheduler} cannot place this pod: {message}"));
            r.result.status = Some(StatusSummary::Failure);
            r.result.code = 400;
            r.result.reason = "BadRequest".into();
            (r, Outcome::Refused)
        };
        let view: PodView = match serde_json::to_value(pod).and_then(serde_json::from_value) {
            Ok(v) => v,
            Err(e) => return refuse(format!("the pod does not read: {e}")),
        };
        let demand = match PodDemand::from_pod(&view, &self.config.pod_keys, &self.config.node_keys)
        {
            Ok(d) => d,
            Err(e) => return refuse(e.to_string()),
        };
        let wants_models = demand.wants_gpu() && demand.allowed_gpu_models.is_some();
        let known = if wants_models {
            known_models()
        } else {
            BTreeSet::new()
        };
        let constraints = match affinity::constraints(&demand, &self.keys, &known) {
            Ok(Some(c)) => c,
            Ok(None) => return (allow, Outcome::Skipped),
            Err(message) => return refuse(message),
        };
        let node_affinity = spec
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref());
        let existing = node_affinity.and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
        let mut ops: Vec<Value> = Vec::new();
        if let Some(selector) = affinity::require(existing, &constraints.alternatives) {
            let selector = json!(selector);
            ops.push(match (spec.and_then(|s| s.affinity.as_ref()), node_affinity) {
                (None, _) => json!({"op": "add", "path": "/spec/affinity",
                    "value": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}}),
                (Some(_), None) => json!({"op": "add", "path": "/spec/affinity/nodeAffinity",
                    "value": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}),
                (Some(_), Some(_)) => json!({"op": "add",
                    "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
                    "value": selector}),
            });
        }
        let annotations = pod.metadata.annotations.as_ref();
        if annotations.and_then(|a| a.get(ANNOTATION)) != Some(&constraints.summary) {
            ops.push(match annotations {
                None => json!({"op": "add", "path": "/metadata/annotations",
                    "value": {ANNOTATION: constraints.summary}}),
                Some(_) => json!({"op": "add",
                    "path": format!("/metadata/annotations/{}", ANNOTATION.replace('~', "~0").replace('/', "~1")),
                    "value": constraints.summary}),
            });
        }
        if ops.is_empty() {
            return (allow, Outcome::Unchanged);
        }
        let patch: json_patch::Patch = match serde_json::from_value(Value::Array(ops)) {
            Ok(p) => p,
            Err(e) => return refuse(format!("internal error building the patch: {e}")),
        };
        match allow.with_patch(patch) {
            Ok(mut r) => {
                r.warnings = Some(vec![format!(
                    "{scheduler}: required node affinity for {}",
                    constraints.summary
                )]);
                (r, Outcome::Mutated)
            }
            Err(e) => refuse(format!("internal error writing the patch: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::core::admission::AdmissionReview;

    use super::*;

    fn request(pod: Value, operation: &str) -> AdmissionRequest<Pod> {
        let review: AdmissionReview<Pod> = serde_json::from_value(json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "r-1",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "operation": operation,
                "userInfo": {"username": "u"},
                "namespace": "team-a",
                "object": pod,
                "dryRun": false
            }
        }))
        .unwrap();
        review.try_into().unwrap()
    }

    fn pod(annotations: Value, gpus: u32, scheduler: &str) -> Value {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "team-a"},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "pause"}]}});
        if !annotations.as_object().unwrap().is_empty() {
            p["metadata"]["annotations"] = annotations;
        }
        if gpus > 0 {
            p["spec"]["containers"][0]["resources"] =
                json!({"limits": {"nvidia.com/gpu": gpus.to_string()}});
        }
        p
    }

    fn admission() -> Admission {
        Admission::new(
            Config::default(),
            vec!["aco-scheduler".into()],
            "aco/latency-us",
        )
    }

    /// The pod after the response's patch.
    fn patched(pod: &Value, r: &AdmissionResponse) -> Value {
        let mut out = pod.clone();
        let patch: json_patch::Patch = serde_json::from_slice(r.patch.as_ref().unwrap()).unwrap();
        json_patch::patch(&mut out, &patch).unwrap();
        out
    }

    #[test]
    fn a_latency_target_becomes_required_affinity_and_an_annotation() {
        let p = pod(
            json!({"scheduling.aco/latency-target-us": "200"}),
            0,
            "aco-scheduler",
        );
        let (r, outcome) = admission().review(&request(p.clone(), "CREATE"), BTreeSet::new);
        assert_eq!((r.allowed, outcome), (true, Outcome::Mutated));
        let out = patched(&p, &r);
        let terms = &out["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        assert_eq!(
            terms,
            &json!([
                {"matchExpressions": [{"key": "aco/latency-us", "operator": "Lt", "values": ["201"]}]},
                {"matchExpressions": [{"key": "aco/latency-us", "operator": "DoesNotExist"},
                                      {"key": "nodeLatencyUs", "operator": "Lt", "values": ["201"]}]}
            ])
        );
        assert!(out["metadata"]["annotations"][ANNOTATION]
            .as_str()
            .unwrap()
            .starts_with("latency ≤ 200 µs"));
        assert!(r.warnings.unwrap()[0].contains("latency ≤ 200 µs"));
        // Reviewing the result again (reinvocation) changes nothing.
        let (again, outcome) = admission().review(&request(out, "CREATE"), BTreeSet::new);
        assert_eq!(
            (again.allowed, again.patch.is_none(), outcome),
            (true, true, Outcome::Unchanged)
        );
    }

    #[test]
    fn existing_affinity_and_annotations_are_extended_in_place() {
        let mut p = pod(
            json!({"scheduling.aco/gpu-models": "V100M16", "team": "x"}),
            1,
            "aco-scheduler",
        );
        p["spec"]["affinity"] = json!({"podAntiAffinity": {}});
        let (r, _) = admission().review(&request(p.clone(), "CREATE"), || {
            BTreeSet::from(["Tesla-v100m16".to_string(), "T4".to_string()])
        });
        let out = patched(&p, &r);
        assert_eq!(out["spec"]["affinity"]["podAntiAffinity"], json!({}));
        assert_eq!(out["metadata"]["annotations"]["team"], "x");
        let terms = out["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(terms.len(), 3);
        assert_eq!(
            terms[0]["matchExpressions"][0],
            json!({"key": "aco/gpu-type", "operator": "In", "values": ["V100M16", "v100m16"]})
        );
        let mut q = p.clone();
        q["spec"]["affinity"]["nodeAffinity"] =
            json!({"preferredDuringSchedulingIgnoredDuringExecution": []});
        let (r, _) = admission().review(&request(q.clone(), "CREATE"), BTreeSet::new);
        let out = patched(&q, &r);
        assert_eq!(
            out["spec"]["affinity"]["nodeAffinity"]
                ["preferredDuringSchedulingIgnoredDuringExecution"],
            json!([])
        );
        assert!(out["spec"]["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]
            .is_object());
    }

    #[test]
    fn unusable_annotations_are_refused_with_the_workers_message() {
        for (annotations, needle) in [
            (
                json!({"scheduling.aco/latency-target-us": "soon"}),
                "scheduling.aco/latency-target-us",
            ),
            (
                json!({"latency-target-us": "-3"}),
                "positive number of microseconds",
            ),
            (
                json!({"scheduling.aco/gpu-models": " | "}),
                "lists no GPU model",
            ),
        ] {
            let p = pod(annotations, 0, "aco-scheduler");
            let (r, outcome) = admission().review(&request(p, "CREATE"), BTreeSet::new);
            assert_eq!(
                (r.allowed, outcome, r.result.code),
                (false, Outcome::Refused, 400)
            );
            assert!(
                r.result
                    .message
                    .starts_with("aco-scheduler cannot place this pod: ")
                    && r.result.message.contains(needle),
                "{}",
                r.result.message
            );
        }
        let p = pod(
            json!({"scheduling.aco/gpu-models": "A100 SXM4"}),
            1,
            "aco-scheduler",
        );
        let (r, _) = admission().review(&request(p, "CREATE"), BTreeSet::new);
        assert!(
            !r.allowed && r.result.message.contains("label value"),
            "{}",
            r.result.message
        );
    }

    #[test]
    fn other_schedulers_updates_and_unconstrained_pods_pass_untouched() {
        let constrained = json!({"scheduling.aco/latency-target-us": "soon"});
        for (p, op) in [
            (pod(constrained.clone(), 1, "default-scheduler"), "CREATE"),
            (pod(constrained.clone(), 1, "aco-scheduler"), "UPDATE"),
            (pod(json!({}), 0, "aco-scheduler"), "CREATE"),
            (
                pod(
                    json!({"scheduling.aco/gpu-models": "A100"}),
                    0,
                    "aco-scheduler",
                ),
                "CREATE",
            ),
        ] {
            let (r, outcome) = admission().review(&request(p, op), || panic!("not asked"));
            assert_eq!(
                (r.allowed, r.patch.is_none(), outcome),
                (true, true, Outcome::Skipped)
            );
        }
    }
}
