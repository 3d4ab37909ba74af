//! aco-edge-extender: a Kubernetes scheduler extender as a Cloudflare Worker.
//!
//! This crate is the only one that knows HTTP, bindings and JSON transport. The decisions
//! themselves live in the pure `aco-core` crate. Request flow:
//!
//! ```text
//! fetch ─▶ routes::dispatch ─▶ routes/<verb>.rs ─▶ aco_core::pipeline (pure; per isolate and cluster: pipeline.rs)
//!                                 │                  ├─ facts::client (isolate copy) ─▶ facts::Facts (one DO per cluster)
//!                                 │                  ├─ colony::client ─▶ colony::Colony (one DO per cluster × tenant)
//!                                 │                  └─ registry::client ─▶ registry::Registry (one DO: which clusters and colonies exist)
//!                                 └─ telemetry::record (waitUntil) ─▶ telemetry::Telemetry
//! ```

// Request paths must not panic (a panic aborts the isolate / stops delivery): no unwrap or
// expect outside tests. Tests may.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod auth;
mod bindings;
mod clock;
mod colony;
mod env_config;
mod facts;
mod http;
mod isolate;
mod log;
mod object_call;
mod pipeline;
mod pod_index;
mod registry;
mod routes;
mod sql_transaction;
mod telemetry;

pub use colony::Colony;
pub use facts::Facts;
pub use registry::Registry;
pub use telemetry::Telemetry;

use worker::{event, Context, Env, Request, Response, Result};

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    console_error_panic_hook::set_once();
    Ok(routes::dispatch(req, env, ctx).await)
}
