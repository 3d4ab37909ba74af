//! The test kit of aco-edge-extender (a dev-dependency of the Worker's integration tests and
//! benches, and of the core's bench): one place for what they share.
//!
//! - [`worker`]: the built Worker (`build/`, from `bash scripts/build-worker`) on Miniflare
//!   ([`WorkerProcess`], [`StartOptions`]); [`api`]: its HTTP client ([`api::Api`]).
//! - [`prometheus`]: a real Prometheus scraping given targets.
//! - [`kube`]: a real Kubernetes control plane (etcd, kube-apiserver, kube-scheduler, kwok,
//!   metrics-server, the reporter), one file per concern.
//! - [`process`]: the process-group handling every launcher uses; [`state`]: the Worker's
//!   Durable Object SQLite files on disk.
//! - [`nodes`]: small reads and edits of node JSON.
//! - [`pods`]: the v1.Pod envelope of both pod builders.
//! - [`fixtures`]: real-shaped extender requests (OpenB nodes replicated to any count);
//!   [`openb`]: the OpenB trace's nodes as v1.Node objects.
//!
//! Without the default `launchers` feature only [`fixtures`] and [`openb`] are built.

#[cfg(feature = "launchers")]
pub mod api;
pub mod fixtures;
#[cfg(feature = "launchers")]
pub mod kube;
pub mod nodes;
pub mod openb;
#[cfg(feature = "launchers")]
pub mod pods;
#[cfg(feature = "launchers")]
pub mod process;
#[cfg(feature = "launchers")]
pub mod prometheus;
pub mod state;
#[cfg(feature = "launchers")]
pub mod worker;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

#[cfg(feature = "launchers")]
pub use worker::{trail_on, StartOptions, WorkerProcess};

/// The admin bearer token the test kit gives every Worker it starts (as a deployment sets the
/// `ADMIN_TOKEN` secret).
pub const ADMIN_TOKEN: &str = "test-admin-3f9a1c7e5b2d4086a1e9c3f7b5d20468";
/// The scrape token the test kit gives every Worker it starts (`METRICS_TOKEN`).
pub const METRICS_TOKEN: &str = "test-metrics-8d2b6f0a4c9e1735b8d0f2a6c4e91357";

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
