//! A real Kubernetes control plane for the end-to-end tests: etcd, kube-apiserver and
//! kube-scheduler built by `scripts/build-kube` (pinned in `scripts/kube/go.mod`), plus
//! `aco-netem-proxy` (delay / failure injection between kube-scheduler and the Worker).
//!
//! Every server binds 127.0.0.1 on a free port, runs in its own process group under
//! `scripts/kube/run-bound` (which stops the group when the test process goes away, even on
//! SIGKILL) and is stopped by process-group id on drop, also while a failing test unwinds.
//! The flags mirror `scripts/kube-up`; keep them in step.
//!
//! [`kwok`] adds fake kubelets (kwok) and metrics-server behind the aggregation layer.
//!
//! The kube-scheduler configuration is `k8s/scheduler-config.yaml` — the file the shipped
//! ConfigMap is generated from — with only the local differences applied
//! ([`SchedulerConfig::render`]).
//!
//! One file per concern: [`server`] (a server's process group and log, polling helpers),
//! [`base64`], [`pki`], [`control_plane`], [`proxy`], [`scheduler_config`], [`api`] (the Kubernetes API
//! client), [`fixtures`] (the Worker over HTTPS beside the control plane, OpenB nodes, pods),
//! [`install`], [`kwok`], [`reporter`], [`aco_scheduler`] (kube-scheduler with our device
//! accounting and FGD plugins), [`replay`] (one configuration of the real-kube trace replay),
//! [`churn`] (one configuration of its churned segment: arrivals and departures in compressed
//! trace time) and [`replay_configs`] (their kube-scheduler configurations by name); the cluster a
//! family of e2e files shares: [`controllers`] (kube-controller-manager and the installed
//! reporter), [`reporter_loop`] (the reporter's closed loop), [`gpu_devices`] (GPU pods and node
//! state as AcoGpuDevices and FGD read them); and [`serial`].

pub mod aco_scheduler;
pub mod api;
pub mod base64;
pub mod churn;
pub mod control_plane;
pub mod controllers;
pub mod fixtures;
pub mod gpu_devices;
pub mod install;
pub mod kwok;
pub mod pki;
pub mod proxy;
pub mod replay;
pub mod replay_configs;
pub mod reporter;
pub mod reporter_loop;
pub mod scheduler_config;
pub mod server;

pub use api::Kube;
pub use control_plane::{kube_bin, ControlPlane, ControlPlaneOptions};
pub use pki::Pki;
pub use proxy::{host_port, Proxy, ProxyMode};
pub use scheduler_config::{Extender, SchedulerConfig};
pub use server::{wait_for, wait_ready, Server};

pub const SCHEDULER_NAME: &str = "aco-scheduler";

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Held for a whole test, across awaits, on purpose: each test of a kube suite starts its own
/// control plane, and the machine's cores are too few for two at once (scheduling outcomes must
/// not depend on CPU contention). A test that panicked while holding it does not poison it.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A Kubernetes object built or rendered as JSON, read as its k8s-openapi type (`Pod`, `Node`,
/// `StatefulSet`, …), failing with the object if it is not one.
pub fn typed<T: serde::de::DeserializeOwned>(object: &serde_json::Value) -> T {
    serde_json::from_value(object.clone())
        .unwrap_or_else(|e| panic!("not a {}: {e}: {object}", std::any::type_name::<T>()))
}

pub(crate) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}
