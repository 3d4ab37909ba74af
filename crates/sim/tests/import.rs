//! `aco-sim import` on a real-shaped `kubectl get nodes,pods -A -o json` dump, and the imported
//! workload replayed by `aco-sim run` and `aco-sim saturate` (the command line, in process).
//!
//! The dump: OpenB GPU nodes as v1.Node objects (`../shared/data/openb`, through the test kit)
//! and CPU nodes, some priced by their `aco/cost-per-hour` label and some spot, one cordoned
//! and one tainted control-plane node; the shipped sample's pods (`data/openb-sample`) as
//! v1.Pods with what an API server returns — owner references, managed fields, conditions,
//! container statuses, `last-applied-configuration` — spread over namespaces (one with a
//! tenant label), latency-critical and batch, GPU-whole and GPU-share, finished, running and
//! pending as of a snapshot time; plus a DaemonSet pod on every node, a static pod, and two
//! pods that share a name in two namespaces.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use aco_sim::cli::{main as aco_sim, Cli};
use aco_sim::cluster::{sim_config, WorldParams};
use aco_sim::import::observed::world_from_files;
use aco_sim::import::{kubectl, Imported};
use aco_sim::prices::PriceTable;
use aco_sim::trace::{read_pods, TraceNode, TracePod};
use aco_testkit::openb::{openb_cpu_nodes, openb_nodes};
use aco_testkit::repo_root;
use clap::Parser;
use serde_json::{json, Value};

/// The dump's clock: the first pod's creation, and when `kubectl get` ran.
const BASE: u64 = 1_767_225_600; // 2026-01-01T00:00:00Z
const NAMESPACES: [&str; 3] = ["research", "serving", "batch-jobs"];

fn rfc3339(unix: u64) -> String {
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix))
        .to_string()
}

fn prices() -> PriceTable {
    PriceTable::load(&repo_root().join("data/prices")).unwrap()
}

struct Dump {
    list: Value,
    /// Node name → what the test expects: priced by label (Some) or not, spot.
    labelled_price: BTreeMap<String, Option<f64>>,
    spot: BTreeSet<String>,
    schedulable: Vec<String>,
    left_out: Vec<String>,
    pods: Vec<TracePod>,
    snapshot: u64,
}

/// The dump's nodes and what the test expects of each.
struct NodeSet {
    nodes: Vec<Value>,
    /// Priced by its label (Some) or by the table.
    labelled_price: BTreeMap<String, Option<f64>>,
    spot: BTreeSet<String>,
    schedulable: Vec<String>,
    left_out: Vec<String>,
}

fn node_dump() -> NodeSet {
    let mut nodes = openb_nodes(4);
    nodes.extend(openb_cpu_nodes().into_iter().take(8));
    let (mut priced, mut spot, mut schedulable, mut left_out) =
        (BTreeMap::new(), BTreeSet::new(), Vec::new(), Vec::new());
    for (i, n) in nodes.iter_mut().enumerate() {
        let name = n["metadata"]["name"].as_str().unwrap().to_string();
        n["metadata"]["creationTimestamp"] = json!(rfc3339(BASE - 86_400));
        n["metadata"]["uid"] = json!(format!("node-uid-{i}"));
        n["status"]["conditions"] = json!([{"type": "Ready", "status": "True",
            "lastHeartbeatTime": rfc3339(BASE), "lastTransitionTime": rfc3339(BASE - 86_400)}]);
        let labels = n["metadata"]["labels"].as_object_mut().unwrap();
        if let Some(model) = labels.get("alibabacloud.com/gpu-card-model").cloned() {
            labels.insert("aco/gpu-type".into(), model);
        }
        labels.insert(
            "topology.kubernetes.io/zone".into(),
            json!(format!("zone-{}", i % 2)),
        );
        labels.insert("aco/latency-us".into(), json!(format!("{}", 80 + 10 * i)));
        let price = (i % 2 == 0).then_some(0.5 + i as f64 * 0.25);
        if let Some(p) = price {
            labels.insert("aco/cost-per-hour".into(), json!(format!("{p}")));
        }
        if i % 3 == 1 {
            labels.insert("aco/instance-type".into(), json!("spot"));
            spot.insert(name.clone());
        }
        for key in ["allocatable", "capacity"] {
            if let Some(res) = n["status"][key].as_object_mut() {
                if let Some(g) = res.get("alibabacloud.com/gpu-count").cloned() {
                    res.insert("nvidia.com/gpu".into(), g);
                }
            }
        }
        match i {
            3 => {
                n["spec"]["unschedulable"] = json!(true);
                left_out.push(name);
            }
            5 => {
                n["spec"]["taints"] = json!([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]);
                left_out.push(name);
            }
            _ => {
                priced.insert(name.clone(), price);
                schedulable.push(name);
            }
        }
    }
    NodeSet {
        nodes,
        labelled_price: priced,
        spot,
        schedulable,
        left_out,
    }
}

/// A v1.Pod as `kubectl get -o json` prints it, from a trace row, as of `snapshot`.
fn pod_object(i: usize, p: &TracePod, ns: &str, node: &str, snapshot: u64) -> Value {
    let created = BASE + p.creation_s;
    let mut labels = json!({"app": format!("app-{}", i % 7), "pod-template-hash": "7d9f8c6b5"});
    match p.qos.as_str() {
        "LS" => labels["aco/workload-type"] = json!("latency-critical"),
        "BE" => labels["aco/workload-type"] = json!("batch"),
        _ => {}
    }
    if ns == "research" && i.is_multiple_of(2) {
        labels["scheduling.aco/tenant-id"] = json!("ml-platform");
    }
    let mut annotations = json!({
        "kubectl.kubernetes.io/last-applied-configuration": format!("{{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{{\"name\":\"{}\"}},\"spec\":{{}}}}\n", p.name),
    });
    if let Some(spec) = &p.gpu_spec {
        annotations["scheduling.aco/gpu-models"] = json!(spec.join("|"));
    }
    if p.is_ls() && i.is_multiple_of(3) {
        annotations["scheduling.aco/latency-target-us"] = json!("250");
    }
    let mut resources = json!({"requests": {"cpu": format!("{}m", p.cpu_milli), "memory": format!("{}Mi", p.memory_mib)}});
    if p.is_gpu_share() {
        resources["requests"]["alibabacloud.com/gpu-milli"] = json!(p.gpu_milli.to_string());
        resources["limits"] = json!({"alibabacloud.com/gpu-milli": p.gpu_milli.to_string()});
    } else if p.num_gpu > 0 {
        resources["limits"] = json!({"nvidia.com/gpu": p.num_gpu.to_string()});
    }
    let finished = p.deletion_s.is_some_and(|d| BASE + d <= snapshot);
    let pending = !finished && i % 29 == 5;
    let (phase, container_state) = if finished {
        let done = BASE + p.deletion_s.unwrap();
        (
            "Succeeded",
            json!({"terminated": {"exitCode": 0, "reason": "Completed",
            "startedAt": rfc3339(created + 2), "finishedAt": rfc3339(done)}}),
        )
    } else if pending {
        (
            "Pending",
            json!({"waiting": {"reason": "ContainerCreating"}}),
        )
    } else {
        (
            "Running",
            json!({"running": {"startedAt": rfc3339(created + 2)}}),
        )
    };
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": p.name, "namespace": ns, "uid": format!("pod-uid-{i}"),
            "resourceVersion": format!("{}", 1000 + i),
            "creationTimestamp": rfc3339(created),
            "generateName": format!("app-{}-7d9f8c6b5-", i % 7),
            "labels": labels, "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("app-{}-7d9f8c6b5", i % 7),
                                 "uid": "rs-uid", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                               "time": rfc3339(created), "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}],
        },
        "spec": {
            "schedulerName": "aco-scheduler", "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
            "initContainers": [{"name": "init", "image": "busybox:1.36",
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
            "containers": [{"name": "main", "image": "registry.example.com/app:1.4.2", "resources": resources}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {"phase": phase, "qosClass": "Burstable"},
    });
    if !pending {
        pod["spec"]["nodeName"] = json!(node);
        pod["status"]["hostIP"] = json!("10.0.0.7");
        pod["status"]["startTime"] = json!(rfc3339(created + 1));
        pod["status"]["conditions"] = json!([
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(created + 1)},
            {"type": "Ready", "status": if phase == "Running" { "True" } else { "False" },
             "lastTransitionTime": rfc3339(created + 3)},
        ]);
        pod["status"]["containerStatuses"] = json!([{"name": "main", "ready": phase == "Running",
            "restartCount": 0, "image": "registry.example.com/app:1.4.2",
            "imageID": "registry.example.com/app@sha256:0123", "state": container_state}]);
    } else {
        pod["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "lastTransitionTime": rfc3339(created)}]);
    }
    pod
}

fn dump() -> Dump {
    let NodeSet {
        nodes,
        labelled_price,
        spot,
        schedulable,
        left_out,
    } = node_dump();
    let pods = read_pods(&repo_root().join("data/openb-sample/pods.csv"), 60).unwrap();
    // Rebase the sample's times on its first pod; `kubectl get` ran halfway through.
    let origin = pods.iter().map(|p| p.creation_s).min().unwrap();
    let pods: Vec<TracePod> = pods
        .into_iter()
        .map(|mut p| {
            p.creation_s -= origin;
            p.deletion_s = p.deletion_s.map(|d| d - origin);
            p
        })
        .collect();
    let mut times: Vec<u64> = pods.iter().map(|p| p.creation_s).collect();
    times.sort_unstable();
    let snapshot = BASE + times[times.len() / 2];
    let mut items: Vec<Value> = nodes;
    for (i, p) in pods.iter().enumerate() {
        let node = &schedulable[i % schedulable.len()];
        items.push(pod_object(i, p, NAMESPACES[i % 3], node, snapshot));
    }
    // The same name in another namespace.
    let mut twin = pod_object(0, &pods[0], "serving-canary", &schedulable[0], snapshot);
    twin["metadata"]["uid"] = json!("pod-uid-twin");
    items.push(twin);
    // A DaemonSet pod on every node, and a static pod on the control-plane node.
    for (i, node) in schedulable.iter().chain(&left_out).enumerate() {
        items.push(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("node-exporter-{i}"), "namespace": "monitoring",
                         "creationTimestamp": rfc3339(BASE - 3600),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "node-exporter", "uid": "ds", "controller": true}]},
            "spec": {"nodeName": node, "containers": [{"name": "exporter", "image": "prom/node-exporter:v1.8.2",
                     "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}]},
            "status": {"phase": "Running", "qosClass": "Burstable"},
        }));
    }
    items.push(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("kube-apiserver-{}", left_out[1]), "namespace": "kube-system",
                     "creationTimestamp": rfc3339(BASE - 86_400),
                     "annotations": {"kubernetes.io/config.mirror": "0f0f", "kubernetes.io/config.source": "file"}},
        "spec": {"nodeName": left_out[1], "containers": [{"name": "kube-apiserver", "image": "registry.k8s.io/kube-apiserver:v1.37.2",
                 "resources": {"requests": {"cpu": "250m"}}}]},
        "status": {"phase": "Running", "qosClass": "Burstable"},
    }));
    Dump {
        list: json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}),
        labelled_price,
        spot,
        schedulable,
        left_out,
        pods,
        snapshot,
    }
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aco-sim-import-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn cli(args: &[&str]) {
    let mut argv = vec!["aco-sim", "--quiet"];
    argv.extend(args);
    aco_sim(Cli::try_parse_from(argv).unwrap()).unwrap();
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_kubectl_dump_imports_as_a_trace_that_run_and_saturate_replay() {
    let d = dump();
    let dir = scratch("trace");
    let dump_file = dir.join("cluster.json");
    std::fs::write(&dump_file, serde_json::to_string_pretty(&d.list).unwrap()).unwrap();
    let objects = kubectl::objects(
        &std::fs::read_to_string(&dump_file).unwrap(),
        "cluster.json",
    )
    .unwrap();
    let imported = Imported::from_objects(&objects, &prices(), 0.4, &sim_config()).unwrap();
    let s = &imported.summary;

    // Nodes: the schedulable ones, their allocatable less the DaemonSet pod, priced by their
    // label or by the table (spot at 0.4 ×).
    assert_eq!(
        imported
            .nodes
            .iter()
            .map(|n| n.sn.clone())
            .collect::<Vec<_>>(),
        d.schedulable
    );
    assert_eq!(s.nodes_left_out, d.left_out);
    assert_eq!(s.per_node_pods, d.schedulable.len() + d.left_out.len() + 1);
    let originals: BTreeMap<String, Value> = d.list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "Node")
        .map(|n| {
            (
                n["metadata"]["name"].as_str().unwrap().to_string(),
                n.clone(),
            )
        })
        .collect();
    let table = prices();
    for n in &imported.nodes {
        let original = &originals[&n.sn];
        let alloc = &original["status"]["allocatable"];
        let cpu = aco_core::quantity::parse_milli(alloc["cpu"].as_str().unwrap()).unwrap();
        let mem = aco_core::quantity::parse_value(alloc["memory"].as_str().unwrap()).unwrap();
        assert_eq!(n.cpu_milli, cpu - 250, "{}", n.sn);
        assert_eq!(n.memory_mib, (mem - (256 << 20)) >> 20, "{}", n.sn);
        let gpus: u32 = alloc["nvidia.com/gpu"]
            .as_str()
            .map_or(0, |g| g.parse().unwrap());
        assert_eq!(n.gpu, gpus, "{}", n.sn);
        let model = original["metadata"]["labels"]["aco/gpu-type"]
            .as_str()
            .unwrap_or("");
        assert_eq!(n.model, model);
        let expected = d.labelled_price[&n.sn].unwrap_or_else(|| {
            let shape = TraceNode {
                name: n.sn.clone(),
                cpu_milli: cpu,
                memory_mib: mem >> 20,
                gpus,
                model: (!model.is_empty()).then(|| model.to_string()),
            };
            table.on_demand(&shape) * if d.spot.contains(&n.sn) { 0.4 } else { 1.0 }
        });
        assert!(
            (n.cost_per_hour - expected).abs() < 1e-9,
            "{}: {} vs {expected}",
            n.sn,
            n.cost_per_hour
        );
    }
    assert!(s.priced_by_label > 0 && s.priced_by_table > 0, "{s:?}");
    assert!(s.gpu_nodes > 0 && s.gpu_nodes < s.nodes, "{s:?}");

    // Pods: every workload pod, times from the first creation, requests and GPUs kept.
    assert_eq!(s.pods, d.pods.len() + 1);
    assert!(
        s.pods_finished > 0 && s.pods_running > 0 && s.pods_pending > 0,
        "{s:?}"
    );
    let rows: BTreeMap<(String, String), &aco_sim::import::PodRow> = imported
        .pods
        .iter()
        .map(|p| ((p.namespace.clone(), p.name.clone()), p))
        .collect();
    for (i, p) in d.pods.iter().enumerate() {
        let ns = NAMESPACES[i % 3];
        let name = if i == 0 {
            format!("{}.{ns}", p.name)
        } else {
            p.name.clone()
        };
        let row = rows[&(ns.to_string(), name)];
        // The init container (100m, 64Mi) runs before the app: the app's request is the peak.
        assert_eq!(row.cpu_milli, p.cpu_milli.max(100), "{}", p.name);
        assert_eq!(row.memory_mib, p.memory_mib.max(64), "{}", p.name);
        assert_eq!(
            (row.num_gpu, row.gpu_milli),
            (p.num_gpu, p.gpu_milli),
            "{}",
            p.name
        );
        assert_eq!(
            row.gpu_spec,
            p.gpu_spec.clone().unwrap_or_default().join("|")
        );
        assert_eq!(row.creation_time, p.creation_s, "{}", p.name);
        let finished = p.deletion_s.is_some_and(|e| BASE + e <= d.snapshot);
        assert_eq!(
            row.deletion_time,
            if finished { p.deletion_s } else { None },
            "{}",
            p.name
        );
        assert_eq!(row.qos == "LS", p.is_ls(), "{}", p.name);
        assert!(!row.annotations.contains("last-applied-configuration"));
    }
    assert!(rows.contains_key(&(
        "serving-canary".to_string(),
        format!("{}.serving-canary", d.pods[0].name)
    )));

    // Written, read back as a world: the cluster's prices, spot nodes, tenants and labels.
    let trace = dir.join("trace");
    let files = imported.write(&trace, "cluster").unwrap();
    assert_eq!(files.len(), 3);
    let world = world_from_files(
        &trace.join("openb_node_list_all_node.csv"),
        &trace.join("openb_pod_list_cluster.csv"),
        &table,
        WorldParams::default(),
        sim_config(),
    )
    .unwrap();
    assert_eq!(world.pods.len(), s.pods);
    for n in &world.nodes {
        let row = imported.nodes.iter().find(|r| r.sn == n.name).unwrap();
        assert!((n.price - row.cost_per_hour).abs() < 1e-9, "{}", n.name);
        assert_eq!(n.spot, d.spot.contains(&n.name), "{}", n.name);
        let zone = &originals[&n.name]["metadata"]["labels"]["topology.kubernetes.io/zone"];
        assert_eq!(
            n.view.metadata.labels["topology.kubernetes.io/zone"],
            zone.as_str().unwrap()
        );
        assert_eq!(
            n.latency_us.to_string(),
            originals[&n.name]["metadata"]["labels"]["aco/latency-us"]
                .as_str()
                .unwrap()
        );
    }
    let tenants: BTreeSet<String> = world.pods.iter().map(|p| p.tenant.clone()).collect();
    assert_eq!(
        tenants,
        [
            "batch-jobs",
            "ml-platform",
            "research",
            "serving",
            "serving-canary"
        ]
        .into_iter()
        .map(String::from)
        .collect()
    );
    assert_eq!(world.tenants(), tenants.into_iter().collect::<Vec<_>>());
    assert!(world
        .pods
        .iter()
        .any(|p| p.latency_target_us == Some(250.0)));
    assert!(world
        .pods
        .iter()
        .all(|p| !p.json["metadata"]["labels"]["app"].is_null()));

    // The command line replays it: `import`, then `run` and `saturate` on the folder alone.
    let from_cli = dir.join("from-cli");
    cli(&[
        "import",
        "--kubectl",
        dump_file.to_str().unwrap(),
        "--out",
        from_cli.to_str().unwrap(),
    ]);
    for f in [
        "openb_node_list_all_node.csv",
        "openb_node_list_gpu_node.csv",
        "openb_pod_list_cluster.csv",
    ] {
        assert_eq!(
            std::fs::read_to_string(from_cli.join(f)).unwrap(),
            std::fs::read_to_string(trace.join(f)).unwrap(),
            "{f}"
        );
    }
    let out = dir.join("out");
    cli(&[
        "run",
        "--openb-dir",
        trace.to_str().unwrap(),
        "--policies",
        "first-fit,colony",
        "--out",
        out.to_str().unwrap(),
        "--name",
        "cluster",
    ]);
    let metrics = json_file(&out.join("cluster.json"));
    for m in metrics.as_array().unwrap() {
        assert_eq!(m["pods"], s.pods, "{m}");
        let placed = m["placed"].as_u64().unwrap();
        assert!(placed as f64 >= 0.9 * s.pods as f64, "{m}");
        assert!(m["cost_busy_usd"].as_f64().unwrap() > 0.0, "{m}");
    }
    // Placements name the cluster's nodes only.
    let placements = std::fs::read_to_string(out.join("cluster-placements.csv")).unwrap();
    for line in placements.lines().skip(1) {
        let node = line.split(',').nth(8).unwrap();
        assert!(
            node.is_empty() || d.schedulable.iter().any(|n| n == node),
            "{line}"
        );
    }
    cli(&[
        "saturate",
        "--openb-dir",
        trace.to_str().unwrap(),
        "--seeds",
        "42",
        "--policies",
        "first-fit,colony",
        "--out",
        out.to_str().unwrap(),
    ]);
    let rows = json_file(&out.join("saturate-cluster.json"));
    assert_eq!(rows.as_array().unwrap().len(), 2, "{rows}");
    std::fs::remove_dir_all(&dir).unwrap();
}
