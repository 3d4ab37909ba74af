//! End-to-end: aco-reporter under real controllers. The control plane is a real cluster's:
//! kube-apiserver with `--authorization-mode=Node,RBAC` and the ServiceAccount admission plugin,
//! **kube-controller-manager** (Deployments, ReplicaSets, Jobs, PodGC, the node lifecycle and
//! taint eviction controllers, service accounts), kube-scheduler through the Worker, kwok's fake
//! kubelets. The reporter is **installed** from `k8s/` as a user does it (kustomize overlay with
//! the image and the Worker URL, `crates/testkit/src/kube/install.rs`) and runs with the token of its
//! ServiceAccount, so the shipped RBAC is what it gets: a missing verb breaks a watch or the
//! Lease and fails these tests.
//!
//! Each test asserts what reaches the Worker, node by node:
//! 1. a Deployment rollout, a scale-down, a drain through the Eviction API, a preemption and a
//!    container OOM-killed at its own limit: placements deposited, nothing charged to any node;
//! 2. Jobs: one whose pods fail on one node only (that node charged, no other), one with a
//!    native sidecar that exits 143 when the work is done (successes, not failures), running
//!    longer on one node (a run-time slowdown reported for that node's pods);
//! 3. a spot node deleted with its pods (reclaimed, forgotten by the Worker; PodGC's deletions
//!    charged to that node);
//! 4. one leader: a leader cut off from the API server (a proxy) stops pushing within its renew
//!    deadline while the standby takes over; an API-server stop freezes the facts' observation
//!    time, shows in `/readyz` and makes the leader step down (it cannot renew);
//! 5. a misconfigured Worker URL refuses to start, naming the variable;
//! 6. Prometheus as the load source: a real Prometheus scraping an exporter that serves
//!    dcgm-exporter's and OpenCost's series; the Worker gets the GPU load and the price.
//!
//! Run with `scripts/e2e` (one test at a time; each starts its own cluster).

#![allow(clippy::await_holding_lock)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aco_core::api::pheromones::PheromoneTableReply;
use aco_core::facts::NodeFacts;
use aco_testkit::api::WorkerHttp;
use aco_testkit::k8s_openapi::api::batch::v1::Job;
use aco_testkit::k8s_openapi::api::coordination::v1::Lease;
use aco_testkit::k8s_openapi::api::core::v1::{Pod, PodStatus, Secret};
use aco_testkit::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use aco_testkit::kube::fixtures::*;
use aco_testkit::pods::{edit_pod, edit_spec};

use aco_testkit::nodes::{allocatable_of, name_of, set_label};
use aco_testkit::openb::{openb_cpu_nodes, pick_gpu_nodes};

use aco_testkit::kube::kwok::{JobStages, FATE, FATE_AFTER, JOB};
use aco_testkit::kube::reporter::Reporter;
use aco_testkit::kube::{install, wait_for, ControlPlaneOptions, Server, SCHEDULER_NAME};
use aco_testkit::{now_ms, ADMIN_TOKEN};
use serde_json::{json, Value};

const BIND_TIMEOUT: Duration = Duration::from_secs(120);
const TENANT_WAIT: Duration = Duration::from_secs(90);
/// The Worker's FACTS_TTL_MS in the outage test (above the reporter's 20 s full refresh).
const FACTS_TTL_MS: u64 = 25_000;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Test speeds on top of the installed Deployment's settings.
const SPEEDS: &[&str] = &[
    "--push-interval",
    "1s",
    "--full-refresh",
    "20s",
    "--scan-interval",
    "500ms",
    "--backoff-max",
    "2s",
    "--lease-duration",
    "8s",
    "--lease-grace",
    "5s",
    "--renew-deadline",
    "5s",
];

/// The cluster: RBAC + controllers, kwok, the Worker, the second scheduler, the install applied.
struct Cluster {
    // Fields drop in order: the servers stop (printing their log tails when a test fails)
    // before `env` removes the directory that holds their logs.
    _scheduler: Server,
    _metrics_server: Option<Server>,
    _kwok: Server,
    objects: Vec<Value>,
    token_file: PathBuf,
    nodes: Vec<String>,
    env: Env,
}

impl Cluster {
    async fn start(
        nodes: &[Value],
        stages: JobStages,
        with_metrics: bool,
        vars: &[(&str, &str)],
    ) -> Cluster {
        let env = Env::start_with(
            ControlPlaneOptions {
                controllers: true,
                ..Default::default()
            },
            vars,
        )
        .await;
        let kwok = env.cp.start_kwok_with(&stages.yaml()).await;
        let metrics_server = if with_metrics {
            Some(env.cp.start_metrics_server().await)
        } else {
            None
        };
        let kube = env.kube().clone();
        create_kwok_nodes(&kube, nodes).await;
        let names: Vec<String> = nodes.iter().map(name_of).collect();
        for name in &names {
            // Ready, and the node lifecycle controller has lifted the not-ready taint.
            wait_for(
                &format!("node {name} Ready and untainted"),
                Duration::from_secs(90),
                || {
                    let (kube, name) = (kube.clone(), name.clone());
                    async move {
                        let node = kube.try_node(&name).await?;
                        let ready = node
                            .status?
                            .conditions?
                            .iter()
                            .any(|c| c.type_ == "Ready" && c.status == "True");
                        let tainted = node.spec.and_then(|s| s.taints).is_some_and(|t| {
                            t.iter().any(|t| t.key.starts_with("node.kubernetes.io/"))
                        });
                        (ready && !tainted).then_some(())
                    }
                },
            )
            .await;
        }
        let scheduler = env
            .cp
            .start_scheduler("scheduler", &env.worker_config(true))
            .await;

        // The install, as docs/deploy.md says: the token Secret, then `kubectl apply -k` of the overlay.
        kube.wait_service_account("kube-system", "default").await;
        kube.post(
            "/api/v1/namespaces/kube-system/secrets",
            &json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "aco-reporter-token", "namespace": "kube-system"},
                    "stringData": {"token": ADMIN_TOKEN}}),
        )
        .await;
        let objects = install::render(&env.cp, &env.api.base, "registry.example/aco-reporter:e2e");
        install::apply(&kube, &objects).await;
        // What the kubelet would mount from the Secret.
        let secret: Secret = kube
            .get_as("/api/v1/namespaces/kube-system/secrets/aco-reporter-token")
            .await
            .unwrap();
        let token = secret.data.unwrap_or_default().remove("token");
        let token_file = env.cp.dir.join("aco-reporter-token");
        std::fs::write(&token_file, token.expect("the token").0).unwrap();
        Cluster {
            env,
            _kwok: kwok,
            _metrics_server: metrics_server,
            _scheduler: scheduler,
            objects,
            token_file,
            nodes: names,
        }
    }

    fn kube(&self) -> &aco_testkit::kube::Kube {
        self.env.kube()
    }

    /// A reporter replica as the installed Deployment runs it, with its ServiceAccount's token,
    /// reaching the API server at `api` (a proxy in the leader test) .
    async fn reporter(&self, pod_name: &str, api: Option<&str>, extra: &[&str]) -> Reporter {
        let kubeconfig = self
            .env
            .cp
            .service_account_kubeconfig("kube-system", "aco-reporter")
            .await;
        let kubeconfig = match api {
            None => kubeconfig,
            Some(addr) => {
                let text = std::fs::read_to_string(&kubeconfig)
                    .unwrap()
                    .replace(&self.env.cp.api_url, &format!("https://{addr}"));
                let path = self.env.cp.dir.join(format!("kubeconfig-{pod_name}"));
                std::fs::write(&path, text).unwrap();
                path
            }
        };
        let env = install::reporter_env(&self.objects, pod_name, &self.token_file);
        let args = install::reporter_args(&self.objects);
        let flags = [SPEEDS, extra].concat();
        Reporter::start_installed(&self.env.cp, &kubeconfig, pod_name, &env, &args, &flags)
    }

    async fn table(&self, tenant: &str) -> PheromoneTableReply {
        self.env.api.pheromone_table(tenant).await
    }

    /// Failures the tenant's colony has recorded per node. The stored counts fade with
    /// OUTCOME_HALF_LIFE_MS (1 h): a test's minutes fade an outcome by far less than half of one,
    /// so the rounded count is the number of failed outcomes recorded.
    async fn failures(&self, tenant: &str) -> BTreeMap<String, f64> {
        let t = self.table(tenant).await;
        t.nodes
            .into_iter()
            .map(|e| (e.node, e.failures.round()))
            .collect()
    }

    async fn namespace(&self, ns: &str) {
        self.kube().create_namespace(ns).await;
        self.kube().wait_service_account(ns, "default").await;
    }

    async fn pods_where(&self, ns: &str, pred: impl Fn(&Pod) -> bool) -> Vec<Pod> {
        self.kube()
            .typed_pods(ns)
            .await
            .into_iter()
            .filter(|p| pred(p))
            .collect()
    }
}

/// A node's allocatable CPU cores (as built).
fn allocatable_cpu(n: &Value) -> f64 {
    aco_testkit::kube::kwok::quantity(&allocatable_of(n, "cpu").expect("allocatable cpu")).unwrap()
}

/// The reporter's log line of a run-time slowdown (tracing's JSON: the event's fields).
#[derive(serde::Deserialize)]
struct SlowdownLine {
    fields: SlowdownFields,
}

#[derive(serde::Deserialize)]
struct SlowdownFields {
    node: String,
    slowdown: f64,
}

fn template(
    labels: Value,
    annotations: Value,
    cpu: &str,
    restart: &str,
    extra_spec: Value,
) -> Value {
    let mut spec = json!({
        "schedulerName": SCHEDULER_NAME,
        "restartPolicy": restart,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
    });
    spec.as_object_mut()
        .unwrap()
        .extend(extra_spec.as_object().cloned().unwrap_or_default());
    json!({"metadata": {"labels": labels, "annotations": annotations}, "spec": spec})
}

fn deployment(ns: &str, name: &str, replicas: u32, extra_spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
                 "template": template(json!({"app": name}), json!({}), "100m", "Always", extra_spec)}})
}

#[allow(clippy::too_many_arguments)]
fn job(
    ns: &str,
    name: &str,
    completions: u32,
    parallelism: u32,
    cpu: &str,
    backoff: u32,
    extra_spec: Value,
) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"completions": completions, "parallelism": parallelism, "backoffLimit": backoff,
                 "template": template(json!({"job": name}), json!({JOB: "run"}), cpu, "Never", extra_spec)}})
}

fn bound(p: &Pod) -> bool {
    node_of(p).is_some_and(|n| !n.is_empty())
}

fn node_of(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.node_name.as_deref()
}

fn pod_name(p: &Pod) -> String {
    p.metadata.name.clone().expect("a pod name")
}

fn not_terminating(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
}

fn is_filler(p: &Pod) -> bool {
    p.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app"))
        .is_some_and(|a| a == "filler")
}

// ---------------------------------------------------------------------------------------------
// 1. operators' ends are neutral

#[tokio::test]
async fn rollouts_scale_downs_drains_preemptions_and_own_limit_ooms_charge_no_node() {
    let _serial = serial();
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(3)
        .map(|n| kwok_node(label_node(n, 1.0, 300, false)))
        .collect();
    let c = Cluster::start(&nodes, JobStages::default(), true, &[]).await;
    let mut r = c.reporter("aco-reporter-0", None, &[]).await;
    r.wait_nodes_reported(nodes.len(), Duration::from_secs(90))
        .await;
    let kube = c.kube();
    let ns = "web";
    c.namespace(ns).await;

    // A Deployment of three; then a rollout (a new ReplicaSet replaces every pod).
    kube.post(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &deployment(ns, "shop", 3, json!({})),
    )
    .await;
    wait_for("3 shop pods bound", BIND_TIMEOUT, || async {
        (c.pods_where(ns, bound).await.len() >= 3).then_some(())
    })
    .await;
    c.env.api.wait_deposits(ns, 3, TENANT_WAIT).await;
    let first: Vec<String> = c.pods_where(ns, bound).await.iter().map(pod_name).collect();
    kube.merge_patch(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments/shop"),
        &json!({"spec": {"template": {"metadata": {"annotations": {"rollout": "2"}}}}}),
    )
    .await;
    wait_for("the rollout to replace every pod", BIND_TIMEOUT, || async {
        let now: Vec<String> = c.pods_where(ns, bound).await.iter().map(pod_name).collect();
        (now.len() == 3 && now.iter().all(|n| !first.contains(n))).then_some(())
    })
    .await;
    // Scale-down to one.
    kube.merge_patch(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments/shop"),
        &json!({"spec": {"replicas": 1}}),
    )
    .await;
    wait_for("scale-down to 1", BIND_TIMEOUT, || async {
        (c.pods_where(ns, |p| bound(p) && not_terminating(p))
            .await
            .len()
            == 1)
            .then_some(())
    })
    .await;
    // A drain of the survivor: the Eviction API (the ReplicaSet replaces it). Chosen among the
    // pods not terminating: a scaled-down pod may still be listed, and gone by the eviction.
    let survivor = pod_name(&c.pods_where(ns, |p| bound(p) && not_terminating(p)).await[0]);
    kube.post(
        &format!("/api/v1/namespaces/{ns}/pods/{survivor}/eviction"),
        &json!({"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": survivor, "namespace": ns}}),
    )
    .await;
    // A container OOM-killed at its own memory limit (kwok: phase Failed, OOMKilled, exit 137).
    let oom = pod(
        ns,
        "oom",
        PodOpts {
            cpu: "100m",
            memory: "64Mi",
            annotations: vec![(FATE, "oom".into()), (FATE_AFTER, "1s".into())],
            ..Default::default()
        },
    );
    let oom = edit_spec(oom, |spec| {
        spec.restart_policy = Some("Never".into());
        let limits = [("memory".to_owned(), Quantity("64Mi".into()))];
        spec.containers[0].resources.get_or_insert_default().limits = Some(limits.into());
    });
    kube.create_pod(&oom).await;

    // Preemption: fillers take 70% of every node; a high-priority pod needing half a node
    // makes kube-scheduler preempt one of them.
    let alloc = allocatable_cpu;
    let min_cpu = nodes.iter().map(alloc).fold(f64::MAX, f64::min);
    kube.post(
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        &json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "aco-e2e-high"}, "value": 100000}),
    )
    .await;
    // Bare pods, not a Deployment: no replacement competes for the space a victim frees.
    let filler_cpu = format!("{}m", (min_cpu * 700.0) as u64);
    for i in 0..nodes.len() {
        let filler = pod(
            ns,
            &format!("filler-{i}"),
            PodOpts {
                cpu: &filler_cpu,
                memory: "64Mi",
                labels: vec![("app", "filler".to_string())],
                ..Default::default()
            },
        );
        kube.create_pod(&filler).await;
    }
    wait_for("a filler on every node", BIND_TIMEOUT, || async {
        let n = c.pods_where(ns, |p| bound(p) && is_filler(p)).await.len();
        (n == nodes.len()).then_some(())
    })
    .await;
    let urgent_cpu = format!("{}m", (min_cpu * 500.0) as u64);
    let urgent = pod(
        ns,
        "urgent",
        PodOpts {
            cpu: &urgent_cpu,
            memory: "64Mi",
            ..Default::default()
        },
    );
    let urgent = edit_spec(urgent, |spec| {
        spec.priority_class_name = Some("aco-e2e-high".into())
    });
    kube.create_pod(&urgent).await;
    // The preemptor's own binding is not waited for: under load kube-scheduler v1.37.2 retries
    // it before it sees its nomination, preempts a filler on the next node too, and can leave it
    // unschedulable until its 5-minute flush (about 1 run in 4 here; kubernetes/kubernetes#141694).
    // What the reporter must get right is each victim: every filler preempted is judged neutral.

    let series = |verdict: &str, reason: &str| {
        format!("aco_reporter_pod_ends_total{{verdict=\"{verdict}\",reason=\"{reason}\"}}")
    };
    let preempted = series("neutral", "PreemptionByScheduler");
    wait_for(
        "every preempted filler judged neutral",
        TENANT_WAIT,
        || async {
            let left = c.pods_where(ns, is_filler).await.len();
            let gone = (nodes.len() - left) as f64;
            (gone >= 1.0 && r.metric(&preempted).await >= gone).then_some(())
        },
    )
    .await;
    let deleted = series("neutral", "Deleted");
    let evicted = series("neutral", "EvictionByEvictionAPI");
    let own_oom = series("neutral", "OOMKilled at its own memory limit");
    wait_for(
        "the rollout, the scale-down, the drain and the OOM judged neutral",
        TENANT_WAIT,
        || async {
            let m = r.metrics().await;
            let s = |k: &str| aco_testkit::kube::reporter::sample(&m, k);
            (s(&deleted) >= 5.0 && s(&evicted) >= 1.0 && s(&own_oom) >= 1.0).then_some(())
        },
    )
    .await;
    // Every placement acknowledged (3 + 3 rollout + 1 replacement + the OOM pod + 3 fillers;
    // a pod prioritize never scored — one feasible node — is held by its colony for a
    // decision that never comes, not a deposit), no node charged.
    wait_for("all 11 placements acknowledged", TENANT_WAIT, || async {
        (r.metric("aco_reporter_reports_sent_total{kind=\"placements\"}")
            .await
            >= 11.0)
            .then_some(())
    })
    .await;
    assert!(c.env.api.deposits(ns).await >= 8);
    let failures = c.failures(ns).await;
    assert!(
        failures.values().all(|f| *f == 0.0),
        "no node is to blame: {failures:?}"
    );
    let metrics = r.metrics().await;
    assert!(
        !metrics.contains("aco_reporter_pod_ends_total{verdict=\"node_failed\""),
        "no end was charged to a node: {}",
        metrics
            .lines()
            .filter(|l| l.contains("pod_ends"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The shipped RBAC was enough: healthy watches (list+watch), NodeMetrics (list), the Lease.
    for source in ["nodes", "pods", "node_metrics"] {
        assert_eq!(
            r.metric(&format!("aco_reporter_source_healthy{{kind=\"{source}\"}}"))
                .await,
            1.0,
            "{source}"
        );
    }
    let lease: Lease = kube
        .get_as("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/aco-reporter")
        .await
        .unwrap();
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("aco-reporter-0")
    );
    assert!(
        !r.server.log_text().contains("forbidden"),
        "{}",
        r.server.log_tail(30)
    );
    r.server.assert_running();
}

// ---------------------------------------------------------------------------------------------
// 2. Jobs: failing on one node only; a sidecar's exit at the end; slower on one node

#[tokio::test]
async fn jobs_charge_the_node_they_fail_on_and_report_slowdown_of_the_slow_node() {
    let _serial = serial();
    let shapes = openb_cpu_nodes();
    let mut nodes: Vec<Value> = shapes
        .into_iter()
        .take(4)
        .enumerate()
        // The flaky node is the cheapest: without outcomes every pod would go there.
        .map(|(i, n)| kwok_node(label_node(n, if i == 0 { 0.2 } else { 1.0 }, 300, false)))
        .collect();
    for n in &mut nodes {
        set_label(n, "aco-test/role", "worker");
    }
    set_label(&mut nodes[0], "aco-test/role", "flaky");
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let (flaky, slow) = (names[0].clone(), names[1].clone());
    let stages = JobStages {
        failing: vec![flaky.clone()],
        slow: vec![slow.clone()],
        run_ms: 1_000,
        slow_run_ms: 4_000,
    };
    let c = Cluster::start(&nodes, stages, false, &[]).await;
    let mut r = c
        .reporter("aco-reporter-0", None, &["--metrics-source", "none"])
        .await;
    r.wait_nodes_reported(nodes.len(), Duration::from_secs(90))
        .await;
    let kube = c.kube();

    // A Job whose pods fail on the flaky node and succeed elsewhere.
    c.namespace("batch").await;
    kube.post(
        "/apis/batch/v1/namespaces/batch/jobs",
        &job("batch", "etl", 6, 2, "100m", 8, json!({})),
    )
    .await;
    let charged = wait_for(
        "the flaky node charged for the Job's failures",
        Duration::from_secs(240),
        || async {
            let f = c.failures("batch").await;
            (f.get(&flaky).copied().unwrap_or(0.0) >= 2.0).then_some(f)
        },
    )
    .await;
    assert!(
        charged
            .iter()
            .filter(|(n, _)| **n != flaky)
            .all(|(_, f)| *f == 0.0),
        "only the flaky node: {charged:?}"
    );

    // A Job with a native sidecar, one pod per node at a time (each takes 60% of a node's CPU),
    // kept off the flaky node: slower on the slow node.
    c.namespace("train").await;
    let alloc = allocatable_cpu;
    let cpu = format!(
        "{}m",
        (nodes[1..].iter().map(alloc).fold(f64::MAX, f64::min) * 600.0) as u64
    );
    let sidecar = json!({
        "initContainers": [{"name": "log-shipper", "image": "registry.k8s.io/pause:3.10", "restartPolicy": "Always",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "aco-test/role", "operator": "In", "values": ["worker"]}]}]}}}
    });
    kube.post(
        "/apis/batch/v1/namespaces/train/jobs",
        &job("train", "resnet", 15, 3, &cpu, 0, sidecar),
    )
    .await;
    wait_for(
        "the training Job to complete",
        Duration::from_secs(300),
        || async {
            let j: Job = kube
                .get_as("/apis/batch/v1/namespaces/train/jobs/resnet")
                .await
                .ok()?;
            (j.status?.succeeded? >= 15).then_some(())
        },
    )
    .await;
    let pods = kube.typed_pods("train").await;
    let on_slow = pods
        .iter()
        .filter(|p| node_of(p) == Some(slow.as_str()))
        .count();
    let statuses: Vec<_> = pods
        .iter()
        .map(|p| p.status.clone().unwrap_or_default())
        .collect();
    assert!(statuses
        .iter()
        .all(|s| s.phase.as_deref() == Some("Succeeded")));
    let sidecar_exit = |s: &PodStatus| {
        let init = s.init_container_statuses.as_ref()?.first()?;
        Some(init.state.as_ref()?.terminated.as_ref()?.exit_code)
    };
    assert!(
        statuses.iter().all(|s| sidecar_exit(s) == Some(143)),
        "the sidecars exited 143 at the end"
    );
    // The sidecars' 143 is no failure; the slow node's pods carry a slowdown.
    let t = c.failures("train").await;
    assert!(t.values().all(|f| *f == 0.0), "{t:?}");
    let slowdowns: Vec<(String, f64)> = wait_for(
        "slowdowns reported for the slow node",
        TENANT_WAIT,
        || async {
            let log = r.server.log_text();
            let found: Vec<(String, f64)> = log
                .lines()
                .filter(|l| l.contains("run-time slowdown"))
                .filter_map(|l| {
                    let line: SlowdownLine = serde_json::from_str(l).ok()?;
                    Some((line.fields.node, line.fields.slowdown))
                })
                .collect();
            found.iter().any(|(n, _)| *n == slow).then_some(found)
        },
    )
    .await;
    eprintln!("{on_slow} of 15 pods on the slow node; slowdowns: {slowdowns:?}");
    // kwok's timestamps have whole-second resolution and a run on a fast node is ~1 s, so one
    // fast run can read 2× the median under load: the fast nodes are judged by their median,
    // the slow node by every run.
    let mut fast: Vec<f64> = Vec::new();
    for (node, s) in &slowdowns {
        if *node == slow {
            assert!(*s > 2.0, "slow node {node}: {s}");
        } else {
            fast.push(*s);
        }
    }
    fast.sort_by(f64::total_cmp);
    if let Some(median) = fast.get(fast.len() / 2) {
        assert!(
            *median < 1.5,
            "fast nodes' median slowdown {median}: {fast:?}"
        );
    }
    let succeeded = r
        .metric("aco_reporter_pod_ends_total{verdict=\"succeeded\",reason=\"Succeeded\"}")
        .await;
    assert!(succeeded >= 15.0, "succeeded: {succeeded}");
    r.server.assert_running();
}

// ---------------------------------------------------------------------------------------------
// 3. a spot node deleted with its pods

#[tokio::test]
async fn a_spot_node_deleted_under_its_pods_is_reclaimed_and_its_pods_failures_not_charged_to_it() {
    let _serial = serial();
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(2)
        .enumerate()
        .map(|(i, n)| kwok_node(label_node(n, 1.0, 300, i == 0)))
        .collect();
    let spot = name_of(&nodes[0]);
    let c = Cluster::start(&nodes, JobStages::default(), false, &[]).await;
    let mut r = c
        .reporter("aco-reporter-0", None, &["--metrics-source", "none"])
        .await;
    r.wait_nodes_reported(nodes.len(), Duration::from_secs(90))
        .await;
    let kube = c.kube();
    let ns = "spot";
    c.namespace(ns).await;
    // Preferred, not required: both nodes stay feasible, so the extender scores (and remembers)
    // each pod, and kube-scheduler's node affinity score puts it on the spot node.
    let pin = json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [spot]}]}}]}}});
    kube.post(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &deployment(ns, "api", 2, pin),
    )
    .await;
    wait_for("2 pods on the spot node", BIND_TIMEOUT, || async {
        (c.pods_where(ns, |p| node_of(p) == Some(spot.as_str()))
            .await
            .len()
            == 2)
            .then_some(())
    })
    .await;
    c.env.api.wait_deposits(ns, 2, TENANT_WAIT).await;
    assert!(c.env.api.try_node_facts(&spot).await.is_some());

    // The cloud reclaims it: the Node object goes, its pods are still bound (nothing drained).
    let deleted_at = Instant::now();
    kube.delete(&format!("/api/v1/nodes/{spot}")).await.unwrap();
    wait_for(
        "the reclaimed node reported and forgotten",
        TENANT_WAIT,
        || async {
            let reclaimed = r.metric("aco_reporter_reclaimed_nodes_total").await >= 1.0;
            (reclaimed && c.env.api.try_node_facts(&spot).await.is_none()).then_some(())
        },
    )
    .await;
    // PodGC deletes the orphans (after its 40 s quarantine): failed outcomes whose cause is the
    // node gone. The colony counts them; the node's reliability does not learn them — the pool's
    // interruption rate prices a reclamation, and a replacement joins under another name.
    let counters = wait_for(
        "the orphaned pods' failed outcomes counted",
        Duration::from_secs(180),
        || async {
            let t = c.table(ns).await;
            (t.counters.failed_outcomes >= 2).then_some(t.counters)
        },
    )
    .await;
    let f = c.failures(ns).await;
    eprintln!(
        "counted {:?} after the node was deleted: {counters:?}, failures by node {f:?}",
        deleted_at.elapsed()
    );
    assert!(f.values().all(|v| *v == 0.0), "no node charged: {f:?}");
    let gone = r
        .metric("aco_reporter_pod_ends_total{verdict=\"node_failed\",reason=\"DeletionByPodGC\"}")
        .await
        + r.metric("aco_reporter_pod_ends_total{verdict=\"node_failed\",reason=\"NodeGone\"}")
            .await;
    assert!(
        gone >= 2.0,
        "the pods' ends read as their node gone: {gone}"
    );
    r.server.assert_running();
}

// ---------------------------------------------------------------------------------------------
// 4. one leader, fresh facts

#[tokio::test]
async fn a_leader_cut_off_from_the_api_steps_down_and_an_api_outage_freezes_the_facts() {
    let _serial = serial();
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(2)
        .map(|n| kwok_node(label_node(n, 1.0, 300, false)))
        .collect();
    // The facts' TTL just above the reporter's full refresh (20 s): healthy facts stay fresh,
    // frozen ones go stale soon after the outage begins.
    let mut c = Cluster::start(
        &nodes,
        JobStages::default(),
        false,
        &[("FACTS_TTL_MS", &FACTS_TTL_MS.to_string())],
    )
    .await;
    // Replica a reaches the API server through a proxy we can cut; replica b directly. Both
    // reach the Worker.
    let proxy = c.env.cp.start_proxy(
        "api-proxy",
        &aco_testkit::kube::host_port(&c.env.cp.api_url),
        Duration::ZERO,
    );
    let mut a = c
        .reporter(
            "aco-reporter-a",
            Some(&proxy.addr),
            &["--metrics-source", "none"],
        )
        .await;
    wait_for("a leads", Duration::from_secs(60), || async {
        (a.metric("aco_reporter_leader").await == 1.0).then_some(())
    })
    .await;
    let mut b = c
        .reporter("aco-reporter-b", None, &["--metrics-source", "none"])
        .await;
    a.wait_nodes_reported(nodes.len(), Duration::from_secs(60))
        .await;
    wait_for("b synced as standby", Duration::from_secs(60), || async {
        reqwest::get(format!("http://127.0.0.1:{}/readyz", b.ops))
            .await
            .ok()?
            .status()
            .is_success()
            .then_some(())
    })
    .await;
    assert_eq!(b.metric("aco_reporter_leader").await, 0.0);

    proxy.set_mode(aco_testkit::kube::ProxyMode::Refuse).await;
    let cut = Instant::now();
    wait_for("a steps down", Duration::from_secs(15), || async {
        (a.metric("aco_reporter_leader").await == 0.0).then_some(())
    })
    .await;
    let stepped_down = cut.elapsed();
    let sent_then = a
        .metric("aco_reporter_requests_total{kind=\"nodes\"}")
        .await;
    let ticks_then = a.metric("aco_reporter_push_ticks_total").await;
    wait_for("b takes over", Duration::from_secs(30), || async {
        (b.metric("aco_reporter_leader").await == 1.0).then_some(())
    })
    .await;
    let took_over = cut.elapsed();
    eprintln!("cut off: a stepped down after {stepped_down:?}, b led after {took_over:?} (renew deadline 5 s, lease 8 s)");
    assert!(
        stepped_down <= Duration::from_secs(5 + 3),
        "{stepped_down:?}"
    );
    assert!(
        stepped_down < took_over,
        "never two leaders: {stepped_down:?} vs {took_over:?}"
    );
    b.wait_nodes_reported(nodes.len(), Duration::from_secs(30))
        .await;
    // Three more rounds of a's push loop: three chances to push that it must not take.
    wait_for(
        "3 rounds of a's push loop",
        Duration::from_secs(30),
        || async {
            (a.metric("aco_reporter_push_ticks_total").await >= ticks_then + 3.0).then_some(())
        },
    )
    .await;
    assert_eq!(
        a.metric("aco_reporter_requests_total{kind=\"nodes\"}")
            .await,
        sent_then,
        "the cut-off replica pushes nothing once it stepped down"
    );

    // The API server stops: b's watches break; the facts keep the time they were confirmed.
    let node = c.nodes[0].clone();
    // `requested.atMs`: when the reporter says its inputs were observed.
    let observed = |f: &NodeFacts| f.requested.as_ref().map(|r| r.at_ms);
    let before = c.env.api.try_node_facts(&node).await.unwrap();
    eprintln!("facts before the outage: {before:?}");
    c.env.cp.stop_apiserver();
    let stopped = now_ms();
    wait_for(
        "b's readyz names the broken watches",
        Duration::from_secs(60),
        || async {
            let r = reqwest::get(format!("http://127.0.0.1:{}/readyz", b.ops))
                .await
                .ok()?;
            let code = r.status().as_u16();
            let text = r.text().await.ok()?;
            (code == 503 && text.contains("pods")).then_some(())
        },
    )
    .await;
    // The gauge follows at the next push tick.
    wait_for(
        "b's source_healthy{pods} 0",
        Duration::from_secs(30),
        || async {
            (b.metric("aco_reporter_source_healthy{kind=\"pods\"}").await == 0.0).then_some(())
        },
    )
    .await;
    // b cannot renew its Lease either: it steps down too, so nothing stale is pushed as fresh;
    // the Worker's copy ages past FACTS_TTL_MS from the frozen observation time. Once b has
    // stepped down nothing more reaches the Worker: its copy is the last b pushed.
    wait_for(
        "b steps down while the API server is gone",
        Duration::from_secs(30),
        || async { (b.metric("aco_reporter_leader").await == 0.0).then_some(()) },
    )
    .await;
    let during = c.env.api.try_node_facts(&node).await.unwrap();
    eprintln!("facts during the outage: {during:?}");
    let t = observed(&during).expect("requested.atMs");
    assert!(
        t <= stopped + 1_000,
        "observation time {t} after the stop {stopped}"
    );
    assert!(observed(&before).is_some_and(|b| b <= t));
    // While b still led with broken watches it said so: the facts' age at its last push.
    let age = b.metric("aco_reporter_facts_age_seconds").await;
    eprintln!("b's facts age when it stepped down: {age} s");
    assert!(age > 0.0, "{age}");
    // The Worker judges the facts by that frozen time: a filter ignores them as stale (fails
    // open) once FACTS_TTL_MS has passed since the last confirmation, not later.
    let probe = edit_pod(pod("ops", "probe", PodOpts::default()), |p| {
        p.metadata.uid = Some("probe-uid".into())
    });
    let stale = "aco_stale_node_facts_total{verb=\"filter\"}";
    wait_for(
        "the Worker ignores the frozen facts as stale",
        Duration::from_millis(FACTS_TTL_MS + 30_000),
        || async {
            c.env.api.filter(&probe, std::slice::from_ref(&node)).await;
            let m = c.env.api.metrics().await;
            (aco_testkit::kube::reporter::sample(&m, stale) >= 1.0).then_some(())
        },
    )
    .await;
    let judged_stale = now_ms();
    eprintln!(
        "stale at the Worker {} ms after the last confirmation, {} ms after the stop (TTL {FACTS_TTL_MS} ms)",
        judged_stale - t,
        judged_stale - stopped
    );
    assert!(judged_stale >= t + FACTS_TTL_MS, "stale too early");
    assert!(
        judged_stale <= stopped + FACTS_TTL_MS + 10_000,
        "stale too late: {} ms after the stop",
        judged_stale - stopped
    );
    c.env.cp.start_apiserver_again().await;
    wait_for("b healthy again", Duration::from_secs(90), || async {
        (b.metric("aco_reporter_source_healthy{kind=\"pods\"}").await == 1.0
            && b.metric("aco_reporter_facts_age_seconds").await < 3.0)
            .then_some(())
    })
    .await;
    b.server.assert_running();
}

// ---------------------------------------------------------------------------------------------
// 5. a misconfigured Worker URL

#[tokio::test]
async fn a_worker_url_ending_in_v1_is_refused_at_start() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(aco_testkit::kube::reporter::reporter_bin(false))
        .env("ACO_WORKER_URL", "https://aco.example.workers.dev/v1")
        .env("ACO_ADMIN_TOKEN", "t")
        .env("KUBECONFIG", dir.path().join("none"))
        .args(["--log-format", "text"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("ACO_WORKER_URL") && text.contains("/v1"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Prometheus (DCGM GPU series) as the load source, OpenCost prices

/// Serves `text` at `/metrics` (any path) until dropped: an exporter with dcgm-exporter's and
/// OpenCost's series names and labels.
async fn exporter(text: String) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                break;
            };
            let text = text.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), task)
}

#[tokio::test]
async fn prometheus_dcgm_series_are_the_gpu_load_and_opencost_the_price() {
    let _serial = serial();
    let nodes: Vec<Value> = pick_gpu_nodes(&["T4", "T4"])
        .into_iter()
        .map(|n| kwok_node(label_node(n, 1.0, 300, false)))
        .collect();
    let (busy, idle) = (name_of(&nodes[0]), name_of(&nodes[1]));
    let c = Cluster::start(&nodes, JobStages::default(), false, &[]).await;
    let series = format!(
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n\
DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"Tesla T4\",Hostname=\"{busy}\"}} 90\n\
DCGM_FI_DEV_GPU_UTIL{{gpu=\"1\",UUID=\"GPU-b\",device=\"nvidia1\",modelName=\"Tesla T4\",Hostname=\"{busy}\"}} 70\n\
DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\",UUID=\"GPU-c\",device=\"nvidia0\",modelName=\"Tesla T4\",Hostname=\"{idle}\"}} 10\n\
# TYPE DCGM_FI_DEV_FB_USED gauge\n\
DCGM_FI_DEV_FB_USED{{gpu=\"0\",UUID=\"GPU-a\",modelName=\"Tesla T4\",Hostname=\"{busy}\"}} 1000\n\
DCGM_FI_DEV_FB_USED{{gpu=\"0\",UUID=\"GPU-c\",modelName=\"Tesla T4\",Hostname=\"{idle}\"}} 500\n\
# TYPE DCGM_FI_DEV_FB_FREE gauge\n\
DCGM_FI_DEV_FB_FREE{{gpu=\"0\",UUID=\"GPU-a\",modelName=\"Tesla T4\",Hostname=\"{busy}\"}} 15000\n\
DCGM_FI_DEV_FB_FREE{{gpu=\"0\",UUID=\"GPU-c\",modelName=\"Tesla T4\",Hostname=\"{idle}\"}} 15500\n\
# TYPE node_total_hourly_cost gauge\n\
node_total_hourly_cost{{node=\"{busy}\",instance_type=\"g4dn.12xlarge\",region=\"eu-west-1\"}} 2.5\n\
node_total_hourly_cost{{node=\"{idle}\",instance_type=\"g4dn.xlarge\",region=\"eu-west-1\"}} 0.75\n"
    );
    let (url, _server) = exporter(series).await;
    let prometheus =
        aco_testkit::prometheus::Prometheus::start(&[aco_testkit::prometheus::ScrapeJob::new(
            "dcgm", &url,
        )]);
    wait_for(
        "Prometheus to scrape the exporter",
        Duration::from_secs(60),
        || async {
            let r = prometheus.query("DCGM_FI_DEV_GPU_UTIL").await.ok()?;
            (r.len() == 3).then_some(())
        },
    )
    .await;
    // No node-exporter here: CPU and memory queries off, GPU utilisation and memory on.
    let mut r = c
        .reporter(
            "aco-reporter-0",
            None,
            &[
                "--metrics-source",
                "prometheus",
                "--prometheus-url",
                &prometheus.base_url,
                "--prometheus-window",
                "1m",
                "--promql-cpu",
                "",
                "--promql-memory",
                "",
                "--prices-from-opencost",
            ],
        )
        .await;
    r.wait_nodes_reported(nodes.len(), Duration::from_secs(90))
        .await;
    let facts = |name: String| {
        let api = &c.env.api;
        async move {
            let f = api.try_node_facts(&name).await?;
            let level = f.load?.value.level?;
            let price = f.labels.get("aco/cost-per-hour")?.clone();
            Some((level, price))
        }
    };
    let (busy_load, busy_price) =
        wait_for("the busy node's GPU load and price", TENANT_WAIT, || {
            facts(busy.clone())
        })
        .await;
    let (idle_load, idle_price) =
        wait_for("the idle node's GPU load and price", TENANT_WAIT, || {
            facts(idle.clone())
        })
        .await;
    eprintln!(
        "{busy}: load {busy_load} price {busy_price}; {idle}: load {idle_load} price {idle_price}"
    );
    // Busy: mean of 90 % and 70 % = 0.8 (memory 1000/16000 is less); idle: 0.1.
    assert!((busy_load - 0.8).abs() < 1e-9, "{busy_load}");
    assert!((idle_load - 0.1).abs() < 1e-9, "{idle_load}");
    assert_eq!(
        (busy_price.as_str(), idle_price.as_str()),
        ("2.5", "0.75"),
        "OpenCost's, not the 1.0 label"
    );
    assert_eq!(
        r.metric("aco_reporter_source_healthy{kind=\"node_metrics\"}")
            .await,
        1.0
    );
    r.server.assert_running();
}
