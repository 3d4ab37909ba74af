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

use std::collections::BTreeMap;
use std::time::Duration;

use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::{label_of, name_of};

use aco_testkit::k8s_openapi::api::core::v1::{ContainerStatus, Node, Pod, PodStatus};
use aco_testkit::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use aco_testkit::kube::kwok::{
    quantity, MetricsList, NodeMetrics, PodMetrics, Usage, FATE, FATE_AFTER, METRIC_RESOLUTION,
    USAGE_CPU, USAGE_MEMORY,
};
use aco_testkit::kube::{wait_for, ControlPlane, Kube};
use aco_testkit::openb::pick_gpu_nodes;
use aco_testkit::pods::edit_spec;
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
    let p = pod(
        NS,
        name,
        PodOpts {
            annotations,
            ..Default::default()
        },
    );
    edit_spec(p, |spec| {
        spec.scheduler_name = None;
        spec.node_name = Some(node.into());
        spec.restart_policy = Some(restart_policy.into());
    })
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

fn status(p: &Pod) -> &PodStatus {
    p.status.as_ref().expect("a pod status")
}

fn phase(p: &Pod) -> &str {
    status(p).phase.as_deref().unwrap_or_default()
}

/// The pod's condition `kind`: its status and reason.
fn pod_condition<'a>(p: &'a Pod, kind: &str) -> Option<(&'a str, Option<&'a str>)> {
    let c = status(p)
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)?;
    Some((c.status.as_str(), c.reason.as_deref()))
}

fn pod_is(p: &Pod, kind: &str) -> bool {
    pod_condition(p, kind).is_some_and(|(s, _)| s == "True")
}

fn node_is(n: &Node, kind: &str) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == kind && c.status == "True"))
}

/// The pod's first container's status.
fn container(p: &Pod) -> ContainerStatus {
    status(p)
        .container_statuses
        .as_ref()
        .and_then(|cs| cs.first())
        .cloned()
        .unwrap_or_else(|| panic!("no container status: {p:?}"))
}

/// A terminated container state's reason and exit code.
fn terminated(
    state: Option<&aco_testkit::k8s_openapi::api::core::v1::ContainerState>,
) -> Option<(String, i32)> {
    let t = state?.terminated.as_ref()?;
    Some((t.reason.clone()?, t.exit_code))
}

fn restarts(p: &Pod) -> i32 {
    status(p)
        .container_statuses
        .as_ref()
        .and_then(|cs| cs.first())
        .map_or(0, |c| c.restart_count)
}

/// Waits until `pred` holds for the pod; returns it.
async fn wait_pod(kube: &Kube, name: &str, what: &str, pred: impl Fn(&Pod) -> bool) -> Pod {
    let pred = &pred;
    wait_for(&format!("pod {NS}/{name} {what}"), TIMEOUT, || async move {
        let p = kube.pod(NS, name).await;
        (p.status.is_some() && pred(&p)).then_some(p)
    })
    .await
}

async fn node_metrics(kube: &Kube, node: &str) -> Option<NodeMetrics> {
    kube.get_as(&format!("/apis/metrics.k8s.io/v1beta1/nodes/{node}"))
        .await
        .ok()
}

/// Quantities as numbers (kwok re-renders them in canonical form: 96000m -> 96).
fn numbers(list: Option<&BTreeMap<String, Quantity>>) -> Vec<(String, Option<f64>)> {
    list.expect("a resource list")
        .iter()
        .map(|(k, q)| (k.clone(), quantity(&q.0)))
        .collect()
}

/// The same, of a node as built (JSON).
fn numbers_of(node: &Value, field: &str) -> Vec<(String, Option<f64>)> {
    let built: Node = serde_json::from_value(node.clone()).expect("a node");
    let status = built.status.expect("a node status");
    numbers(match field {
        "allocatable" => status.allocatable.as_ref(),
        _ => status.capacity.as_ref(),
    })
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
            let n = kube.try_node(&name).await?;
            node_is(&n, "Ready").then_some(n)
        })
        .await;
        let status = node.status.as_ref().unwrap();
        let addresses = status.addresses.as_deref().unwrap_or_default();
        assert!(
            addresses
                .iter()
                .any(|a| a.type_ == "InternalIP" && a.address == "127.0.0.1"),
            "{name}: {addresses:?}"
        );
        let kubelet_port = status
            .daemon_endpoints
            .as_ref()
            .and_then(|d| d.kubelet_endpoint.as_ref())
            .map_or(0, |e| e.port);
        assert!(kubelet_port > 0, "{name}: {status:?}");
        // Kept, though in canonical form (kwok re-renders it: 96000m -> 96, 393216Mi -> 384Gi).
        assert_eq!(
            numbers(status.allocatable.as_ref()),
            numbers_of(want, "allocatable"),
            "{name}"
        );
        assert_eq!(
            numbers(status.capacity.as_ref()),
            numbers_of(want, "capacity"),
            "{name}"
        );
        let model = "alibabacloud.com/gpu-card-model";
        assert_eq!(
            node.metadata.labels.as_ref().and_then(|l| l.get(model)),
            label_of(want, model).as_ref()
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
            phase(p) == "Running" && pod_is(p, "Ready")
        })
        .await;
        assert_eq!(status(&pod).host_ip.as_deref(), Some("127.0.0.1"));
        assert!(status(&pod)
            .pod_ip
            .as_deref()
            .is_some_and(|ip| !ip.is_empty()));
        let cs = container(&pod);
        assert!(
            cs.state
                .as_ref()
                .and_then(|s| s.running.as_ref())
                .is_some_and(|r| r.started_at.is_some()),
            "{name}: {cs:?}"
        );
        assert_eq!(cs.restart_count, 0);
    }

    // (c) the fates, as a kubelet reports them.
    let p = wait_pod(kube, "failed-never", "Failed", |p| phase(p) == "Failed").await;
    let c = container(&p);
    assert_eq!(
        terminated(c.state.as_ref()),
        Some(("Error".into(), 1)),
        "{c:?}"
    );
    assert_eq!((c.ready, c.restart_count), (false, 0), "{c:?}");
    assert_eq!(
        pod_condition(&p, "Ready").and_then(|(_, reason)| reason),
        Some("PodFailed")
    );

    let p = wait_pod(kube, "oom-never", "Failed", |p| phase(p) == "Failed").await;
    let c = container(&p);
    assert_eq!(
        terminated(c.state.as_ref()),
        Some(("OOMKilled".into(), 137)),
        "{c:?}"
    );
    assert_eq!(c.restart_count, 0, "{c:?}");

    let p = wait_pod(kube, "failed-always", "restarted", |p| restarts(p) >= 1).await;
    let c = container(&p);
    assert_eq!(phase(&p), "Running");
    assert_eq!(
        terminated(c.last_state.as_ref()),
        Some(("Error".into(), 1)),
        "{c:?}"
    );
    assert_eq!(
        c.state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.as_deref()),
        Some("CrashLoopBackOff"),
        "{c:?}"
    );
    assert!(!c.ready);
    assert!(!pod_is(&p, "Ready"));

    let p = wait_pod(kube, "oom-always", "restarted", |p| restarts(p) >= 1).await;
    let c = container(&p);
    assert_eq!(phase(&p), "Running");
    assert_eq!(
        terminated(c.last_state.as_ref()),
        Some(("OOMKilled".into(), 137)),
        "{c:?}"
    );
    assert!(
        c.state
            .as_ref()
            .and_then(|s| s.running.as_ref())
            .is_some_and(|r| r.started_at.is_some()),
        "{c:?}"
    );
    assert!(c.ready);
    assert!(pod_is(&p, "Ready"));

    // (b) NodeMetrics through the aggregation layer. The first windows may straddle the pods'
    // start, so wait for one that covers full usage (a few scrapes at most).
    let metrics_timeout = TIMEOUT + 4 * METRIC_RESOLUTION;
    let (hot_metrics, hot_usage) = wait_for(
        &format!("NodeMetrics of {hot} near 3 cores"),
        metrics_timeout,
        || async {
            let m = node_metrics(kube, &hot).await?;
            let u = Usage::of(&m.usage)?;
            close(u.cpu_cores, 3.0, 0.05).then_some((m, u))
        },
    )
    .await;
    assert!(
        close(hot_usage.memory_bytes, 2.0 * GI, 0.01),
        "{hot}: {hot_metrics:?}"
    );
    assert!(hot_metrics.timestamp.ends_with('Z'), "{hot_metrics:?}");
    assert!(hot_metrics.window.ends_with('s'), "window: {hot_metrics:?}");
    assert_eq!(hot_metrics.metadata.name.as_ref(), Some(&hot));

    let (cold_metrics, cold_usage) = wait_for(
        &format!("NodeMetrics of {cold}"),
        metrics_timeout,
        || async {
            let m = node_metrics(kube, &cold).await?;
            let u = Usage::of(&m.usage)?;
            close(u.cpu_cores, 0.2, 0.25).then_some((m, u))
        },
    )
    .await;
    eprintln!("NodeMetrics {hot}: {hot_metrics:?}\nNodeMetrics {cold}: {cold_metrics:?}");
    assert!(
        cold_usage.cpu_cores < hot_usage.cpu_cores / 5.0,
        "{cold_metrics:?} vs {hot_metrics:?}"
    );
    assert!(
        cold_usage.memory_bytes < hot_usage.memory_bytes,
        "{cold_metrics:?} vs {hot_metrics:?}"
    );

    // PodMetrics: per container, from the same scrape.
    let pm = wait_for("PodMetrics of hot-0", metrics_timeout, || async {
        let m: PodMetrics = kube
            .get_as(&format!(
                "/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods/hot-0"
            ))
            .await
            .ok()?;
        let u = Usage::of(&m.containers.first()?.usage)?;
        close(u.cpu_cores, 1.5, 0.05).then_some(m)
    })
    .await;
    assert_eq!(pm.containers[0].name, "c");
    let list: MetricsList<NodeMetrics> = kube
        .get_as("/apis/metrics.k8s.io/v1beta1/nodes")
        .await
        .unwrap();
    let names: Vec<&str> = list
        .items
        .iter()
        .filter_map(|m| m.metadata.name.as_deref())
        .collect();
    assert!(
        names.contains(&hot.as_str()) && names.contains(&cold.as_str()),
        "{names:?}"
    );
}
