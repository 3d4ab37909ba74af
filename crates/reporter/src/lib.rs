//! `aco-reporter`: the in-cluster half of aco-edge-extender. It watches Nodes and Pods (kube-rs
//! reflectors), reads NodeMetrics, and tells the Worker three things: node facts
//! (`PUT /v1/nodes`), confirmed placements and, later, their outcomes (`POST /v1/placements`);
//! in shadow mode also pods bound by other schedulers, with the pod (`POST /v1/shadow`).
//!
//! The pure parts — what a node's facts are, what changed, what a pod's fate is, which pods to
//! report, the delivery queue and its backoff — take their inputs (objects, the time, random
//! numbers) as arguments and are tested natively. Only `node_metrics`,
//! `worker_client`, `leader`, `ops_server`, `webhook_server` and `run` do I/O; only they know the Kubernetes API
//! or HTTP.

// Request paths must not panic (a panic aborts the isolate / stops delivery): no unwrap or
// expect outside tests. Tests may.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod admission;
pub mod affinity;
pub mod attribution;
pub mod cache;
pub mod changes;
pub mod config;
pub mod config_check;
pub mod delivery;
pub mod freshness;
pub mod gpu_share;
pub mod intern;
pub mod leader;
pub mod node_facts;
pub mod node_metrics;
pub mod node_record;
pub mod ops_server;
pub mod outcome;
pub mod placements;
pub mod pod_record;
pub mod prometheus;
pub mod reclaim;
pub mod run;
pub mod telemetry;
pub mod time;
pub mod webhook_server;
pub mod worker_client;

// The Kubernetes crates at the versions the reporter is built with, for the scale benchmark
// (`benches/reporter_scale.rs`), which measures the reporter's own cache code.
pub use k8s_openapi;
pub use kube;
