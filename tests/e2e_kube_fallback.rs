//! End-to-end with kube-scheduler: fallback. Worker unreachable / HTTP 500 / hanging / stopped →
//! pods still schedule; back up → the Worker decides again.
//!
//! A real kube-scheduler (built from k8s.io/kubernetes by `scripts/build-kube`) schedules pods
//! through the Worker (Miniflare, HTTPS with a private CA) using the shipped
//! `k8s/scheduler-config.yaml`. Nodes are Node objects from the OpenB trace
//! (`../shared/data/openb/`) with `status.allocatable` patched in (no kubelet) plus the labels the
//! Worker reads. The real `aco-reporter` binary runs beside them (`Env::start_with_reporter`):
//! node facts and placements reach the Worker only from it, never from test code. Run with
//! `scripts/e2e` (builds the control plane and the Worker first).

#![allow(clippy::await_holding_lock)]

use std::collections::HashMap;
use std::time::Duration;

use aco_testkit::api::WorkerApi;

use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::name_of;

use aco_testkit::kube::serial;
use aco_testkit::kube::{host_port, ProxyMode};
use serde_json::Value;

const BIND_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// 5: fallback (ignorable extender)

#[tokio::test]
async fn pods_schedule_when_worker_is_down_erroring_or_slow() {
    let _serial = serial();
    let mut env = Env::start_with_reporter().await;
    let nodes = constraint_nodes();
    env.add_nodes(&nodes).await;
    let by_name: HashMap<String, Value> = nodes.iter().map(|n| (name_of(n), n.clone())).collect();
    let ns = "fallback";
    env.kube().create_namespace(ns).await;

    // kube-scheduler → aco-netem-proxy → Worker; the proxy injects the failures.
    let proxy = env
        .cp
        .start_proxy("proxy", &host_port(&env.api.base), Duration::ZERO);
    // Two verbs: the Worker's filter is what refuses the A100 pod while it is up (the one-verb
    // install keeps that constraint without the Worker: tests/e2e_onehop.rs).
    let mut config = env.worker_config_filter(false);
    if let aco_testkit::kube::Extender::Worker { url_prefix, .. } = &mut config.extender {
        // The same path (with its token), through the proxy.
        *url_prefix = url_prefix.replace(&env.api.base, &format!("https://{}", proxy.addr));
    }
    let mut sched = env.cp.start_scheduler("scheduler", &config).await;
    // A pod only the Worker would refuse: no node has an A100.
    let a100 = |name: &str| {
        pod(
            ns,
            name,
            PodOpts {
                gpus: 1,
                annotations: vec![("scheduling.aco/gpu-models", "A100".into())],
                ..Default::default()
            },
        )
    };

    // Through the Worker: refused.
    env.kube().create_pod(&a100("via-worker")).await;
    let msg = env
        .kube()
        .wait_unschedulable(ns, "via-worker", BIND_TIMEOUT)
        .await;
    assert!(msg.to_lowercase().contains("a100"), "{msg}");
    env.kube()
        .delete(&format!("/api/v1/namespaces/{ns}/pods/via-worker"))
        .await
        .unwrap();

    // Unreachable, HTTP 500, hanging (httpTimeout 1s): kube-scheduler goes on without it.
    for (mode, name) in [
        (ProxyMode::Refuse, "refused"),
        (ProxyMode::Error, "http-500"),
        (ProxyMode::Blackhole, "hanging"),
    ] {
        proxy.set_mode(mode).await;
        env.kube().create_pod(&a100(name)).await;
        let node = env.kube().wait_bound(ns, name, BIND_TIMEOUT).await;
        eprintln!("{mode:?}: {name} bound to {node} without the Worker");
    }

    // The Worker process stopped.
    proxy.set_mode(ProxyMode::Pass).await;
    drop(env.worker.take());
    env.kube().create_pod(&a100("worker-stopped")).await;
    let node = env
        .kube()
        .wait_bound(ns, "worker-stopped", BIND_TIMEOUT)
        .await;
    eprintln!("Worker stopped: bound to {node}");

    // Back (same state dir, new port): scheduling goes through it again.
    let worker = start_worker(&env.cp, &env.worker_state);
    env.api = WorkerApi::new(&worker, &env.cp.pki.ca_pem());
    env.worker = Some(worker);
    proxy.set_upstream(&host_port(&env.api.base)).await;
    env.kube().create_pod(&a100("worker-back")).await;
    let msg = env
        .kube()
        .wait_unschedulable(ns, "worker-back", BIND_TIMEOUT)
        .await;
    assert!(msg.to_lowercase().contains("a100"), "{msg}");
    env.kube()
        .create_pod(&pod(
            ns,
            "v100-back",
            PodOpts {
                gpus: 1,
                annotations: vec![("scheduling.aco/gpu-models", "V100M16|V100M32".into())],
                ..Default::default()
            },
        ))
        .await;
    let node = env.kube().wait_bound(ns, "v100-back", BIND_TIMEOUT).await;
    assert!(
        label(&by_name[&node], "aco/gpu-type").starts_with("V100"),
        "v100-back on {node}"
    );
    sched.assert_running();
}
