//! Real-shaped extender requests: OpenB v1.Node objects (the derived sample in
//! `crates/core/tests/data`) replicated to any count with unique names, plus the labels the
//! extender reads, and a GPU pod. Shared by the core criterion bench, the HTTP bench and the
//! facts-at-scale tests.

use serde_json::{json, Value};

const SAMPLE: &str = include_str!("../../core/tests/data/openb_node_sample.yaml");

pub fn nodes(count: usize) -> Vec<Value> {
    let templates: Vec<Value> = serde_yaml::Deserializer::from_str(SAMPLE)
        .map(|doc| serde::Deserialize::deserialize(doc).expect("sample node YAML"))
        .collect();
    (0..count)
        .map(|i| {
            let mut node = templates[i % templates.len()].clone();
            let name = format!("bench-node-{i:05}");
            node["metadata"]["name"] = json!(name);
            let labels = &mut node["metadata"]["labels"];
            labels["kubernetes.io/hostname"] = json!(name);
            labels["aco/cost-per-hour"] = json!(format!("{:.2}", 0.4 + (i % 13) as f64 * 0.25));
            labels["aco/latency-us"] = json!(format!("{}", 40 + (i % 7) * 30));
            labels["aco/instance-type"] = json!(if i % 5 == 0 { "spot" } else { "on-demand" });
            node
        })
        .collect()
}

pub fn bench_pod() -> Value {
    json!({
        "metadata": {"name": "bench-pod", "namespace": "bench", "uid": "bench-uid",
                     "labels": {"aco/workload-type": "latency-critical"},
                     "annotations": {"scheduling.aco/latency-target-us": "200"}},
        "spec": {"containers": [{"name": "main", "image": "x",
                 "resources": {"requests": {"cpu": "2", "memory": "8Gi", "alibabacloud.com/gpu-count": "1"}}}]}
    })
}

/// ExtenderArgs in names mode (`nodeCacheCapable: true`): node names only.
pub fn extender_args_names(count: usize) -> String {
    let names: Vec<Value> = nodes(count)
        .iter()
        .map(|n| n["metadata"]["name"].clone())
        .collect();
    json!({"Pod": bench_pod(), "NodeNames": names}).to_string()
}

/// `PUT /v1/nodes` body with the facts names mode needs for the same nodes (labels, allocatable).
pub fn node_facts_report(count: usize) -> String {
    let reports: Vec<Value> = nodes(count)
        .iter()
        .map(|n| json!({"name": n["metadata"]["name"], "labels": n["metadata"]["labels"], "allocatable": n["status"]["allocatable"]}))
        .collect();
    json!({ "nodes": reports }).to_string()
}

/// ExtenderArgs in full-Nodes mode, as kube-scheduler sends it with `nodeCacheCapable: false`.
pub fn extender_args(count: usize) -> String {
    json!({"Pod": bench_pod(), "Nodes": {"metadata": {}, "items": nodes(count)}, "NodeNames": null})
        .to_string()
}
