//! Nodes of the OpenB trace (Alibaba's GPU cluster, `shared/data/openb` beside the repository)
//! as v1.Node objects, as the integration tests and the kube benches use them.

use std::path::PathBuf;

use serde_json::{json, Value};

pub fn openb_dir() -> PathBuf {
    let dir = crate::repo_root().join("../shared/data/openb");
    assert!(
        dir.is_dir(),
        "{} is missing (the OpenB trace lives in shared/ beside the repo)",
        dir.display()
    );
    dir
}

/// The OpenB GPU nodes (v1.Node objects), in file order.
pub fn openb_gpu_nodes() -> Vec<Value> {
    let text = std::fs::read_to_string(openb_dir().join("openb_node_list_gpu_node.yaml")).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .filter_map(|doc| {
            let v: serde_yaml::Value = serde::Deserialize::deserialize(doc).ok()?;
            let j: Value = serde_json::to_value(v).ok()?;
            (j["kind"] == "Node").then_some(j)
        })
        .collect()
}

/// The OpenB CPU-only nodes (`openb_node_list_all_node.csv` rows without a GPU model) as
/// v1.Node objects named `openb-cpu-NNNN` (the CSV's own names collide with the GPU list's).
pub fn openb_cpu_nodes() -> Vec<Value> {
    let text = std::fs::read_to_string(openb_dir().join("openb_node_list_all_node.csv")).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            (f.len() >= 5 && f[4].trim().is_empty()).then(|| (f[1].to_owned(), f[2].to_owned()))
        })
        .enumerate()
        .map(|(i, (cpu_milli, mem_mib))| {
            let name = format!("openb-cpu-{i:04}");
            let res = json!({"cpu": format!("{cpu_milli}m"), "memory": format!("{mem_mib}Mi"), "pods": "110"});
            json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
                "status": {"allocatable": res, "capacity": res},
            })
        })
        .collect()
}

/// First OpenB GPU node of each model in `models` (in that order, repeats pick the next one).
pub fn pick_gpu_nodes(models: &[&str]) -> Vec<Value> {
    let all = openb_gpu_nodes();
    let mut used = std::collections::HashSet::new();
    models
        .iter()
        .map(|m| {
            let n = all
                .iter()
                .find(|n| {
                    n["metadata"]["labels"]["alibabacloud.com/gpu-card-model"] == *m
                        && !used.contains(n["metadata"]["name"].as_str().unwrap())
                })
                .unwrap_or_else(|| panic!("no OpenB node of model {m}"))
                .clone();
            used.insert(n["metadata"]["name"].as_str().unwrap().to_owned());
            n
        })
        .collect()
}

/// The OpenB GPU nodes, the first `per_model` of each GPU model (in file order).
pub fn openb_nodes(per_model: usize) -> Vec<Value> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    openb_gpu_nodes()
        .into_iter()
        .filter(|node| {
            let model = node["metadata"]["labels"]["alibabacloud.com/gpu-card-model"]
                .as_str()
                .unwrap_or("CPU")
                .to_string();
            let n = seen.entry(model).or_default();
            *n += 1;
            *n <= per_model
        })
        .collect()
}

/// Four OpenB nodes (one per model) priced 0.45, 0.45, 1.20 and 3.20 $/h
/// (`aco/cost-per-hour`).
pub fn priced_nodes() -> Vec<Value> {
    let mut nodes = openb_nodes(1);
    nodes.truncate(4);
    for (node, cost) in nodes.iter_mut().zip(["0.45", "0.45", "1.20", "3.20"]) {
        crate::nodes::set_label(node, "aco/cost-per-hour", cost);
    }
    nodes
}

/// `n` nodes with long (253-character) names: the largest decision a prioritize call can make.
pub fn long_named_nodes(n: usize) -> Vec<Value> {
    let base = priced_nodes();
    (0..n)
        .map(|i| {
            let mut node = base[i % base.len()].clone();
            let prefix = format!("n{i:04}-");
            node["metadata"]["name"] = json!(format!("{prefix}{}", "x".repeat(253 - prefix.len())));
            node
        })
        .collect()
}
