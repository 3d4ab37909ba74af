//! The v1.Pod both pod builders start from: [`crate::api::pod`] (the pod as kube-scheduler
//! sends it to the extender: UID, creation time, `Pending` status, limits = requests) and
//! [`crate::kube::fixtures::pod`] (a pod a test creates in the API server: defaults, GPU
//! limits, affinity). They differ in what the other side of each adds, not in the envelope.

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use serde_json::{json, Value};

use crate::kube::SCHEDULER_NAME;

/// A pod of one `container`, for our scheduler (`aco-scheduler`).
pub fn pod_object(
    ns: &str,
    name: &str,
    labels: Value,
    annotations: Value,
    container: Value,
) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations},
        "spec": {"schedulerName": SCHEDULER_NAME, "containers": [container]},
    })
}

/// `pod` with `container` appended to its containers.
pub fn with_container(mut pod: Value, container: Value) -> Value {
    pod["spec"]["containers"]
        .as_array_mut()
        .expect("a pod with containers")
        .push(container);
    pod
}

/// `pod` edited as a k8s-openapi `Pod` (a UID, a status).
pub fn edit_pod(pod: Value, edit: impl FnOnce(&mut Pod)) -> Value {
    let mut typed: Pod = crate::kube::typed(&pod);
    edit(&mut typed);
    serde_json::to_value(typed).expect("a pod serialises")
}

/// `pod` with its spec edited as a k8s-openapi `PodSpec` (bound to a node, for another
/// scheduler, another restart policy).
pub fn edit_spec(pod: Value, edit: impl FnOnce(&mut PodSpec)) -> Value {
    edit_pod(pod, |p| edit(p.spec.as_mut().expect("a pod spec")))
}

/// The node the pod is bound to (`spec.nodeName`), if any.
pub fn node_of(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.node_name.as_deref()
}
