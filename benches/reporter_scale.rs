//! What `aco-reporter` costs and how fast it reports, at cluster scale. A benchmark target
//! (`harness = false`), run by `scripts/bench-reporter`; not a test.
//!
//! For each node count in BENCH_NODES (default `1000,5000`): a fresh control plane with kwok
//! (fake kubelets) and metrics-server, the Worker on Miniflare, N kwok nodes from the OpenB
//! CPU/GPU shapes and BENCH_PODS_PER_NODE (20) pods per node bound directly by `spec.nodeName`
//! (no scheduler: creating them through kube-scheduler would take hours here). The pods name
//! the extender's scheduler, so the reporter treats every one as a placement to report. Then
//! the release reporter starts and we measure
//! - time to caches synced and to the first full push acknowledged;
//! - over a steady window of BENCH_WINDOW_S (60 s): CPU seconds of the reporter process, its
//!   peak and final RSS, requests and bytes per minute it sent (from its own `/metrics`);
//! - lag from binding to the Worker's acknowledgement, p50/p99 over BENCH_LAG_PODS (300) pods
//!   bound at ~BENCH_LAG_RATE (20) per second during the window (from the reporter's
//!   `aco_reporter_bind_to_report_seconds` histogram, interpolated within buckets).
//!
//! Prints a Markdown table and writes it to `target/bench-reporter.md`.
//!
//! `BENCH_MODE=store`: the memory of the reporter's caches alone, in this process, at
//! BENCH_STORE_NODES (5,000) nodes and BENCH_STORE_PODS (150,000) pods — the reporter's own
//! code path: each object deserialised from the JSON an API server sends for a
//! Deployment-created pod (managed fields, env, probes, projected token volume, five
//! conditions…), read into the reporter's record (`aco_reporter::pod_record`,
//! `aco_reporter::node_record`, strings shared through one `aco_reporter::intern::Interner`)
//! and applied to its cache (`aco_reporter::cache`); then a full relist (`Init`, every object
//! again, `InitDone`). Per pod: (peak RSS (VmHWM) at the end − RSS before the caches) / pods,
//! so the relist's peak is included. No control plane: creating 150,000 pods through an API
//! server takes longer than this machine allows. Writes `target/bench-reporter-store.md`.

use std::time::{Duration, Instant};

use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::name_of;

use aco_testkit::kube::reporter::{sample, Reporter};
use aco_testkit::openb::{openb_cpu_nodes, openb_gpu_nodes};
use serde_json::Value;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The reporter's own pid: the child of the `run-bound` wrapper that leads the group.
fn reporter_pid(r: &Reporter) -> Option<u32> {
    let leader = r.server.pid()?;
    let children =
        std::fs::read_to_string(format!("/proc/{leader}/task/{leader}/children")).ok()?;
    children
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .find(|p: &u32| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim().starts_with("aco-reporter"))
        })
}

/// (utime + stime in seconds, VmRSS MiB, VmHWM MiB) of a process.
fn proc_usage(pid: u32) -> (f64, f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = 100.0; // CLK_TCK on Linux
    let cpu = f.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / ticks
        + f.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / ticks;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (cpu, kib("VmRSS:"), kib("VmHWM:"))
}

/// Quantile of a Prometheus histogram (cumulative `_bucket{le=...}` lines), linear within a bucket.
fn histogram_quantile(text: &str, name: &str, q: f64) -> Option<f64> {
    let mut buckets: Vec<(f64, f64)> = text
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(&format!("{name}_bucket{{le=\""))?;
            let (le, value) = rest.split_once("\"} ")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, value.split_whitespace().next()?.parse().ok()?))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    if total == 0.0 {
        return None;
    }
    let rank = q * total;
    let mut prev = (0.0, 0.0);
    for (le, count) in buckets {
        if count >= rank {
            if le.is_infinite() {
                return Some(prev.0);
            }
            let within = if count > prev.1 {
                (rank - prev.1) / (count - prev.1)
            } else {
                1.0
            };
            return Some(prev.0 + (le - prev.0) * within);
        }
        prev = (le, count);
    }
    None
}

fn kwok_nodes(n: usize) -> Vec<Value> {
    let shapes: Vec<Value> = openb_gpu_nodes()
        .into_iter()
        .chain(openb_cpu_nodes())
        .collect();
    (0..n)
        .map(|i| {
            let mut node = shapes[i % shapes.len()].clone();
            let name = format!("bench-{i:05}");
            node["metadata"]["name"] = name.clone().into();
            node["metadata"]["labels"]["kubernetes.io/hostname"] = name.into();
            kwok_node(label_node(
                node,
                0.5 + (i % 20) as f64 / 10.0,
                100 + (i % 40) as u32 * 50,
                i % 4 == 0,
            ))
        })
        .collect()
}

fn bound_pod(ns: &str, name: &str, node: &str) -> Value {
    let mut p = pod(
        ns,
        name,
        PodOpts {
            cpu: "100m",
            memory: "128Mi",
            ..Default::default()
        },
    );
    p["spec"]["nodeName"] = node.into();
    p["metadata"]["annotations"]["kwok.x-k8s.io/usage-cpu"] = "50m".into();
    p
}

async fn create_all(
    kube: &aco_testkit::kube::Kube,
    objects: &[Value],
    path: impl Fn(&Value) -> String,
) {
    for chunk in objects.chunks(32) {
        let paths: Vec<String> = chunk.iter().map(&path).collect();
        futures::future::join_all(chunk.iter().zip(&paths).map(|(o, p)| kube.post(p, o))).await;
    }
}

struct Row {
    nodes: usize,
    pods: usize,
    sync_s: f64,
    first_push_s: f64,
    cpu_pct: f64,
    rss_mib: f64,
    hwm_mib: f64,
    requests_per_min: f64,
    kib_per_min: f64,
    lag_p50: Option<f64>,
    lag_p99: Option<f64>,
}

async fn run(
    n_nodes: usize,
    per_node: usize,
    window: Duration,
    lag_pods: usize,
    lag_rate: usize,
) -> Row {
    let env = Env::start().await;
    let _kwok = env.cp.start_kwok().await;
    let _ms = env.cp.start_metrics_server().await;
    let kube = env.kube();
    let nodes = kwok_nodes(n_nodes);
    let t = Instant::now();
    create_all(kube, &nodes, |_| "/api/v1/nodes".into()).await;
    eprintln!(
        "{n_nodes} nodes created in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let ns = "bench";
    kube.create_namespace(ns).await;
    let pods: Vec<Value> = (0..n_nodes * per_node)
        .map(|i| bound_pod(ns, &format!("p-{i:06}"), &name_of(&nodes[i % n_nodes])))
        .collect();
    let t = Instant::now();
    create_all(kube, &pods, |_| format!("/api/v1/namespaces/{ns}/pods")).await;
    eprintln!(
        "{} pods created in {:.1}s",
        pods.len(),
        t.elapsed().as_secs_f64()
    );

    aco_testkit::kube::reporter::reporter_bin(true); // built before the clock starts
    let started = Instant::now();
    let url = env.api.base.clone();
    let reporter = Reporter::start(
        &env.cp,
        &url,
        "reporter",
        &[
            "--push-interval",
            "15s",
            "--full-refresh",
            "2m",
            "--scan-interval",
            "5s",
            "--log-format",
            "json",
            "--batch-size",
            "500",
        ],
        true,
    );
    let mut ready = None;
    let mut first_push = None;
    let deadline = Instant::now() + Duration::from_secs(600);
    while first_push.is_none() {
        let text = reporter.metrics().await;
        if ready.is_none()
            && reqwest::get(format!("http://127.0.0.1:{}/readyz", reporter.ops))
                .await
                .is_ok_and(|r| r.status().is_success())
        {
            ready = Some(started.elapsed());
        }
        if sample(&text, "aco_reporter_reports_sent_total{kind=\"nodes\"}") >= n_nodes as f64 {
            first_push = Some(started.elapsed());
        }
        assert!(
            Instant::now() < deadline,
            "no full push within 10 min; log:\n{}",
            reporter.server.log_tail(30)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Let the initial placement backlog drain before the steady window.
    let backlog_deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let text = reporter.metrics().await;
        let sent = sample(
            &text,
            "aco_reporter_reports_sent_total{kind=\"placements\"}",
        );
        if sent >= pods.len() as f64 || Instant::now() > backlog_deadline {
            eprintln!(
                "initial placements reported: {sent} after {:.1}s",
                started.elapsed().as_secs_f64()
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let pid = reporter_pid(&reporter).expect("reporter pid");
    let before_text = reporter.metrics().await;
    let (cpu0, _, _) = proc_usage(pid);
    let t0 = Instant::now();
    // Lag pods at a steady rate during the window (these are what the histogram's tail sees).
    let lag_before = histogram_counts(&before_text);
    let mut created = 0;
    while t0.elapsed() < window {
        if created < lag_pods {
            let burst = lag_rate.min(lag_pods - created);
            let batch: Vec<Value> = (created..created + burst)
                .map(|i| bound_pod(ns, &format!("lag-{i:05}"), &name_of(&nodes[i % n_nodes])))
                .collect();
            create_all(kube, &batch, |_| format!("/api/v1/namespaces/{ns}/pods")).await;
            created += burst;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let (cpu1, rss, hwm) = proc_usage(pid);
    let after_text = reporter.metrics().await;
    let delta = |series: &str| sample(&after_text, series) - sample(&before_text, series);
    let requests = request_count(&before_text, &after_text);
    let bytes: f64 = ["nodes", "placements", "outcomes"]
        .iter()
        .map(|k| delta(&format!("aco_reporter_request_bytes_total{{kind=\"{k}\"}}")))
        .sum();
    let lag_text = histogram_delta(&after_text, &lag_before);
    Row {
        nodes: n_nodes,
        pods: pods.len(),
        sync_s: ready.unwrap_or_default().as_secs_f64(),
        first_push_s: first_push.unwrap_or_default().as_secs_f64(),
        cpu_pct: (cpu1 - cpu0) / elapsed * 100.0,
        rss_mib: rss,
        hwm_mib: hwm,
        requests_per_min: requests / elapsed * 60.0,
        kib_per_min: bytes / 1024.0 / elapsed * 60.0,
        lag_p50: histogram_quantile(&lag_text, "aco_reporter_bind_to_report_seconds", 0.5),
        lag_p99: histogram_quantile(&lag_text, "aco_reporter_bind_to_report_seconds", 0.99),
    }
}

/// The bind-to-report histogram's bucket counts.
fn histogram_counts(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| l.starts_with("aco_reporter_bind_to_report_seconds_bucket{"))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// The histogram over the window only: bucket counts after minus before.
fn histogram_delta(after: &str, before: &[(String, f64)]) -> String {
    histogram_counts(after)
        .into_iter()
        .map(|(k, v)| {
            let b = before
                .iter()
                .find(|(bk, _)| *bk == k)
                .map(|(_, v)| *v)
                .unwrap_or(0.0);
            format!("{k} {}", v - b)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Requests the reporter made in the window: `aco_reporter_requests_total` by kind.
fn request_count(before: &str, after: &str) -> f64 {
    ["nodes", "placements"]
        .iter()
        .map(|k| {
            let s = format!("aco_reporter_requests_total{{kind=\"{k}\"}}");
            sample(after, &s) - sample(before, &s)
        })
        .sum()
}

mod store_memory {
    use std::sync::Arc;

    use aco_reporter::cache::{Cache, Keyed};
    use aco_reporter::intern::Interner;
    use aco_reporter::k8s_openapi::api::core::v1::{Node, Pod};
    use aco_reporter::kube::runtime::watcher::Event;
    use aco_reporter::node_record::{NodeReader, NodeRecord};
    use aco_reporter::pod_record::{PodReader, PodRecord};
    use serde_json::{json, Value};

    /// A pod as the API server returns one created by a Deployment's ReplicaSet.
    fn api_pod(i: usize, node: &str) -> Value {
        let name = format!("web-{:05}-5d8f9c7b6-{i:06}", i % 3_000);
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": name, "generateName": "web-5d8f9c7b6-", "namespace": format!("team-{}", i % 40),
                "uid": format!("{:08x}-1c2d-4e5f-8a9b-{i:012x}", i), "resourceVersion": format!("{}", 100_000 + i),
                "creationTimestamp": "2026-12-01T10:00:00Z",
                "labels": {"app": "web", "pod-template-hash": "5d8f9c7b6", "scheduling.aco/tenant-id": format!("t{}", i % 40),
                           "app.kubernetes.io/part-of": "shop", "version": "v42"},
                "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
                                "kubectl.kubernetes.io/restartedAt": "2026-11-30T08:00:00Z"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f9c7b6",
                    "uid": "0d9c8b7a-1111-2222-3333-444455556666", "controller": true, "blockOwnerDeletion": true}],
                "managedFields": [
                    {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-12-01T10:00:00Z",
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                        "f:ownerReferences": {".": {}, "k:{\"uid\":\"0d9c8b7a\"}": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:env": {}, "f:image": {}, "f:resources": {}}}}}},
                    {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-12-01T10:00:05Z", "subresource": "status",
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}}}
                ]
            },
            "spec": {
                "schedulerName": "aco-scheduler", "nodeName": node, "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                "serviceAccountName": "default", "serviceAccount": "default", "terminationGracePeriodSeconds": 30,
                "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
                "securityContext": {"runAsNonRoot": true, "runAsUser": 1000},
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                "volumes": [{"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
                "containers": [{
                    "name": "app", "image": "registry.example.com/shop/web:v42", "imagePullPolicy": "IfNotPresent",
                    "args": ["--port=8080", "--log-level=info"],
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
                    "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                            {"name": "LOG_FORMAT", "value": "json"}, {"name": "CACHE_SIZE", "value": "256"},
                            {"name": "DB_HOST", "value": "db.shop.svc.cluster.local"}, {"name": "FEATURES", "value": "a,b,c"}],
                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                    "livenessProbe": {"httpGet": {"path": "/livez", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                    "volumeMounts": [{"name": "kube-api-access-abcde", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}]
            },
            "status": {
                "phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.3.17", "hostIPs": [{"ip": "10.0.3.17"}],
                "podIP": "10.244.3.91", "podIPs": [{"ip": "10.244.3.91"}], "startTime": "2026-12-01T10:00:01Z",
                "conditions": [
                    {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": "2026-12-01T10:00:03Z"},
                    {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-12-01T10:00:01Z"},
                    {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-01T10:00:09Z"},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-12-01T10:00:09Z"},
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T10:00:00Z"}],
                "containerStatuses": [{"name": "app", "ready": true, "started": true, "restartCount": 0,
                    "image": "registry.example.com/shop/web:v42", "imageID": "registry.example.com/shop/web@sha256:4f1c0d6e8a9b7c5d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d",
                    "containerID": "containerd://7d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c",
                    "state": {"running": {"startedAt": "2026-12-01T10:00:04Z"}}, "lastState": {},
                    "volumeMounts": [{"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true, "recursiveReadOnly": "Disabled"}]}]
            }
        })
    }

    fn api_node(i: usize) -> Value {
        let name = format!("node-{i:05}");
        let conditions: Vec<Value> = ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
            .iter()
            .map(|t| {
                let status = if *t == "Ready" { "True" } else { "False" };
                json!({"type": t, "status": status, "lastHeartbeatTime": "2026-12-01T10:00:00Z",
                       "lastTransitionTime": "2026-11-01T10:00:00Z", "reason": "KubeletReady",
                       "message": "kubelet is posting ready status"})
            })
            .collect();
        let images: Vec<Value> = (0..30)
            .map(|k| json!({"names": [format!("registry.example.com/img-{k}@sha256:{k:064x}"), format!("registry.example.com/img-{k}:v1")], "sizeBytes": 123_456_789}))
            .collect();
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": format!("n-{i:08}"), "resourceVersion": "1",
                "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                           "node.kubernetes.io/instance-type": "p3.8xlarge", "topology.kubernetes.io/zone": "eu-west-1a",
                           "karpenter.sh/capacity-type": "spot", "aco/cost-per-hour": "3.06", "aco/gpu-type": "V100M16"},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {"podCIDR": "10.244.3.0/24", "providerID": format!("aws:///eu-west-1a/i-{i:017x}")},
            "status": {"capacity": {"cpu": "32", "memory": "244Gi", "nvidia.com/gpu": "4", "pods": "110"},
                "allocatable": {"cpu": "31850m", "memory": "240Gi", "nvidia.com/gpu": "4", "pods": "110"},
                "conditions": conditions,
                "addresses": [{"type": "InternalIP", "address": "10.0.3.17"}, {"type": "Hostname", "address": name}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.1", "osImage": "Bottlerocket", "containerRuntimeVersion": "containerd://1.7",
                    "kubeletVersion": "v1.37.2", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
                "images": images}})
    }

    /// (VmRSS, VmHWM) of this process in MiB.
    fn rss() -> (f64, f64) {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
                / 1024.0
        };
        (kib("VmRSS:"), kib("VmHWM:"))
    }

    /// One full list, as the watcher delivers it: Init, InitApply per object, InitDone.
    fn list<R, F>(cache: &Cache<R>, n: usize, make: F)
    where
        R: Keyed,
        F: Fn(usize) -> R,
    {
        cache.apply(Event::Init);
        for i in 0..n {
            cache.apply(Event::InitApply(make(i)));
        }
    }

    pub fn run(nodes: usize, pods: usize) -> String {
        let config = aco_core::config::Config::default();
        let strings = Arc::new(Interner::default());
        let node_reader = NodeReader::new(
            &aco_reporter::node_facts::labels_the_worker_reads(&config.node_keys),
            "aco/latency-us",
            strings.clone(),
        );
        let pod_reader = PodReader::new(&config.pod_keys, None, strings.clone());
        let node_text: Vec<String> = (0..16).map(|i| api_node(i).to_string()).collect();
        let pod_node = |i: usize| format!("node-{:05}", i % nodes.max(1));
        let make_node = |i: usize| -> NodeRecord {
            let mut v: Value = serde_json::from_str(&node_text[i % 16]).unwrap();
            v["metadata"]["name"] = format!("node-{i:05}").into();
            let n: Node = serde_json::from_value(v).unwrap();
            node_reader.read(&n)
        };
        let make_pod = |i: usize| -> PodRecord {
            // Deserialised from the bytes an API server sends, as the watcher does.
            let text = api_pod(i, &pod_node(i)).to_string();
            let p: Pod = serde_json::from_str(&text).unwrap();
            pod_reader.read(&p)
        };
        let wire_bytes = api_pod(1, "node-00001").to_string().len();
        let (base, _) = rss();
        let node_store = Cache::<NodeRecord>::default();
        let pod_store = Cache::<PodRecord>::default();
        list(&node_store, nodes, make_node);
        node_store.apply(Event::InitDone);
        list(&pod_store, pods, make_pod);
        pod_store.apply(Event::InitDone);
        let (steady, _) = rss();
        // A relist in flight (a watch restarted with its resource version gone): the whole
        // list again, applied in place by the reporter's cache.
        list(&pod_store, pods, make_pod);
        let (during, _) = rss();
        pod_store.apply(Event::InitDone);
        let (after, peak) = rss();
        let held: Vec<Arc<PodRecord>> = pod_store.state();
        assert_eq!((held.len(), node_store.state().len()), (pods, nodes));
        assert_eq!(held[0].request_amounts().get("cpu"), 250, "requests summed");
        let per_pod_kib = (steady - base) * 1024.0 / pods as f64;
        let peak_per_pod_kib = (peak - base) * 1024.0 / pods as f64;
        eprintln!(
            "store: {nodes} nodes, {pods} pods: base {base:.0} MiB, steady {steady:.0}, relist in flight {during:.0}, after {after:.0}, peak {peak:.0} MiB; {per_pod_kib:.2} KiB per pod steady, {peak_per_pod_kib:.2} at peak (wire {wire_bytes} B; {} shared strings)",
            strings.len()
        );
        format!(
            "| nodes | pods | RSS before caches | steady | relist in flight | peak (VmHWM) | per pod, steady | per pod, peak | pod JSON from the API |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n| {nodes} | {pods} | {base:.0} MiB | {steady:.0} MiB | {during:.0} MiB | {peak:.0} MiB | {per_pod_kib:.2} KiB | {peak_per_pod_kib:.2} KiB | {wire_bytes} B |\n"
        )
    }
}

#[tokio::main]
async fn main() {
    if std::env::var("BENCH_MODE").as_deref() == Ok("store") {
        let md = store_memory::run(
            env_usize("BENCH_STORE_NODES", 5_000),
            env_usize("BENCH_STORE_PODS", 150_000),
        );
        println!("{md}");
        let out = aco_testkit::repo_root().join("target/bench-reporter-store.md");
        let _ = std::fs::write(&out, &md);
        eprintln!("written to {}", out.display());
        return;
    }
    let counts: Vec<usize> = std::env::var("BENCH_NODES")
        .unwrap_or_else(|_| "1000,5000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let per_node = env_usize("BENCH_PODS_PER_NODE", 20);
    let window = Duration::from_secs(env_usize("BENCH_WINDOW_S", 60) as u64);
    let lag_pods = env_usize("BENCH_LAG_PODS", 300);
    let lag_rate = env_usize("BENCH_LAG_RATE", 20);
    let mut rows = Vec::new();
    for n in counts {
        let row = run(n, per_node, window, lag_pods, lag_rate).await;
        eprintln!(
            "{} nodes: cpu {:.1}% rss {:.0} MiB (peak {:.0}), {:.1} req/min, {:.0} KiB/min, lag p50 {:?} p99 {:?}",
            row.nodes, row.cpu_pct, row.rss_mib, row.hwm_mib, row.requests_per_min, row.kib_per_min, row.lag_p50, row.lag_p99
        );
        rows.push(row);
    }
    let fmt = |v: Option<f64>| v.map(|s| format!("{s:.2} s")).unwrap_or_else(|| "–".into());
    let mut md = String::from(
        "| nodes | pods | synced | first full push | CPU (of one core) | RSS / peak | requests/min | KiB/min | bind→ack p50 | p99 |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in &rows {
        md.push_str(&format!(
            "| {} | {} | {:.1} s | {:.1} s | {:.1}% | {:.0} / {:.0} MiB | {:.1} | {:.0} | {} | {} |\n",
            r.nodes, r.pods, r.sync_s, r.first_push_s, r.cpu_pct, r.rss_mib, r.hwm_mib, r.requests_per_min, r.kib_per_min, fmt(r.lag_p50), fmt(r.lag_p99)
        ));
    }
    println!("{md}");
    let out = aco_testkit::repo_root().join("target/bench-reporter.md");
    let _ = std::fs::write(&out, &md);
    eprintln!("written to {}", out.display());
}
