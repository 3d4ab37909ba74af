//! The test kit of aco-edge-extender (a dev-dependency of the Worker's integration tests and
//! benches, and of the core's bench): one place for what they share.
//!
//! - [`worker`]: the built Worker (`build/`, from `bash scripts/build-worker`) on Miniflare
//!   ([`WorkerProcess`], [`StartOptions`]); [`api`]: its HTTP client ([`api::Api`]).
//! - [`workerd`]: the same bundle on workerd alone, with the self-hosted install's config
//!   (`k8s/self-hosted/workerd.capnp`; [`workerd::WorkerdProcess`]).
//! - [`prometheus`]: a real Prometheus scraping given targets.
//! - [`kube`]: a real Kubernetes control plane (etcd, kube-apiserver, kube-scheduler, kwok,
//!   metrics-server, the reporter), one file per concern.
//! - [`process`]: the process-group handling every launcher uses; [`state`]: the Worker's
//!   Durable Object SQLite files on disk.
//! - [`extender`]: the extender verbs' replies, typed and strict about their keys.
//! - [`nodes`]: small reads and edits of node JSON.
//! - [`pods`]: the v1.Pod envelope of both pod builders.
//! - [`fixtures`]: real-shaped extender requests (OpenB nodes replicated to any count);
//!   [`openb`]: the OpenB trace's nodes as v1.Node objects.
//! - [`observability`]: the shipped alert rules and Grafana dashboard, read.
//! - [`quoted`]: the figures the docs quote, printed beside a bench's measured ones;
//!   [`colony_load`], [`facts_api`]: the load those benches and their tests drive.
//!
//! Without the default `launchers` feature only [`fixtures`], [`openb`], [`observability`] and
//! the small readers beside them are built.

#[cfg(feature = "launchers")]
pub mod api;
#[cfg(feature = "launchers")]
pub mod colony_load;
pub mod extender;
#[cfg(feature = "launchers")]
pub mod facts_api;
pub mod fixtures;
#[cfg(feature = "launchers")]
pub mod kube;
pub mod nodes;
pub mod observability;
pub mod openb;
#[cfg(feature = "launchers")]
pub mod pods;
#[cfg(feature = "launchers")]
pub mod process;
#[cfg(feature = "launchers")]
pub mod prometheus;
pub mod quoted;
pub mod state;
#[cfg(feature = "launchers")]
pub mod worker;
#[cfg(feature = "launchers")]
pub mod workerd;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// The Kubernetes object types the kube suites read back (the reporter's pin of k8s-openapi).
#[cfg(feature = "launchers")]
pub use k8s_openapi;
#[cfg(feature = "launchers")]
pub use worker::{StartOptions, WorkerProcess};

/// The path under which a Worker serves its extender verbs: `/t/<token>/v1` under
/// `EXTENDER_AUTH=path-token` (the first of `EXTENDER_TOKENS`), else `/v1`.
pub fn verb_root(auth: Option<&str>, tokens: Option<&str>) -> String {
    match (auth, tokens) {
        (Some("path-token"), Some(tokens)) => {
            let first = tokens.split(',').next().unwrap_or_default().trim();
            format!("/t/{first}/v1")
        }
        _ => "/v1".into(),
    }
}

/// The admin bearer token every test Worker gets as its `ADMIN_TOKEN` secret
/// ([`StartOptions::default`]; `wrangler.toml` ships none). Long and not a well-known value: the
/// Worker refuses admin calls under a token shorter than 32 bytes or a known default.
pub const ADMIN_TOKEN: &str = "aco-test-admin-token-5f0c8e1d9a7b4c3e2f6a";
/// The scrape credential every test Worker gets as its `METRICS_TOKEN` secret: `GET /metrics`
/// needs `Authorization: Bearer` with it.
pub const METRICS_TOKEN: &str = "aco-test-metrics-token-8b2d4f6e1a3c5e7f9d0b";
/// The extender verbs' path token (`EXTENDER_TOKENS`) of the kube suites' Workers, which run
/// with `EXTENDER_AUTH=path-token` as production does: kube-scheduler's urlPrefix is
/// `https://<host>/t/<EXTENDER_TOKEN>/v1` ([`kube::fixtures::worker_options`]).
pub const EXTENDER_TOKEN: &str = "aco-test-extender-token-3e9f1b7d5c2a4e6f8a0c";

/// The repository's root (this crate is `crates/testkit`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .canonicalize()
        .expect("the repository root exists")
}

/// Wall-clock time in unix milliseconds (what the reporter stamps its observations with).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}
