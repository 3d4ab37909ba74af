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

/// The admin bearer token of `wrangler.toml`'s development `[vars]`.
pub const ADMIN_TOKEN: &str = "dev-admin-token";

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
