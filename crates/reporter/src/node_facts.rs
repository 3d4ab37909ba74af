//! A node's facts as the Worker wants them: the labels it reads, allocatable, what the pods bound
//! to the node request (kube-scheduler's rule, computed by the core's `pod_request`), network
//! latency, a utilisation sample, and per-GPU free shares where the cluster exposes them.

use std::collections::BTreeMap;

use aco_core::api::nodes::{NodeReport, UtilisationSample};
use aco_core::config::NodeKeys;
use aco_core::k8s::{QuantityText, RawResourceList, ResourceAmounts};
use aco_core::names::NodeName;
use aco_core::quantity;

use crate::node_record::NodeRecord;
use crate::pod_record::{to_quantity_text, PodRecord};

/// A load reading and the sample's own timestamp: NodeMetrics usage (CPU, memory), or a busy
/// fraction computed by the source (Prometheus: the busiest of CPU, memory, GPU).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeUsage {
    pub at_ms: u64,
    pub cpu_milli: i64,
    pub memory_bytes: i64,
    /// Already a fraction of the node's capacity; used as it is when set.
    pub busy_fraction: Option<f64>,
}

/// Sums the requests of the pods that hold resources on a node (each summed once, as it
/// arrived: [`PodRecord::requests`]).
pub fn requested_sum<'a>(pods: impl IntoIterator<Item = &'a PodRecord>) -> ResourceAmounts {
    let mut total = ResourceAmounts::default();
    for pod in pods.into_iter().filter(|p| p.holds_resources()) {
        for (name, amount) in pod.requests.iter().flatten() {
            total.add_to(name, *amount);
        }
    }
    total
}

/// The label keys the Worker reads (by its own configuration): everything else stays home.
pub fn labels_the_worker_reads(node_keys: &NodeKeys) -> Vec<String> {
    let mut keys: Vec<String> = node_keys
        .gpu_type_labels
        .iter()
        .chain(&node_keys.latency_labels)
        .chain([&node_keys.cost_label, &node_keys.instance_type_label])
        .cloned()
        .chain(node_keys.spot_labels.iter().map(|(k, _)| k.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// Utilisation of a node from a NodeMetrics sample: the busier of CPU and memory, as a fraction
/// of allocatable (a node short of either is hot for a latency-critical pod). `None` when the
/// sample is older than `max_age_ms` or allocatable is unknown.
pub fn utilisation(
    usage: &NodeUsage,
    allocatable: &ResourceAmounts,
    now_ms: u64,
    max_age_ms: u64,
) -> Option<UtilisationSample> {
    if now_ms.saturating_sub(usage.at_ms) > max_age_ms {
        return None;
    }
    if let Some(busy) = usage.busy_fraction.filter(|b| b.is_finite()) {
        return Some(UtilisationSample {
            at_ms: usage.at_ms,
            value: busy.clamp(0.0, 1.0),
        });
    }
    let fraction = |used: i64, total: i64| (total > 0).then(|| used.max(0) as f64 / total as f64);
    let cpu = fraction(usage.cpu_milli, allocatable.get("cpu"));
    let memory = fraction(usage.memory_bytes, allocatable.get("memory"));
    let value = match (cpu, memory) {
        (Some(c), Some(m)) => c.max(m),
        (Some(v), None) | (None, Some(v)) => v,
        (None, None) => return None,
    };
    Some(UtilisationSample {
        at_ms: usage.at_ms,
        value: value.clamp(0.0, 1.0),
    })
}

/// Parsed allocatable of a node (`cpu` milli, the rest units); unreadable entries are skipped.
pub fn allocatable(node: &NodeRecord) -> ResourceAmounts {
    let mut out = ResourceAmounts::default();
    for (name, q) in node.allocatable.iter() {
        let parsed = if &**name == "cpu" {
            quantity::parse_milli(q)
        } else {
            quantity::parse_value(q)
        };
        if let Ok(v) = parsed {
            out.insert(name, v);
        }
    }
    out
}

/// Everything the reporter says about one node at `now_ms`.
pub struct FactsInput<'a> {
    pub node: &'a NodeRecord,
    pub requested: &'a ResourceAmounts,
    pub usage: Option<&'a NodeUsage>,
    pub gpu_free_milli: Option<Vec<u32>>,
    pub label_keys: &'a [String],
    pub latency_label: &'a str,
    pub metrics_max_age_ms: u64,
    pub now_ms: u64,
    /// Until when the node and pod caches were confirmed by healthy watches
    /// ([`crate::freshness`]): the report's `observedAtMs`.
    pub observed_at_ms: u64,
    /// The node's price from a cost tool (OpenCost), sent as the cost label instead of the
    /// node's own: `(label key, $/h)`.
    pub price: Option<(&'a str, f64)>,
}

/// An error (the validator's reason) for a node name the Worker would refuse: reporting it
/// would fail the whole batch.
pub fn node_report(input: FactsInput<'_>) -> Result<NodeReport, String> {
    let node = input.node;
    let mut labels: BTreeMap<String, String> = node
        .labels
        .iter()
        .filter(|(k, _)| input.label_keys.iter().any(|key| key == &**k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some((key, per_hour)) = input.price.filter(|(_, p)| p.is_finite() && *p >= 0.0) {
        labels.insert(key.to_string(), per_hour.to_string());
    }
    let allocatable_text: RawResourceList = node
        .allocatable
        .iter()
        .map(|(k, v)| (k.to_string(), QuantityText(v.to_string())))
        .collect();
    // Read as the Worker reads latency labels (a whole number, as kube-scheduler's `Lt` does):
    // the fact must not pass a node that the admission webhook's affinity does not.
    let latency_us = node
        .label(input.latency_label)
        .and_then(aco_core::node_labels::latency_label_value);
    let utilisation = input
        .usage
        .and_then(|u| {
            utilisation(
                u,
                &allocatable(node),
                input.now_ms,
                input.metrics_max_age_ms,
            )
        })
        .into_iter()
        .collect();
    let name = NodeName::parse(&node.name)?;
    Ok(NodeReport {
        name,
        // The reporter always sends identity and requests: a node without labels reports `{}`.
        labels: Some(labels),
        allocatable: Some(allocatable_text),
        requested: Some(to_quantity_text(input.requested)),
        latency_us,
        observed_at_ms: Some(input.observed_at_ms),
        utilisation,
        gpu_free_milli: input.gpu_free_milli,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_record::NodeReader;
    use crate::pod_record::PodReader;
    use aco_core::config::Config;

    fn pod(json: serde_json::Value) -> PodRecord {
        let reader = PodReader::new(&Config::default().pod_keys, None, Default::default());
        reader.read(&serde_json::from_value(json).unwrap())
    }

    fn simple_pod(uid: &str, phase: &str, cpu: &str, memory: &str) -> PodRecord {
        pod(serde_json::json!({
            "metadata": {"name": uid, "namespace": "ns", "uid": uid, "resourceVersion": "1"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": phase}
        }))
    }

    #[test]
    fn requested_follows_kube_schedulers_rule() {
        // Sidecar (restartPolicy Always) runs beside the app; the init container peaks alone with
        // the sidecar started before it; overhead is added; GPUs in limits only count as requested.
        let p = pod(serde_json::json!({
            "metadata": {"name": "p", "uid": "u1", "resourceVersion": "7"},
            "spec": {
                "nodeName": "n1",
                "overhead": {"cpu": "250m", "memory": "64Mi"},
                "initContainers": [
                    {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}}},
                    {"name": "migrate", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}
                ],
                "containers": [
                    {"name": "app", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"nvidia.com/gpu": "1"}}},
                    {"name": "log", "resources": {"requests": {"cpu": "100m"}}}
                ]
            },
            "status": {"phase": "Running"}
        }));
        let r = p.request_amounts();
        // running: 1 + 0.1 + 0.5 sidecar = 1.6; init: 3 + 0.5 = 3.5 → 3.5 + 0.25 overhead
        assert_eq!(r.get("cpu"), 3_750);
        assert_eq!(r.get("memory"), (2i64 << 30) + (128 << 20) + (64 << 20));
        assert_eq!(r.get("nvidia.com/gpu"), 1);
    }

    #[test]
    fn terminal_pods_release_their_requests() {
        let pods = [
            simple_pod("a", "Running", "1", "1Gi"),
            simple_pod("b", "Pending", "500m", "0"),
            simple_pod("c", "Succeeded", "4", "4Gi"),
            simple_pod("d", "Failed", "4", "4Gi"),
        ];
        let sum = requested_sum(pods.iter());
        assert_eq!(sum.get("cpu"), 1_500);
        assert_eq!(sum.get("memory"), 1 << 30);
        assert_eq!(to_quantity_text(&sum)["cpu"].0, "1500m");
    }

    #[test]
    fn utilisation_is_the_busier_resource_and_stale_samples_are_dropped() {
        let alloc = ResourceAmounts::from([("cpu", 8_000), ("memory", 16 << 30)]);
        let u = NodeUsage {
            at_ms: 10_000,
            cpu_milli: 2_000,
            memory_bytes: 12 << 30,
            busy_fraction: None,
        };
        let s = utilisation(&u, &alloc, 20_000, 60_000).unwrap();
        assert_eq!(s.at_ms, 10_000);
        assert!((s.value - 0.75).abs() < 1e-12);
        assert_eq!(utilisation(&u, &alloc, 80_001, 60_000), None);
        let over = NodeUsage {
            at_ms: 10_000,
            cpu_milli: 9_000,
            memory_bytes: 0,
            busy_fraction: None,
        };
        assert_eq!(
            utilisation(&over, &alloc, 10_000, 60_000).unwrap().value,
            1.0
        );
        assert_eq!(
            utilisation(&u, &ResourceAmounts::default(), 10_000, 60_000),
            None
        );
        let prometheus = NodeUsage {
            busy_fraction: Some(0.85),
            ..u
        };
        assert_eq!(
            utilisation(&prometheus, &ResourceAmounts::default(), 20_000, 60_000),
            Some(UtilisationSample {
                at_ms: 10_000,
                value: 0.85
            })
        );
    }

    #[test]
    fn report_keeps_only_the_labels_the_worker_reads() {
        let keys = labels_the_worker_reads(&Config::default().node_keys);
        let node = NodeReader::new(&keys, "aco/latency-us", Default::default()).read(
            &serde_json::from_value(serde_json::json!({
                "metadata": {"name": "n1", "labels": {"aco/gpu-type": "T4", "aco/latency-us": "250", "team": "x",
                             "karpenter.sh/capacity-type": "spot"}},
                "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "1"}}
            }))
            .unwrap(),
        );
        assert_eq!(node.label("team"), None, "a label nobody reads is not kept");
        let requested = ResourceAmounts::from([("cpu", 1_500)]);
        let r = node_report(FactsInput {
            node: &node,
            requested: &requested,
            usage: None,
            gpu_free_milli: None,
            label_keys: &keys,
            latency_label: "aco/latency-us",
            metrics_max_age_ms: 60_000,
            now_ms: 5,
            observed_at_ms: 5,
            price: None,
        })
        .unwrap();
        assert_eq!(
            r.labels.as_ref().unwrap().keys().collect::<Vec<_>>(),
            [
                "aco/gpu-type",
                "aco/latency-us",
                "karpenter.sh/capacity-type"
            ]
        );
        assert_eq!(r.latency_us, Some(250.0));
        assert_eq!(r.allocatable.as_ref().unwrap()["memory"].0, "16Gi");
        assert_eq!(r.requested.as_ref().unwrap()["cpu"].0, "1500m");
        assert!(r.utilisation.is_empty());
        // The bytes the reporter has always sent (the shape is `aco_core::api::nodes`'s now).
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            concat!(
                r#"{"name":"n1","labels":{"aco/gpu-type":"T4","aco/latency-us":"250","karpenter.sh/capacity-type":"spot"},"#,
                r#""allocatable":{"cpu":"8","memory":"16Gi","nvidia.com/gpu":"1"},"requested":{"cpu":"1500m"},"#,
                r#""latencyUs":250.0,"observedAtMs":5}"#
            )
        );
    }
}
