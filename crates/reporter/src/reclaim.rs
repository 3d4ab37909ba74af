//! Spot reclamation: a spot node (the core's label rule, `aco_core::node_labels::is_spot`) deleted
//! while pods were still bound to it that had not been drained or evicted first. A cluster
//! autoscaler's scale-down or `kubectl drain` evicts the node's pods before the node goes, so only
//! pods that were never asked to leave count: not terminating (`deletionTimestamp`), not finished
//! (Succeeded/Failed), and not DaemonSet or static (mirror) pods, which a drain leaves in place by
//! design. The Worker is told in `PUT /v1/nodes` `reclaimed`; the pods' own ends are node-caused
//! ("node gone", [`crate::outcome`] rows 3 and 8).

use aco_core::config::NodeKeys;

use crate::node_record::NodeRecord;
use crate::pod_record::PodRecord;

/// A pod a drain would have evicted: controller-less or owned by something other than a
/// DaemonSet or the node itself (a static pod's mirror).
fn drainable(pod: &PodRecord) -> bool {
    !pod.controller
        .as_ref()
        .is_some_and(|(kind, _)| matches!(&**kind, "DaemonSet" | "Node"))
}

/// Whether `node`, just deleted, was reclaimed spot capacity, given the pods bound to it.
pub fn reclaimed<'a>(
    node: &NodeRecord,
    pods_on_node: impl IntoIterator<Item = &'a PodRecord>,
    keys: &NodeKeys,
) -> bool {
    if !aco_core::node_labels::is_spot(&node.label_map(), keys) {
        return false;
    }
    pods_on_node
        .into_iter()
        .any(|p| p.deletion.is_none() && p.holds_resources() && drainable(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aco_core::config::Config;
    use serde_json::json;

    fn node(labels: serde_json::Value) -> NodeRecord {
        crate::node_record::tests::record(json!({"metadata": {"name": "n1", "labels": labels}}))
    }

    fn pod(meta: serde_json::Value, phase: &str) -> PodRecord {
        let mut m = json!({"name": "p", "namespace": "ns", "uid": "u"});
        m.as_object_mut()
            .unwrap()
            .extend(meta.as_object().cloned().unwrap_or_default());
        crate::pod_record::tests::record(
            json!({"metadata": m, "spec": {"nodeName": "n1", "containers": []},
            "status": {"phase": phase}}),
        )
    }

    fn owned_by(kind: &str) -> serde_json::Value {
        json!({"ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": "x", "uid": "1", "controller": true}]})
    }

    #[test]
    fn a_spot_node_deleted_under_running_pods_was_reclaimed() {
        let c = Config::default();
        let spot = node(json!({"karpenter.sh/capacity-type": "spot"}));
        let running = pod(owned_by("ReplicaSet"), "Running");
        assert!(reclaimed(&spot, [&running], &c.node_keys));
        // Not spot: a deleted on-demand node is just deleted.
        let on_demand = node(json!({"karpenter.sh/capacity-type": "on-demand"}));
        assert!(!reclaimed(&on_demand, [&running], &c.node_keys));
    }

    #[test]
    fn a_drained_spot_node_was_not_reclaimed() {
        let c = Config::default();
        let spot = node(json!({"cloud.google.com/gke-spot": "true"}));
        assert!(
            !reclaimed(&spot, [], &c.node_keys),
            "empty: drained or never used"
        );
        let evicting = pod(
            json!({"deletionTimestamp": "2026-12-01T10:00:00Z", "ownerReferences": []}),
            "Running",
        );
        let done = pod(owned_by("Job"), "Succeeded");
        let daemon = pod(owned_by("DaemonSet"), "Running");
        let mirror = pod(owned_by("Node"), "Running");
        assert!(
            !reclaimed(&spot, [&evicting, &done, &daemon, &mirror], &c.node_keys),
            "a drain leaves DaemonSet and static pods, and evicts the rest"
        );
        let bare = pod(json!({}), "Running");
        assert!(
            reclaimed(&spot, [&daemon, &bare], &c.node_keys),
            "one pod never asked to leave"
        );
    }
}
