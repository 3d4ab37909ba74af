//! The cluster of the controller suites (`tests/e2e_controllers_*.rs`): RBAC and
//! kube-controller-manager (Deployments, ReplicaSets, Jobs, PodGC, the node lifecycle and taint
//! eviction controllers, service accounts), kwok, the Worker, the second scheduler, and the
//! reporter's install applied from `k8s/` (`install.rs`), whose replicas run with its
//! ServiceAccount's token; and the workloads and pod reads those suites share.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::api::WorkerHttp;
use crate::k8s_openapi::api::core::v1::{Pod, Secret};
use crate::kube::fixtures::*;
use crate::pods::node_of;
use aco_core::api::pheromones::PheromoneTableReply;

use crate::nodes::{allocatable_of, name_of};

use crate::kube::kwok::JobStages;
use crate::kube::reporter::Reporter;
use crate::kube::{install, ControlPlaneOptions, Server, SCHEDULER_NAME};
use crate::ADMIN_TOKEN;
use serde_json::{json, Value};

/// How long a controller suite waits for a pod to be bound.
pub const BIND_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a controller suite waits for what the reporter sends to reach a tenant's colony.
pub const TENANT_WAIT: Duration = Duration::from_secs(90);

/// Test speeds on top of the installed Deployment's settings.
pub const SPEEDS: &[&[&str]] = &[
    super::reporter::LOOP_SPEEDS,
    &[
        "--lease-duration",
        "8s",
        "--lease-grace",
        "5s",
        "--renew-deadline",
        "5s",
    ],
];

/// The cluster: RBAC + controllers, kwok, the Worker, the second scheduler, the install applied.
pub struct Cluster {
    // Fields drop in order: the servers stop (printing their log tails when a test fails)
    // before `env` removes the directory that holds their logs.
    _scheduler: Server,
    _metrics_server: Option<Server>,
    _kwok: Server,
    objects: Vec<Value>,
    token_file: PathBuf,
    /// The nodes' names, as created.
    pub nodes: Vec<String>,
    pub env: Env,
}

impl Cluster {
    pub async fn start(
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
        // Ready, and the node lifecycle controller has lifted the not-ready taint.
        wait_nodes_ready(&kube, &names, Duration::from_secs(90), true).await;
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

    pub fn kube(&self) -> &crate::kube::Kube {
        self.env.kube()
    }

    /// A reporter replica as the installed Deployment runs it, with its ServiceAccount's token,
    /// reaching the API server at `api` (a proxy in the leader test) .
    pub async fn reporter(&self, pod_name: &str, api: Option<&str>, extra: &[&str]) -> Reporter {
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
        let flags = [SPEEDS.concat().as_slice(), extra].concat();
        Reporter::start_installed(&self.env.cp, &kubeconfig, pod_name, &env, &args, &flags)
    }

    pub async fn table(&self, tenant: &str) -> PheromoneTableReply {
        self.env.api.pheromone_table(tenant).await
    }

    /// Failures the tenant's colony has recorded per node. The stored counts fade with
    /// OUTCOME_HALF_LIFE_MS (1 h): a test's minutes fade an outcome by far less than half of one,
    /// so the rounded count is the number of failed outcomes recorded.
    pub async fn failures(&self, tenant: &str) -> BTreeMap<String, f64> {
        let t = self.table(tenant).await;
        t.nodes
            .into_iter()
            .map(|e| (e.node, e.failures.round()))
            .collect()
    }

    pub async fn namespace(&self, ns: &str) {
        self.kube().create_namespace(ns).await;
        self.kube().wait_service_account(ns, "default").await;
    }

    pub async fn pods_where(&self, ns: &str, pred: impl Fn(&Pod) -> bool) -> Vec<Pod> {
        self.kube()
            .typed_pods(ns)
            .await
            .into_iter()
            .filter(|p| pred(p))
            .collect()
    }
}

/// A node's allocatable CPU cores (as built).
pub fn allocatable_cpu(n: &Value) -> f64 {
    crate::kube::kwok::quantity(&allocatable_of(n, "cpu").expect("allocatable cpu")).unwrap()
}

/// A pod template of one pause container asking `cpu`, for the second scheduler.
pub fn template(
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

/// A Deployment of `replicas` pods of [`template`], rolling one at a time.
pub fn deployment(ns: &str, name: &str, replicas: u32, extra_spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
                 "template": template(json!({"app": name}), json!({}), "100m", "Always", extra_spec)}})
}

/// Whether the pod is bound to a node.
pub fn bound(p: &Pod) -> bool {
    node_of(p).is_some_and(|n| !n.is_empty())
}

/// The pod's name.
pub fn pod_name(p: &Pod) -> String {
    p.metadata.name.clone().expect("a pod name")
}
