//! kwok (fake kubelets) and metrics-server on the test control plane, both built by
//! `scripts/build-kube` (pinned `go install` of sigs.k8s.io/kwok and sigs.k8s.io/metrics-server
//! v0.8.0) and started the way `kwokctl create cluster --runtime binary --enable metrics-server`
//! starts them, but by this harness: 127.0.0.1, free ports, own process groups, stopped on drop.
//!
//! - [`ControlPlane::start_kwok`]: kwok manages the nodes annotated `kwok.x-k8s.io/node: fake`
//!   (see `fixtures::kwok_node`): they go Ready with InternalIP 127.0.0.1 and a kubelet port
//!   (`status.daemonEndpoints`) that is kwok's own server, and keep a node Lease. Pods bound to
//!   them go Running. Stages: `scripts/kube/kwok/upstream-v0.8.0.yaml` (kwok's defaults, its
//!   `/metrics/nodes/{node}/metrics/resource` Metric and usage from the pod annotations
//!   [`USAGE_CPU`] / [`USAGE_MEMORY`]) and `scripts/kube/kwok/fates.yaml` (pods annotated
//!   [`FATE`] fail as a kubelet reports it; the table of status shapes is in that file).
//! - [`ControlPlane::start_metrics_server`]: metrics-server scraping those endpoints every 10 s,
//!   registered as the APIService `v1beta1.metrics.k8s.io`, so that
//!   `GET /apis/metrics.k8s.io/v1beta1/nodes` answers through the kube-apiserver as in a real
//!   cluster.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::json;

use super::base64::encode as base64;
use super::{strings, wait_ready, ControlPlane, Server};
use crate::process::free_port;
use crate::repo_root;

/// Node annotation that puts a node under kwok's management (`--manage-nodes-with-annotation-selector`).
pub const KWOK_NODE_ANNOTATION: &str = "kwok.x-k8s.io/node";
/// Pod annotations read by kwok's ClusterResourceUsage (quantities, e.g. `1500m`, `1Gi`); a pod
/// without them uses 1m CPU and 1Mi memory.
pub const USAGE_CPU: &str = "kwok.x-k8s.io/usage-cpu";
pub const USAGE_MEMORY: &str = "kwok.x-k8s.io/usage-memory";
/// Pod annotation `failed` | `oom`: what happens to the pod once it has run for [`FATE_AFTER`].
pub const FATE: &str = "aco-test/fate";
/// Pod annotation: Go duration the pod runs before its fate (default `1s`).
pub const FATE_AFTER: &str = "aco-test/fate-after";

/// Pod annotation: a Job pod that the per-test Stages of [`JobStages`] end (any value).
pub const JOB: &str = "aco-test/job";

/// How kwok ends annotated Job pods ([`JOB`]), by node: pods on `failing` nodes fail (container
/// `Error`, exit 1, phase Failed) after `run_ms`; on `slow` nodes they succeed after
/// `slow_run_ms`; elsewhere after `run_ms`. Success keeps the containers' real start times and
/// stops native sidecars (init containers with `restartPolicy: Always`) with exit 143, as the
/// kubelet does at a Job's end.
#[derive(Clone, Debug, Default)]
pub struct JobStages {
    pub failing: Vec<String>,
    pub slow: Vec<String>,
    pub run_ms: u64,
    pub slow_run_ms: u64,
}

fn job_stage(name: &str, nodes_op: &str, nodes: &[String], delay_ms: u64, fail: bool) -> String {
    let values = if nodes.is_empty() {
        "['none']".to_string()
    } else {
        format!(
            "[{}]",
            nodes
                .iter()
                .map(|n| format!("'{n}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let select = format!(
        r#"    - key: '.metadata.annotations["{JOB}"]'
      operator: 'Exists'
    - key: '.spec.nodeName'
      operator: '{nodes_op}'
      values: {values}"#
    );
    end_stage(
        name,
        &select,
        &format!("    durationMilliseconds: {delay_ms}"),
        fail,
    )
}

/// A Stage ending running pods chosen by `select` (more matchExpressions) after `delay` (the
/// Stage's delay fields), as a kubelet reports a pod that ran to its end: succeeded (exit 0) or
/// failed (exit 1).
fn end_stage(name: &str, select: &str, delay: &str, fail: bool) -> String {
    let (exit, reason, phase, sidecar_exit, sidecar_reason) = if fail {
        (1, "Error", "Failed", 143, "Error")
    } else {
        (0, "Completed", "Succeeded", 143, "Error")
    };
    format!(
        r#"apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: {name}
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
{select}
  delay:
{delay}
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      {{{{ $root := . }}}}
      containerStatuses:
      {{{{ range $index, $item := .spec.containers }}}}
      {{{{ $origin := index $root.status.containerStatuses $index }}}}
      - image: {{{{ $item.image | Quote }}}}
        name: {{{{ $item.name | Quote }}}}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {exit}
            reason: {reason}
            startedAt: {{{{ $origin.state.running.startedAt | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      initContainerStatuses:
      {{{{ range $index, $item := .spec.initContainers }}}}
      {{{{ $origin := index $root.status.initContainerStatuses $index }}}}
      - image: {{{{ $item.image | Quote }}}}
        name: {{{{ $item.name | Quote }}}}
        ready: false
        restartCount: 0
        state:
          terminated:
            exitCode: {sidecar_exit}
            reason: {sidecar_reason}
            startedAt: {{{{ $origin.state.running.startedAt | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: {phase}
"#
    )
}

impl JobStages {
    /// The Stage documents, for [`ControlPlane::start_kwok_with`].
    pub fn yaml(&self) -> String {
        let mut special: Vec<String> = self.failing.clone();
        special.extend(self.slow.iter().cloned());
        [
            job_stage("aco-job-fail", "In", &self.failing, self.run_ms, true),
            job_stage("aco-job-slow", "In", &self.slow, self.slow_run_ms, false),
            job_stage("aco-job-succeed", "NotIn", &special, self.run_ms, false),
        ]
        .join(
            "---
",
        )
    }
}

/// A Stage completing (phase Succeeded, exit 0) every running pod annotated `annotation` at the
/// annotation's RFC 3339 time (or after its Go duration, e.g. `1500ms`, from when it runs): a
/// departure as the pod's kubelet reports a pod that ran to its end, so the reporter reads a real
/// end and its run time.
pub fn complete_at_stage(annotation: &str) -> String {
    end_stage(
        "aco-complete-at",
        &format!(
            r#"    - key: '.metadata.annotations["{annotation}"]'
      operator: 'Exists'"#
        ),
        &format!(
            r#"    durationMilliseconds: 1
    durationFrom:
      expressionFrom: '.metadata.annotations["{annotation}"]'"#
        ),
        false,
    )
}

/// The node stages of `scripts/kube/kwok/upstream-v0.8.0.yaml` (node-initialize and
/// node-heartbeat-with-lease), without its pod stages and metrics.
pub fn node_stages() -> String {
    let upstream =
        std::fs::read_to_string(repo_root().join("scripts/kube/kwok/upstream-v0.8.0.yaml"))
            .unwrap();
    upstream
        .split("\n---\n")
        .filter(|doc| doc.contains("kind: Stage") && doc.contains("    kind: Node\n"))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// metrics-server's `--metric-resolution`: 10 s is the smallest it accepts.
pub const METRIC_RESOLUTION: Duration = Duration::from_secs(10);

impl ControlPlane {
    /// Starts the kwok controller and waits for its server's /healthz.
    pub async fn start_kwok(&self) -> Server {
        self.start_kwok_with("").await
    }

    /// [`ControlPlane::start_kwok`] with extra Stage documents (e.g. [`JobStages::yaml`]).
    pub async fn start_kwok_with(&self, extra_stages: &str) -> Server {
        self.start_kwok_stages(extra_stages, 40).await
    }

    /// [`ControlPlane::start_kwok`] with a node lease of `lease_s` seconds (40 elsewhere).
    pub async fn start_kwok_lease(&self, lease_s: u32) -> Server {
        self.start_kwok_stages("", lease_s).await
    }

    /// [`ControlPlane::start_kwok_with`] with a node lease of `lease_s` seconds.
    pub async fn start_kwok_stages(&self, extra_stages: &str, lease_s: u32) -> Server {
        let dir = repo_root().join("scripts/kube/kwok");
        let mut configs = vec![dir.join("upstream-v0.8.0.yaml"), dir.join("fates.yaml")];
        if !extra_stages.trim().is_empty() {
            let extra = self.dir.join("kwok-extra-stages.yaml");
            std::fs::write(&extra, extra_stages).unwrap();
            configs.push(extra);
        }
        self.start_kwok_options(&configs, lease_s).await
    }

    /// kwok for nodes only (no pod stages: bound pods stay Pending, as if their kubelet had not
    /// started them yet; no pod fates) with a node lease of `lease_s` seconds. For a
    /// benchmark on a thousand nodes whose pods' phase is beside the point: a pod going Running
    /// is one more API write and watch event per pod. Nothing reads the leases without a node
    /// lifecycle controller, so a long lease spares the API server a renewal per node every few
    /// seconds too.
    pub async fn start_kwok_nodes_only(&self, lease_s: u32) -> Server {
        let config = self.dir.join("kwok-node-stages.yaml");
        std::fs::write(&config, node_stages()).unwrap();
        self.start_kwok_options(&[config], lease_s).await
    }

    async fn start_kwok_options(&self, configs: &[std::path::PathBuf], lease_s: u32) -> Server {
        let port = free_port();
        // kwok also loads ~/.kwok/kwok.yaml when it exists: point its work dir at the test's.
        let workdir = self.dir.join("kwok-workdir");
        std::fs::create_dir_all(&workdir).unwrap();
        let p = |f: &str| self.pki.path(f).to_string_lossy().into_owned();
        let mut args = strings(&[
            "--kubeconfig",
            &self.kubeconfig.to_string_lossy(),
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector",
            &format!("{KWOK_NODE_ANNOTATION}=fake"),
            // Every kwok node gets InternalIP 127.0.0.1 and kubelet port `port`: the address
            // metrics-server scrapes (kwok's server, on the same port, serves every node's path).
            "--node-ip",
            "127.0.0.1",
            "--node-port",
            &port.to_string(),
            "--server-address",
            &format!("127.0.0.1:{port}"),
            "--node-lease-duration-seconds",
            &lease_s.to_string(),
            "--tls-cert-file",
            &p("kubelet.crt"),
            "--tls-private-key-file",
            &p("kubelet.key"),
        ]);
        for c in configs {
            args.extend(strings(&["--config", &c.to_string_lossy()]));
        }
        let mut kwok = Server::spawn_with_env(
            "kwok",
            &self.dir,
            &self.bin.join("kwok"),
            &args,
            &[("KWOK_WORKDIR", workdir.as_path())],
        );
        let http = reqwest::Client::new();
        wait_ready(&mut kwok, Duration::from_secs(60), || {
            let r = http.get(format!("http://127.0.0.1:{port}/healthz")).send();
            async move { r.await.is_ok_and(|r| r.status().is_success()) }
        })
        .await;
        kwok
    }

    /// Starts metrics-server, registers it as the APIService `v1beta1.metrics.k8s.io` and waits
    /// until `GET /apis/metrics.k8s.io/v1beta1/nodes` answers 200 through the kube-apiserver.
    ///
    /// The Service is `ExternalName: 127.0.0.1`, as kwokctl's binary runtime does it: Endpoints
    /// and EndpointSlices may not name a loopback address, so a selector-less Service with
    /// endpoints cannot point at a server on 127.0.0.1, and with aggregator routing off the
    /// apiserver dials `<externalName>:<APIService port>`. TLS is verified: metrics-server serves
    /// `metrics-server.crt` (DNS `metrics-server.kube-system.svc`, the name the aggregator checks),
    /// the APIService's caBundle is the test CA.
    pub async fn start_metrics_server(&self) -> Server {
        let port = free_port();
        let cert_dir = self.dir.join("metrics-server-certs");
        std::fs::create_dir_all(&cert_dir).unwrap();
        let p = |f: &str| self.pki.path(f).to_string_lossy().into_owned();
        let kubeconfig = self.kubeconfig.to_string_lossy().into_owned();
        let args = strings(&[
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            &port.to_string(),
            "--kubeconfig",
            &kubeconfig,
            "--authentication-kubeconfig",
            &kubeconfig,
            "--authorization-kubeconfig",
            &kubeconfig,
            "--tls-cert-file",
            &p("metrics-server.crt"),
            "--tls-private-key-file",
            &p("metrics-server.key"),
            "--cert-dir",
            &cert_dir.to_string_lossy(),
            // kwok's nodes: InternalIP 127.0.0.1, port from status.daemonEndpoints, path from
            // the node annotation metrics.k8s.io/resource-metrics-path, kwok's serving cert
            // signed by the test CA (so no --kubelet-insecure-tls).
            "--kubelet-preferred-address-types",
            "InternalIP",
            "--kubelet-use-node-status-port",
            "--kubelet-certificate-authority",
            &p("ca.crt"),
            "--metric-resolution",
            &format!("{}s", METRIC_RESOLUTION.as_secs()),
            // Must stay below 90% of the resolution.
            "--kubelet-request-timeout",
            "5s",
        ]);
        let mut server = Server::spawn(
            "metrics-server",
            &self.dir,
            &self.bin.join("metrics-server"),
            &args,
        );

        let kube = &self.kube;
        kube.post(
            "/api/v1/namespaces/kube-system/services",
            &json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "metrics-server", "namespace": "kube-system",
                             "labels": {"k8s-app": "metrics-server"}},
                "spec": {"type": "ExternalName", "externalName": "127.0.0.1"},
            }),
        )
        .await;
        kube.post(
            "/apis/apiregistration.k8s.io/v1/apiservices",
            &json!({
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": {"k8s-app": "metrics-server"}},
                "spec": {
                    "group": "metrics.k8s.io", "version": "v1beta1",
                    "groupPriorityMinimum": 100, "versionPriority": 100,
                    "service": {"name": "metrics-server", "namespace": "kube-system", "port": port},
                    "caBundle": base64(&self.pki.ca_pem()),
                },
            }),
        )
        .await;
        wait_ready(&mut server, Duration::from_secs(90), || async move {
            kube.get_raw("/apis/metrics.k8s.io/v1beta1/nodes")
                .await
                .is_ok_and(|(s, _)| s == 200)
        })
        .await;
        server
    }
}

/// A `metrics.k8s.io/v1beta1` NodeMetrics or PodMetrics container usage, in cores and bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Usage {
    pub cpu_cores: f64,
    pub memory_bytes: f64,
}

impl Usage {
    pub fn of(usage: &BTreeMap<String, Quantity>) -> Option<Usage> {
        Some(Usage {
            cpu_cores: quantity(&usage.get("cpu")?.0)?,
            memory_bytes: quantity(&usage.get("memory")?.0)?,
        })
    }
}

/// `metrics.k8s.io/v1beta1` NodeMetrics (k8s-openapi has no type for the metrics API).
#[derive(Clone, Debug, Deserialize)]
pub struct NodeMetrics {
    pub metadata: ObjectMeta,
    /// RFC 3339, when the window ended.
    pub timestamp: String,
    /// A duration (`"15.023s"`).
    pub window: String,
    pub usage: BTreeMap<String, Quantity>,
}

/// `metrics.k8s.io/v1beta1` PodMetrics.
#[derive(Clone, Debug, Deserialize)]
pub struct PodMetrics {
    pub metadata: ObjectMeta,
    pub containers: Vec<ContainerMetrics>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ContainerMetrics {
    pub name: String,
    pub usage: BTreeMap<String, Quantity>,
}

/// A list of metrics.k8s.io objects.
#[derive(Clone, Debug, Deserialize)]
pub struct MetricsList<T> {
    pub items: Vec<T>,
}

/// A Kubernetes quantity as a number (`3499484044n` → 3.499484044, `2Gi` → 2147483648,
/// `1500m` → 1.5, `1e3` → 1000).
pub fn quantity(q: &str) -> Option<f64> {
    let q = q.trim();
    let split = q
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0_f64.powi(2),
        "Gi" => 1024.0_f64.powi(3),
        "Ti" => 1024.0_f64.powi(4),
        _ => return None,
    };
    Some(num.parse::<f64>().ok()? * factor)
}

#[cfg(test)]
mod tests {
    #[test]
    fn node_stages_are_the_two_upstream_node_stages_alone() {
        let stages = super::node_stages();
        let names: Vec<&str> = stages
            .lines()
            .filter_map(|l| l.strip_prefix("  name: "))
            .collect();
        assert_eq!(names, ["node-initialize", "node-heartbeat-with-lease"]);
        assert!(!stages.contains("kind: Pod"));
    }

    #[test]
    fn a_complete_at_stage_completes_annotated_running_pods_at_their_annotation() {
        let doc: serde_yaml::Value =
            serde_yaml::from_str(&super::complete_at_stage("aco-churn/end-at")).unwrap();
        let spec = &doc["spec"];
        assert_eq!(
            spec["delay"]["durationFrom"]["expressionFrom"],
            ".metadata.annotations[\"aco-churn/end-at\"]"
        );
        let keys: Vec<&str> = spec["selector"]["matchExpressions"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|e| e["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                ".metadata.deletionTimestamp",
                ".status.phase",
                ".metadata.annotations[\"aco-churn/end-at\"]"
            ]
        );
        assert!(spec["next"]["statusTemplate"]
            .as_str()
            .unwrap()
            .contains("phase: Succeeded"));
        // The job stages still select their own pods by node.
        let jobs = super::JobStages {
            failing: vec!["n1".into()],
            ..Default::default()
        }
        .yaml();
        assert!(
            jobs.contains("operator: 'In'\n      values: ['n1']"),
            "{jobs}"
        );
    }
}
