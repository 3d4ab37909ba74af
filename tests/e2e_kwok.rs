//! End-to-end: fake kubelets (kwok) and a real metrics-server on the test control plane — the
//! cluster the in-cluster reporter will be tested against. Run with `scripts/e2e` (which builds
//! kwok and metrics-server with the control plane).
//!
//! Two OpenB GPU nodes become kwok nodes; pods are bound to them directly (`spec.nodeName`, no
//! scheduler). The test checks that
//! (a) kwok makes the nodes Ready (InternalIP 127.0.0.1, kubelet port, allocatable kept) and the
//!     pods Running;
//! (b) `metrics.k8s.io/v1beta1` NodeMetrics, served by metrics-server through the kube-apiserver's
//!     aggregation layer, report the CPU and memory the pods' `kwok.x-k8s.io/usage-*`
//!     annotations add up to, with a timestamp and window, and the quiet node lower;
//! (c) pods annotated `aco-test/fate` end in the status a kubelet reports for a failed or
//!     OOM-killed container, for `restartPolicy: Never` and `Always`
//!     (`scripts/kube/kwok/fates.yaml`).

use std::time::Duration;

use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::name_of;

use aco_testkit::kube::kwok::{
    quantity, Usage, FATE, FATE_AFTER, METRIC_RESOLUTION, USAGE_CPU, USAGE_MEMORY,
};
use aco_testkit::kube::{wait_for, ControlPlane, Kube};
use aco_testkit::openb::pick_gpu_nodes;
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(60);
const NS: &str = "kwok-e2e";
const GI: f64 = 1024.0 * 1024.0 * 1024.0;

/// A pod bound to `node` (no scheduler involved).
fn bound_pod(
    name: &str,
    node: &str,
    restart_policy: &str,
    annotations: Vec<(&str, String)>,
) -> Value {
    let mut p = pod(
        NS,
        name,
        PodOpts {
            annotations,
            ..Default::default()
        },
    );
    let spec = p["spec"].as_object_mut().unwrap();
    spec.remove("schedulerName");
    spec.insert("nodeName".into(), node.into());
    spec.insert("restartPolicy".into(), restart_policy.into());
    p
}

fn usage_pod(name: &str, node: &str, cpu: &str, memory: &str) -> Value {
    bound_pod(
        name,
        node,
        "Always",
        vec![(USAGE_CPU, cpu.into()), (USAGE_MEMORY, memory.into())],
    )
}

fn fate_pod(name: &str, node: &str, fate: &str, restart_policy: &str) -> Value {
    bound_pod(
        name,
        node,
        restart_policy,
        vec![(FATE, fate.into()), (FATE_AFTER, "2s".into())],
    )
}

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn is_true(obj: &Value, kind: &str) -> bool {
    condition(obj, kind).is_some_and(|c| c["status"] == "True")
}

/// Waits until `pred` holds for the pod; returns it.
async fn wait_pod(kube: &Kube, name: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let pred = &pred;
    wait_for(&format!("pod {NS}/{name} {what}"), TIMEOUT, || async move {
        let p = kube.pod(NS, name).await;
        pred(&p).then_some(p)
    })
    .await
}

async fn node_metrics(kube: &Kube, node: &str) -> Option<Value> {
    kube.get(&format!("/apis/metrics.k8s.io/v1beta1/nodes/{node}"))
        .await
        .ok()
}

fn close(actual: f64, want: f64, tolerance: f64) -> bool {
    (actual - want).abs() <= want * tolerance
}

#[tokio::test]
async fn kwok_nodes_report_usage_through_metrics_server_and_pods_fail_real_shaped() {
    let cp = ControlPlane::start().await;
    let kube = &cp.kube;
    let _kwok = cp.start_kwok().await;
    let nodes: Vec<Value> = pick_gpu_nodes(&["T4", "V100M16"])
        .into_iter()
        .map(kwok_node)
        .collect();
    create_kwok_nodes(kube, &nodes).await;
    let (hot, cold) = (name_of(&nodes[0]), name_of(&nodes[1]));
    let _metrics_server = cp.start_metrics_server().await;

    // (a) kwok makes the nodes Ready, with the address and port metrics-server scrapes.
    for want in &nodes {
        let name = name_of(want);
        let node = wait_for(&format!("node {name} Ready"), TIMEOUT, || async {
            let n = kube.get(&format!("/api/v1/nodes/{name}")).await.ok()?;
            is_true(&n, "Ready").then_some(n)
        })
        .await;
        let addresses = node["status"]["addresses"].as_array().unwrap();
        assert!(
            addresses
                .iter()
                .any(|a| a["type"] == "InternalIP" && a["address"] == "127.0.0.1"),
            "{name}: {addresses:?}"
        );
        assert!(
            node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
                .as_u64()
                .unwrap_or(0)
                > 0
        );
        // Kept, though in canonical form (kwok re-renders it: 96000m -> 96, 393216Mi -> 384Gi).
        let numbers = |v: &Value| -> Vec<(String, Option<f64>)> {
            v.as_object()
                .unwrap()
                .iter()
                .map(|(k, q)| (k.clone(), q.as_str().and_then(quantity)))
                .collect()
        };
        assert_eq!(
            numbers(&node["status"]["allocatable"]),
            numbers(&want["status"]["allocatable"]),
            "{name}"
        );
        assert_eq!(
            numbers(&node["status"]["capacity"]),
            numbers(&want["status"]["capacity"]),
            "{name}"
        );
        assert_eq!(
            node["metadata"]["labels"]["alibabacloud.com/gpu-card-model"],
            want["metadata"]["labels"]["alibabacloud.com/gpu-card-model"]
        );
    }

    kube.create_namespace(NS).await;
    // 3 cores and 2 GiB on the hot node; 0.2 cores and 256 MiB (+ the fate pods' defaults of
    // 1m / 1Mi while they run) on the cold one.
    let usage_pods = [
        usage_pod("hot-0", &hot, "1500m", "1Gi"),
        usage_pod("hot-1", &hot, "1000m", "512Mi"),
        usage_pod("hot-2", &hot, "500m", "512Mi"),
        usage_pod("cold-0", &cold, "200m", "256Mi"),
    ];
    let fate_pods = [
        fate_pod("failed-never", &cold, "failed", "Never"),
        fate_pod("failed-always", &cold, "failed", "Always"),
        fate_pod("oom-never", &cold, "oom", "Never"),
        fate_pod("oom-always", &cold, "oom", "Always"),
    ];
    create_pods(kube, &usage_pods).await;
    create_pods(kube, &fate_pods).await;

    // (a) pods go Running, Ready, with an IP, on their node.
    for p in &usage_pods {
        let name = name_of(p);
        let pod = wait_pod(kube, &name, "Running and Ready", |p| {
            p["status"]["phase"] == "Running" && is_true(p, "Ready")
        })
        .await;
        assert_eq!(pod["status"]["hostIP"], "127.0.0.1");
        assert!(pod["status"]["podIP"]
            .as_str()
            .is_some_and(|ip| !ip.is_empty()));
        let cs = &pod["status"]["containerStatuses"][0];
        assert!(
            cs["state"]["running"]["startedAt"].is_string(),
            "{name}: {cs}"
        );
        assert_eq!(cs["restartCount"], 0);
    }

    // (c) the fates, as a kubelet reports them.
    let cs = |p: &Value| p["status"]["containerStatuses"][0].clone();
    let p = wait_pod(kube, "failed-never", "Failed", |p| {
        p["status"]["phase"] == "Failed"
    })
    .await;
    let c = cs(&p);
    assert_eq!(
        (
            c["state"]["terminated"]["reason"].as_str(),
            c["state"]["terminated"]["exitCode"].as_i64()
        ),
        (Some("Error"), Some(1)),
        "{c}"
    );
    assert_eq!(
        (c["ready"].as_bool(), c["restartCount"].as_i64()),
        (Some(false), Some(0)),
        "{c}"
    );
    assert_eq!(condition(&p, "Ready").unwrap()["reason"], "PodFailed");

    let p = wait_pod(kube, "oom-never", "Failed", |p| {
        p["status"]["phase"] == "Failed"
    })
    .await;
    let c = cs(&p);
    assert_eq!(
        (
            c["state"]["terminated"]["reason"].as_str(),
            c["state"]["terminated"]["exitCode"].as_i64()
        ),
        (Some("OOMKilled"), Some(137)),
        "{c}"
    );
    assert_eq!(c["restartCount"], 0, "{c}");

    let p = wait_pod(kube, "failed-always", "restarted", |p| {
        cs(p)["restartCount"].as_i64() >= Some(1)
    })
    .await;
    let c = cs(&p);
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(
        (
            c["lastState"]["terminated"]["reason"].as_str(),
            c["lastState"]["terminated"]["exitCode"].as_i64()
        ),
        (Some("Error"), Some(1)),
        "{c}"
    );
    assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff", "{c}");
    assert_eq!(c["ready"], false);
    assert!(!is_true(&p, "Ready"));

    let p = wait_pod(kube, "oom-always", "restarted", |p| {
        cs(p)["restartCount"].as_i64() >= Some(1)
    })
    .await;
    let c = cs(&p);
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(
        (
            c["lastState"]["terminated"]["reason"].as_str(),
            c["lastState"]["terminated"]["exitCode"].as_i64()
        ),
        (Some("OOMKilled"), Some(137)),
        "{c}"
    );
    assert!(c["state"]["running"]["startedAt"].is_string(), "{c}");
    assert_eq!(c["ready"], true);
    assert!(is_true(&p, "Ready"));

    // (b) NodeMetrics through the aggregation layer. The first windows may straddle the pods'
    // start, so wait for one that covers full usage (a few scrapes at most).
    let metrics_timeout = TIMEOUT + 4 * METRIC_RESOLUTION;
    let (hot_metrics, hot_usage) = wait_for(
        &format!("NodeMetrics of {hot} near 3 cores"),
        metrics_timeout,
        || async {
            let m = node_metrics(kube, &hot).await?;
            let u = Usage::of(&m["usage"])?;
            close(u.cpu_cores, 3.0, 0.05).then_some((m, u))
        },
    )
    .await;
    assert!(
        close(hot_usage.memory_bytes, 2.0 * GI, 0.01),
        "{hot}: {hot_metrics}"
    );
    assert!(
        hot_metrics["timestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{hot_metrics}"
    );
    assert!(
        hot_metrics["window"]
            .as_str()
            .is_some_and(|w| w.ends_with('s')),
        "window: {hot_metrics}"
    );
    assert_eq!(hot_metrics["metadata"]["name"], hot);

    let (cold_metrics, cold_usage) = wait_for(
        &format!("NodeMetrics of {cold}"),
        metrics_timeout,
        || async {
            let m = node_metrics(kube, &cold).await?;
            let u = Usage::of(&m["usage"])?;
            close(u.cpu_cores, 0.2, 0.25).then_some((m, u))
        },
    )
    .await;
    eprintln!("NodeMetrics {hot}: {hot_metrics}\nNodeMetrics {cold}: {cold_metrics}");
    assert!(
        cold_usage.cpu_cores < hot_usage.cpu_cores / 5.0,
        "{cold_metrics} vs {hot_metrics}"
    );
    assert!(
        cold_usage.memory_bytes < hot_usage.memory_bytes,
        "{cold_metrics} vs {hot_metrics}"
    );

    // PodMetrics: per container, from the same scrape.
    let pm = wait_for("PodMetrics of hot-0", metrics_timeout, || async {
        let m = kube
            .get(&format!(
                "/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods/hot-0"
            ))
            .await
            .ok()?;
        let u = Usage::of(&m["containers"][0]["usage"])?;
        close(u.cpu_cores, 1.5, 0.05).then_some(m)
    })
    .await;
    assert_eq!(pm["containers"][0]["name"], "c");
    let list = kube
        .get("/apis/metrics.k8s.io/v1beta1/nodes")
        .await
        .unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["metadata"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&hot.as_str()) && names.contains(&cold.as_str()),
        "{names:?}"
    );
}
