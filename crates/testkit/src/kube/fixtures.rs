//! Fixtures shared by the end-to-end tests and the kube benches: the Worker (through the
//! Miniflare launcher, [`crate::worker`]) over HTTPS with the control plane's CA, its admin API,
//! nodes with the labels the Worker reads (OpenB's come from [`crate::openb`]), and pod builders.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::reporter::Reporter;
use super::{install, ControlPlane, Kube, SchedulerConfig};
use crate::api::{WorkerApi, WorkerHttp};
use crate::nodes::name_of;
use crate::pods::pod_object;
use crate::{now_ms, StartOptions, WorkerProcess, EXTENDER_TOKEN};

// ---------------------------------------------------------------------------------------------
// fixture: control plane + Worker over HTTPS

pub struct Env {
    /// The in-cluster reporter feeding the Worker, when the test runs one (dropped first).
    pub reporter: Option<Reporter>,
    pub cp: ControlPlane,
    pub worker: Option<WorkerProcess>,
    pub api: WorkerApi,
    pub worker_state: PathBuf,
    _state: tempfile::TempDir,
}

impl Env {
    pub async fn start() -> Env {
        Env::start_with(super::ControlPlaneOptions::default(), &[]).await
    }

    /// [`Env::start`] with control-plane options (kube-controller-manager) and extra Worker
    /// `[vars]` (over [`worker_options`]).
    pub async fn start_with(options: super::ControlPlaneOptions, vars: &[(&str, &str)]) -> Env {
        let cp = ControlPlane::start_with(options).await;
        let state = tempfile::Builder::new()
            .prefix("aco-e2e-worker-")
            .tempdir()
            .unwrap();
        let worker_state = state.path().to_path_buf();
        let mut opts = worker_options(&cp, &worker_state);
        for (k, v) in vars {
            opts = opts.var(k, *v);
        }
        let worker = WorkerProcess::start(opts);
        let api = WorkerApi::new(&worker, &cp.pki.ca_pem());
        Env {
            reporter: None,
            cp,
            worker: Some(worker),
            api,
            worker_state,
            _state: state,
        }
    }

    /// [`Env::start`] plus the real `aco-reporter` binary feeding the Worker (no NodeMetrics:
    /// these nodes have no kubelet): node facts and placements come from it, not from the test.
    pub async fn start_with_reporter() -> Env {
        Env::start_with_reporter_flags(&[]).await
    }

    /// [`Env::start_with_reporter`] with extra reporter flags (e.g. `--shadow-scheduler-names`).
    pub async fn start_with_reporter_flags(extra: &[&str]) -> Env {
        Env::start_with_reporter_and_vars(extra, &[]).await
    }

    /// [`Env::start_with_reporter_flags`] with extra Worker `[vars]` (e.g. `ALPHA=1`).
    pub async fn start_with_reporter_and_vars(extra: &[&str], vars: &[(&str, &str)]) -> Env {
        let mut env = Env::start_with(super::ControlPlaneOptions::default(), vars).await;
        let url = env.api.base.clone();
        let flags = [&["--no-node-metrics"], extra].concat();
        env.reporter = Some(Reporter::start(&env.cp, &url, "reporter", &flags, false));
        env
    }

    pub fn kube(&self) -> &Kube {
        &self.cp.kube
    }

    /// The shipped `k8s/scheduler-config.yaml` (one verb: prioritize) pointed at this Worker.
    pub fn worker_config(&self, node_cache_capable: bool) -> SchedulerConfig {
        SchedulerConfig::worker(
            self.api.url_prefix(),
            self.cp.pki.ca_pem(),
            node_cache_capable,
        )
    }

    /// The two-verb variant (`k8s/scheduler-config-filter.yaml`: filter, then prioritize)
    /// pointed at this Worker: the Worker's own filter enforces the constraints.
    pub fn worker_config_filter(&self, node_cache_capable: bool) -> SchedulerConfig {
        SchedulerConfig {
            file: super::scheduler_config::SHIPPED_FILTER,
            ..self.worker_config(node_cache_capable)
        }
    }

    /// Registers the shipped admission webhook (`k8s/webhook/webhook.yaml` as kustomize renders it)
    /// with the API server, calling this env's reporter, and waits until it applies
    /// ([`Env::register_webhook`]). Returns the registered object.
    pub async fn install_webhook(&self) -> Value {
        let reporter = self
            .reporter
            .as_ref()
            .expect("the reporter serves the webhook: Env::start_with_reporter");
        self.install_webhook_for(reporter).await
    }

    /// [`Env::install_webhook`], calling `reporter`'s webhook.
    pub async fn install_webhook_for(&self, reporter: &Reporter) -> Value {
        let objects = install::render(&self.cp, &self.api.base, "aco-reporter:test");
        let mwc = self.local_webhook(&objects, reporter);
        self.register_webhook(&mwc).await;
        mwc
    }

    /// The rendered `MutatingWebhookConfiguration` of `objects`, calling `reporter` with the
    /// webhook CA of this control plane ([`install::local_webhook`]).
    pub fn local_webhook(&self, objects: &[Value], reporter: &Reporter) -> Value {
        install::local_webhook(objects, reporter.webhook, &self.cp.pki.webhook_ca_pem())
    }

    /// Applies `mwc` and waits until the API server calls it: a dry-run creation of a pod of
    /// aco-scheduler with a latency target comes back with the webhook's annotation.
    pub async fn register_webhook(&self, mwc: &Value) {
        install::apply(self.kube(), std::slice::from_ref(mwc)).await;
        let probe = pod(
            "default",
            "webhook-probe",
            PodOpts {
                annotations: vec![(LATENCY_TARGET_ANNOTATION, "100".into())],
                ..Default::default()
            },
        );
        super::wait_for(
            "the admission webhook to apply to new pods",
            Duration::from_secs(60),
            || {
                let probe = probe.clone();
                async move {
                    let created = self.kube().try_create_pod(&probe, true).await.ok()?;
                    created["metadata"]["annotations"][WEBHOOK_ANNOTATION]
                        .is_string()
                        .then_some(())
                }
            },
        )
        .await;
    }

    /// Creates the Node objects; with a reporter, waits until the Worker has its facts for
    /// every one of them, else (benchmarks) pushes the facts a reporter would send.
    pub async fn add_nodes(&self, nodes: &[Value]) {
        for chunk in nodes.chunks(16) {
            futures::future::join_all(chunk.iter().map(|n| self.kube().create_node(n))).await;
        }
        if self.reporter.is_none() {
            self.api
                .put_facts(nodes.iter().map(facts_of).collect::<Vec<_>>())
                .await;
            return;
        }
        for n in nodes {
            let name = name_of(n);
            super::wait_for(
                &format!("the reporter's facts for {name}"),
                Duration::from_secs(60),
                || {
                    let name = name.clone();
                    async move {
                        self.api
                            .try_node_facts(&name)
                            .await
                            .filter(|f| f.requested.is_some())
                    }
                },
            )
            .await;
        }
    }
}

/// The Worker of a kube suite: HTTPS with the control plane's CA, state in `state`, and the
/// verbs authenticated as in production — `EXTENDER_AUTH=path-token` with [`EXTENDER_TOKEN`],
/// so kube-scheduler's urlPrefix is `https://127.0.0.1:<port>/t/<token>/v1`
/// ([`WorkerApi::url_prefix`](crate::api::WorkerHttp::url_prefix)).
pub fn worker_options(cp: &ControlPlane, state: &std::path::Path) -> StartOptions {
    StartOptions {
        persist_dir: Some(state.to_path_buf()),
        https: Some(cp.pki.worker_tls()),
        ..StartOptions::default()
    }
    .var("EXTENDER_AUTH", "path-token")
    .var("EXTENDER_TOKENS", EXTENDER_TOKEN)
}

/// The annotation the reporter's admission webhook writes on a pod it gave node affinity
/// (`aco_reporter::admission::ANNOTATION`).
pub const WEBHOOK_ANNOTATION: &str = "scheduling.aco/required-node-affinity";
/// The pod annotation of a latency target (the Worker's first `LATENCY_TARGET_ANNOTATIONS`).
pub const LATENCY_TARGET_ANNOTATION: &str = "scheduling.aco/latency-target-us";

pub fn start_worker(cp: &ControlPlane, state: &std::path::Path) -> WorkerProcess {
    WorkerProcess::start(worker_options(cp, state))
}

// ---------------------------------------------------------------------------------------------
// nodes

/// A CPU-only node named `name` with this allocatable (and capacity) and 110 pods.
pub fn cpu_node(name: &str, cpu: &str, memory: &str) -> Value {
    let res = json!({"cpu": cpu, "memory": memory, "pods": "110"});
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        "status": {"allocatable": res, "capacity": res},
    })
}

/// Turns a node (e.g. from [`openb_gpu_nodes`]) into one kwok manages, as kwokctl's node
/// template has it: annotations `kwok.x-k8s.io/node: fake` (kwok's selector),
/// `metrics.k8s.io/resource-metrics-path` (where metrics-server scrapes it on kwok's server) and
/// `node.alpha.kubernetes.io/ttl: "0"`, label `type: kwok`, and a Hostname address. Labels,
/// allocatable and capacity are kept; kwok adds InternalIP 127.0.0.1, the kubelet port, node
/// info and the Ready condition. Create it with [`create_kwok_nodes`] (status included).
pub fn kwok_node(mut node: Value) -> Value {
    let name = name_of(&node);
    let meta = node["metadata"].as_object_mut().unwrap();
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    annotations[super::kwok::KWOK_NODE_ANNOTATION] = "fake".into();
    annotations["node.alpha.kubernetes.io/ttl"] = "0".into();
    annotations["metrics.k8s.io/resource-metrics-path"] =
        format!("/metrics/nodes/{name}/metrics/resource").into();
    meta.entry("labels").or_insert_with(|| json!({}))["type"] = "kwok".into();
    node["status"]["addresses"] = json!([{"type": "Hostname", "address": name}]);
    node
}

/// Creates nodes with their status in one request (a kubelet registers a node that way; kwok
/// must not see a node without its allocatable).
pub async fn create_kwok_nodes(kube: &Kube, nodes: &[Value]) {
    for chunk in nodes.chunks(16) {
        futures::future::join_all(chunk.iter().map(|n| kube.post("/api/v1/nodes", n))).await;
    }
}

/// Waits until every node of `names` is Ready (kwok's heartbeats) and, with `untainted`, the node
/// lifecycle controller has lifted its `node.kubernetes.io/` taints (a cluster running
/// kube-controller-manager).
pub async fn wait_nodes_ready(kube: &Kube, names: &[String], timeout: Duration, untainted: bool) {
    for name in names {
        super::wait_for(&format!("node {name} Ready"), timeout, || {
            let (kube, name) = (kube.clone(), name.clone());
            async move {
                let node = kube.try_node(&name).await?;
                let ready = node
                    .status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
                let tainted = node
                    .spec
                    .and_then(|s| s.taints)
                    .is_some_and(|t| t.iter().any(|t| t.key.starts_with("node.kubernetes.io/")));
                (ready && !(untainted && tainted)).then_some(())
            }
        })
        .await;
    }
}

/// Adds the labels the Worker reads and mirrors the OpenB GPU count as `nvidia.com/gpu`.
pub fn label_node(mut node: Value, cost: f64, latency_us: u32, spot: bool) -> Value {
    let model = node["metadata"]["labels"]["alibabacloud.com/gpu-card-model"]
        .as_str()
        .map(str::to_owned);
    let labels = node["metadata"]["labels"].as_object_mut().unwrap();
    if let Some(m) = &model {
        labels.insert("aco/gpu-type".into(), m.clone().into());
    }
    labels.insert("aco/cost-per-hour".into(), format!("{cost}").into());
    labels.insert("aco/latency-us".into(), latency_us.to_string().into());
    labels.insert(
        "aco/instance-type".into(),
        if spot { "spot" } else { "on-demand" }.into(),
    );
    for key in ["allocatable", "capacity"] {
        let res = node["status"][key].as_object_mut().unwrap();
        if let Some(g) = res.get("alibabacloud.com/gpu-count").cloned() {
            res.insert("nvidia.com/gpu".into(), g);
        }
    }
    node
}

/// The constraint scenario's nodes: GPU nodes of several models (V100M16 ×2, V100M32, T4 ×2,
/// P100, G2) plus three CPU-only ones, with latencies straddling a 200 µs target and prices.
pub fn constraint_nodes() -> Vec<Value> {
    let gpu =
        crate::openb::pick_gpu_nodes(&["V100M16", "V100M16", "V100M32", "T4", "T4", "P100", "G2"]);
    let latencies = [150, 900, 120, 80, 600, 190, 1500];
    let costs = [3.2, 3.0, 4.1, 1.1, 1.0, 0.9, 2.2];
    let mut nodes: Vec<Value> = gpu
        .into_iter()
        .enumerate()
        .map(|(i, n)| label_node(n, costs[i], latencies[i], i % 3 == 2))
        .collect();
    let cpu = crate::openb::openb_cpu_nodes();
    for (i, (lat, cost)) in [(100, 0.5), (700, 0.4), (300, 0.6)].into_iter().enumerate() {
        nodes.push(label_node(cpu[i].clone(), cost, lat, false));
    }
    nodes
}

/// The first `n` OpenB CPU nodes as kwok nodes, priced alike ($1/h, 300 µs, on demand): what
/// tells them apart is what the cluster reports (load, outcomes), not their labels.
pub fn openb_kwok_nodes(n: usize) -> Vec<Value> {
    crate::openb::openb_cpu_nodes()
        .into_iter()
        .take(n)
        .map(|node| kwok_node(label_node(node, 1.0, 300, false)))
        .collect()
}

/// Identical CPU nodes: nothing but the pheromone trail could tell them apart.
pub fn identical_nodes(n: usize, prefix: &str) -> Vec<Value> {
    let base = crate::openb::openb_cpu_nodes().into_iter().next().unwrap();
    (0..n)
        .map(|i| {
            let mut node = base.clone();
            let name = format!("{prefix}-{i}");
            crate::nodes::set_name(&mut node, name.clone().into());
            crate::nodes::set_label(&mut node, "kubernetes.io/hostname", &name);
            label_node(node, 1.0, 100, false)
        })
        .collect()
}

pub fn label(v: &Value, key: &str) -> String {
    v["metadata"]["labels"][key]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The `PUT /v1/nodes` entry the in-cluster reporter would send for this node.
pub fn facts_of(node: &Value) -> Value {
    let labels = node["metadata"]["labels"].clone();
    let latency: u64 = label(node, "aco/latency-us").parse().unwrap_or(0);
    json!({
        "name": name_of(node),
        "labels": labels,
        "allocatable": node["status"]["allocatable"],
        "requested": {"cpu": "0", "memory": "0"},
        "latencyUs": latency,
        "observedAtMs": now_ms(),
        "utilisation": [{"atMs": now_ms(), "value": 0.2}],
    })
}

// ---------------------------------------------------------------------------------------------
// pods

#[derive(Default)]
pub struct PodOpts<'a> {
    pub cpu: &'a str,
    pub memory: &'a str,
    pub gpus: u32,
    pub labels: Vec<(&'a str, String)>,
    pub annotations: Vec<(&'a str, String)>,
    pub affinity: Option<Value>,
}

/// A pod asking for one GPU of `models` (`scheduling.aco/gpu-models`, `|`-separated).
pub fn gpu_model_pod(ns: &str, name: &str, models: &str) -> Value {
    pod(
        ns,
        name,
        PodOpts {
            gpus: 1,
            annotations: vec![("scheduling.aco/gpu-models", models.into())],
            ..Default::default()
        },
    )
}

/// A pod for a test to create in the API server (500m CPU and 512Mi unless told, GPUs as limits).
pub fn pod(ns: &str, name: &str, o: PodOpts) -> Value {
    let mut resources = json!({"requests": {"cpu": if o.cpu.is_empty() { "500m" } else { o.cpu },
                                            "memory": if o.memory.is_empty() { "512Mi" } else { o.memory }}});
    if o.gpus > 0 {
        resources["limits"] = json!({"nvidia.com/gpu": o.gpus.to_string()});
    }
    let labels: serde_json::Map<String, Value> = o
        .labels
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    let annotations: serde_json::Map<String, Value> = o
        .annotations
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    let container =
        json!({"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources});
    let mut pod = pod_object(ns, name, labels.into(), annotations.into(), container);
    if let Some(a) = o.affinity {
        pod["spec"]["affinity"] = a;
    }
    pod
}

pub async fn create_pods(kube: &Kube, pods: &[Value]) -> Vec<String> {
    for chunk in pods.chunks(16) {
        futures::future::join_all(chunk.iter().map(|p| kube.create_pod(p))).await;
    }
    pods.iter().map(name_of).collect()
}
