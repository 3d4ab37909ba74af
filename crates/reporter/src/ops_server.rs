//! `/metrics`, `/livez`, `/readyz` for the kubelet and Prometheus.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::freshness::Freshness;
use crate::telemetry::Telemetry;

#[derive(Clone)]
pub struct OpsState {
    pub telemetry: Arc<Telemetry>,
    /// Both caches (Nodes, Pods) have synced.
    pub ready: Arc<AtomicBool>,
    /// Health of the watches and the NodeMetrics poll.
    pub freshness: Arc<Freshness>,
    /// Whether NodeMetrics are read at all.
    pub with_metrics: bool,
    /// Set once the admission webhook serves; `None` when it is off.
    pub webhook_serving: Option<Arc<AtomicBool>>,
}

async fn metrics(State(s): State<OpsState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.telemetry.render(),
    )
}

/// Ready when the caches have synced and every input is healthy: a broken watch or failing
/// NodeMetrics poll makes the replica unready (and names the source).
async fn readyz(State(s): State<OpsState>) -> impl IntoResponse {
    if !s.ready.load(Ordering::Relaxed) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "caches not synced".to_string(),
        );
    }
    let broken = s.freshness.broken(s.with_metrics);
    if broken.is_empty() {
        (StatusCode::OK, "ok".to_string())
    } else {
        let names: Vec<&str> = broken.iter().map(|b| b.as_str()).collect();
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("broken: {}", names.join(", ")),
        )
    }
}

/// The pod's readiness probe (`k8s/reporter.yaml`): the caches have synced and, with the
/// admission webhook on, it serves. Not the inputs' health, unlike `/readyz`: the webhook
/// Service sends admission reviews to ready replicas only, and pod creation (the webhook's
/// `failurePolicy: Fail`) must not stop because metrics-server or a watch is failing — those show
/// in `/readyz`, `aco_reporter_source_healthy` and their alerts.
async fn readyz_admission(State(s): State<OpsState>) -> impl IntoResponse {
    let webhook = s
        .webhook_serving
        .as_ref()
        .is_none_or(|w| w.load(Ordering::Relaxed));
    match (s.ready.load(Ordering::Relaxed), webhook) {
        (true, true) => (StatusCode::OK, "ok"),
        (false, _) => (StatusCode::SERVICE_UNAVAILABLE, "caches not synced"),
        (true, false) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "admission webhook not serving",
        ),
    }
}

pub async fn serve(
    addr: SocketAddr,
    state: OpsState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/readyz/admission", get(readyz_admission))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "ops server listening");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}
