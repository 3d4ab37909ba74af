//! The closed loop of the reporter suites (`tests/e2e_reporter_*.rs`): control plane, kwok,
//! metrics-server, the Worker, kube-scheduler in names mode, and `aco-reporter` replicas started
//! on demand; and the pods those suites create.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::api::WorkerHttp;
use crate::extender::FilterResult;
use crate::kube::fixtures::*;
use aco_core::api::pheromones::PheromoneTableReply;

use crate::kube::kwok::USAGE_CPU;
use crate::kube::reporter::Reporter;
use crate::kube::Server;
use crate::nodes::name_of;
use crate::pods::{edit_pod, edit_spec};
use serde_json::{json, Value};

/// How long a reporter suite waits for a pod to be bound.
pub const BIND_TIMEOUT: Duration = Duration::from_secs(90);

/// The closed loop: control plane, kwok, metrics-server, the Worker, kube-scheduler in names
/// mode, and reporters started on demand.
pub struct Loop {
    pub env: Env,
    _kwok: Server,
    _metrics_server: Option<Server>,
    _scheduler: Server,
    /// The Worker URL the reporters use (a proxy in the fault test).
    pub reporter_worker_url: String,
}

impl Loop {
    pub async fn start(nodes: &[Value], with_metrics: bool) -> Loop {
        let env = Env::start().await;
        let kwok = env.cp.start_kwok().await;
        let metrics_server = if with_metrics {
            Some(env.cp.start_metrics_server().await)
        } else {
            None
        };
        create_kwok_nodes(env.kube(), nodes).await;
        let names: Vec<String> = nodes.iter().map(name_of).collect();
        wait_nodes_ready(env.kube(), &names, Duration::from_secs(60), false).await;
        let scheduler = env
            .cp
            .start_scheduler("scheduler", &env.worker_config(true))
            .await;
        let reporter_worker_url = env.api.base.clone();
        Loop {
            env,
            _kwok: kwok,
            _metrics_server: metrics_server,
            _scheduler: scheduler,
            reporter_worker_url,
        }
    }

    pub fn start_reporter(&self, name: &str, extra: &[&str]) -> Reporter {
        Reporter::start(&self.env.cp, &self.reporter_worker_url, name, extra, false)
    }

    pub fn kube(&self) -> &crate::kube::Kube {
        self.env.kube()
    }

    pub async fn wait_nodes_reported(&self, reporter: &mut Reporter, n: usize) {
        reporter
            .wait_nodes_reported(n, Duration::from_secs(60))
            .await;
    }

    // Colony reads go through the shared fixtures (`WorkerApi`), as in the kube-scheduler suite.
    pub async fn table(&self, tenant: &str) -> PheromoneTableReply {
        self.env.api.pheromone_table(tenant).await
    }

    pub async fn deposits(&self, tenant: &str) -> u64 {
        self.env.api.deposits(tenant).await
    }

    pub async fn wait_deposits(&self, tenant: &str, n: u64, timeout: Duration) {
        self.env.api.wait_deposits(tenant, n, timeout).await
    }

    /// The Worker's prioritize scores for a pod over node names (what kube-scheduler would get).
    pub async fn scores(&self, pod: &Value, nodes: &[String]) -> BTreeMap<String, i64> {
        let body = json!({"Pod": pod, "NodeNames": nodes});
        let r = self.env.api.prioritize_args(body.to_string()).await;
        r.into_iter().map(|h| (h.host, h.score)).collect()
    }

    /// The Worker's filter answer for a pod over node names.
    pub async fn filter(&self, pod: &Value, nodes: &[String]) -> FilterResult {
        self.env.api.filter(pod, nodes).await
    }
}

/// The pod with this UID.
pub fn with_uid(pod: Value, uid: &str) -> Value {
    edit_pod(pod, |p| p.metadata.uid = Some(uid.into()))
}

/// A pod bound directly to `node` (no scheduler involved): load that is not ours to report.
pub fn bound_elsewhere(ns: &str, name: &str, node: &str, cpu: &str, usage_cpu: &str) -> Value {
    let p = pod(
        ns,
        name,
        PodOpts {
            cpu,
            memory: "64Mi",
            annotations: vec![(USAGE_CPU, usage_cpu.into())],
            ..Default::default()
        },
    );
    edit_spec(p, |spec| {
        spec.scheduler_name = Some("default-scheduler".into());
        spec.node_name = Some(node.into());
    })
}

/// A latency-critical pod of 500m (with a latency target when given).
pub fn latency_critical(ns: &str, name: &str, target_us: Option<u32>) -> Value {
    let mut annotations = vec![];
    if let Some(t) = target_us {
        annotations.push(("scheduling.aco/latency-target-us", t.to_string()));
    }
    pod(
        ns,
        name,
        PodOpts {
            cpu: "500m",
            memory: "256Mi",
            labels: vec![("aco/workload-type", "latency-critical".into())],
            annotations,
            ..Default::default()
        },
    )
}
