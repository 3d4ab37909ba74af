//! Real-shaped extender requests: OpenB v1.Node objects (the derived sample in
//! `crates/core/tests/data`) replicated to any count with unique names, plus the labels the
//! extender reads (`real_shaped_nodes`: and what a real node carries besides), and a GPU pod.
//! Shared by the core criterion bench, the HTTP bench and the facts-at-scale tests.

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

/// Real-shaped v1.Node objects as kube-scheduler sends them in full-object mode: the OpenB
/// sample ([`nodes`]) plus what a real node carries besides — `status.images` (21
/// images, each a digest and a tag), conditions with messages, addresses, nodeInfo, the usual
/// well-known labels and annotations — about 7.4 KB of JSON each, the size of the issue's 37 MB
/// for 5,000 nodes.
pub fn real_shaped_nodes(count: usize) -> Vec<Value> {
    nodes(count)
        .into_iter()
        .enumerate()
        .map(|(i, mut node)| {
            let labels = &mut node["metadata"]["labels"];
            for (k, v) in [
                ("beta.kubernetes.io/arch", "amd64"),
                ("beta.kubernetes.io/os", "linux"),
                ("kubernetes.io/arch", "amd64"),
                ("kubernetes.io/os", "linux"),
                ("node.kubernetes.io/instance-type", "ecs.gn7i-c32g1.8xlarge"),
                ("topology.kubernetes.io/region", "cn-hangzhou"),
                ("topology.kubernetes.io/zone", "cn-hangzhou-h"),
                ("node-role.kubernetes.io/worker", ""),
            ] {
                labels[k] = json!(v);
            }
            node["metadata"]["annotations"] = json!({
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": format!("{{\"diskplugin.csi.alibabacloud.com\":\"i-bp1{i:017}\"}}"),
            });
            node["metadata"]["uid"] = json!(format!("6c1f{i:08}-3b5e-4d0a-9a7e-1c2b3d4e5f60"));
            node["metadata"]["resourceVersion"] = json!(format!("{}", 81_234_567 + i));
            node["spec"]["podCIDR"] = json!(format!("10.{}.{}.0/24", i / 256, i % 256));
            node["spec"]["providerID"] = json!(format!("alicloud://cn-hangzhou.i-bp1{i:017}"));
            let status = &mut node["status"];
            status["addresses"] = json!([{"type": "InternalIP", "address": format!("10.0.{}.{}", i / 250, i % 250)}, {"type": "Hostname", "address": format!("bench-node-{i:05}")}]);
            status["conditions"] = json!(["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"].iter().map(|c| json!({
                "type": c, "status": if *c == "Ready" { "True" } else { "False" },
                "lastHeartbeatTime": "2026-11-29T10:00:00Z", "lastTransitionTime": "2026-11-01T08:00:00Z",
                "reason": format!("Kubelet{c}"), "message": format!("kubelet has no {c} (condition reported by the node's kubelet)")})).collect::<Vec<_>>());
            status["daemonEndpoints"] = json!({"kubeletEndpoint": {"Port": 10250}});
            status["nodeInfo"] = json!({"machineID": format!("{i:032x}"), "systemUUID": format!("{i:032X}"), "bootID": format!("{:032x}", i * 7),
                "kernelVersion": "5.10.134-16.al8.x86_64", "osImage": "Alibaba Cloud Linux 3", "containerRuntimeVersion": "containerd://1.6.28",
                "kubeletVersion": "v1.31.1-aliyun.1", "kubeProxyVersion": "v1.31.1-aliyun.1", "operatingSystem": "linux", "architecture": "amd64"});
            status["images"] = json!((0..21).map(|k| json!({
                "names": [format!("registry.cn-hangzhou.aliyuncs.com/team-{}/service-{k}@sha256:{:064x}", k % 7, (i * 131 + k) as u128 * 0x9e37_79b9_7f4a_7c15),
                          format!("registry.cn-hangzhou.aliyuncs.com/team-{}/service-{k}:v1.{k}.{}", k % 7, i % 10)],
                "sizeBytes": 104_857_600 + k * 1_048_576})).collect::<Vec<_>>());
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
    kube_scheduler_order(&json!(null), &Value::Array(names))
}

/// `PUT /v1/nodes` body with the facts names mode needs for the same nodes (labels, allocatable).
pub fn node_facts_report(count: usize) -> String {
    let reports: Vec<Value> = nodes(count).iter().map(identity_report).collect();
    json!({ "nodes": reports }).to_string()
}

/// The report of a v1.Node's identity as the reporter sends it (name, labels, allocatable): what
/// names mode knows of a node that full-object mode reads from the object.
pub fn identity_report(node: &Value) -> Value {
    json!({"name": node["metadata"]["name"], "labels": node["metadata"]["labels"],
           "allocatable": node["status"]["allocatable"]})
}

/// The same pod and nodes as [`extender_args`], shaped for the seed extender's request model
/// (github.com/Aravind0403/ACO_Platform_Extension, `extender/k8s_models.py`: each node's `name`,
/// `allocatable` and `labels` at the top level, its GPU as the `aco/gpu-type` and
/// `aco/gpu-count` labels, a GPU pod as `limits: nvidia.com/gpu`), for the side-by-side bench.
pub fn seed_extender_args(count: usize) -> String {
    let items: Vec<Value> = nodes(count)
        .iter()
        .map(|n| {
            let alloc = &n["status"]["allocatable"];
            let mut labels = n["metadata"]["labels"].clone();
            let gpus = alloc["alibabacloud.com/gpu-count"].as_str().unwrap_or("0");
            if gpus != "0" {
                let model = labels["alibabacloud.com/gpu-card-model"]
                    .as_str()
                    .unwrap_or("gpu")
                    .to_lowercase();
                labels["aco/gpu-type"] = json!(model);
                labels["aco/gpu-count"] = json!(gpus);
            }
            json!({"name": n["metadata"]["name"], "labels": labels,
                   "allocatable": {"cpu": alloc["cpu"], "memory": alloc["memory"]}})
        })
        .collect();
    let mut pod = bench_pod();
    pod["metadata"]["labels"]["aco/tenant"] = json!("bench");
    pod["spec"]["containers"][0]["resources"]["limits"] = json!({"nvidia.com/gpu": "1"});
    json!({"Pod": pod, "Nodes": {"items": items}}).to_string()
}

/// ExtenderArgs in full-Nodes mode, as kube-scheduler sends it with `nodeCacheCapable: false`.
pub fn extender_args(count: usize) -> String {
    kube_scheduler_order(
        &json!({"metadata": {}, "items": nodes(count)}),
        &json!(null),
    )
}

/// `ExtenderArgs` with the bench pod, its keys in the order kube-scheduler writes them (Go's
/// encoding/json follows the struct: `Pod`, `Nodes`, `NodeNames`), which `json!` would sort.
fn kube_scheduler_order(nodes: &Value, node_names: &Value) -> String {
    format!(
        r#"{{"Pod":{},"Nodes":{nodes},"NodeNames":{node_names}}}"#,
        bench_pod()
    )
}
