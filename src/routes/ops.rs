//! Operations endpoints: health probes, version, metrics, and a trivial echo route used as the
//! baseline in latency benchmarks.

use aco_core::registry::NameKind;
use worker::{Env, Method};

use super::{Call, Handled, Probe};
use crate::colony::api::{self as colony_api, ColonyName, MetricsRequest};
use crate::colony::client;
use crate::http::{json_response, read_body, text_response, ApiError};
use crate::metrics_text::{render_colonies, render_state, ColonyMetrics};
use crate::registry;
use crate::telemetry::{self, state::TelemetryState};
use crate::{env_config, facts, pod_index};

/// Colonies asked for their metrics at once by a scrape (every admitted one is asked; this only
/// bounds the replies held in flight).
const COLONIES_IN_FLIGHT: usize = 50;

pub fn health(probe: Probe, method: &Method, env: &Env) -> Handled {
    if *method != Method::Get {
        return Err(ApiError::new(405, format!("{probe:?} accepts GET")));
    }
    match probe {
        Probe::Livez => Ok(text_response(200, "ok\n".into(), "text/plain")),
        Probe::Version => Ok(json_response(
            200,
            &serde_json::json!({"name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION")}),
        )),
        Probe::Readyz => {
            let mut problems = Vec::new();
            if let Err(e) = env_config::config(env) {
                problems.push(e.to_string());
            }
            if let Err(e) = env_config::extender_auth(env) {
                problems.push(e.to_string());
            }
            for (kind, ok) in [
                (pod_index::BINDING, env.kv(pod_index::BINDING).is_ok()),
                (facts::BINDING, env.durable_object(facts::BINDING).is_ok()),
                (
                    colony_api::BINDING,
                    env.durable_object(colony_api::BINDING).is_ok(),
                ),
                (
                    telemetry::BINDING,
                    env.durable_object(telemetry::BINDING).is_ok(),
                ),
                (
                    registry::BINDING,
                    env.durable_object(registry::BINDING).is_ok(),
                ),
            ] {
                if !ok {
                    problems.push(format!("binding {kind} missing"));
                }
            }
            let status = if problems.is_empty() { 200 } else { 503 };
            Ok(json_response(
                status,
                &serde_json::json!({"ready": problems.is_empty(), "problems": problems}),
            ))
        }
    }
}

pub async fn echo(call: &mut Call) -> Handled {
    let body = read_body(&mut call.req, call.config.max_body_bytes).await?;
    Ok(text_response(200, body, "application/json"))
}

pub async fn metrics(call: &mut Call) -> Handled {
    // This isolate's own counters first, so that a scrape sees every request it answered; the
    // other isolates' arrive within TELEMETRY_FLUSH_MS. A failed flush is retried by the next,
    // and shows in this isolate's own series below.
    if let Err(e) = telemetry::flush(&call.bindings, call.now_ms).await {
        worker::console_error!("metrics: flushing this isolate's counters failed: {e}");
        call.event
            .count("aco_telemetry_flush_failures_total", String::new(), 1.0);
    }
    let req = worker::Request::new("https://telemetry/state", Method::Get)
        .map_err(|e| ApiError::unavailable("telemetry", e))?;
    let mut resp = call
        .bindings
        .do_fetch(telemetry::BINDING, "Telemetry", telemetry::INSTANCE, req)
        .await?;
    let state: TelemetryState = resp
        .json()
        .await
        .map_err(|e| ApiError::unavailable("telemetry reply", e))?;
    let mut text = render_state(&state);
    text.push_str(&telemetry::isolate_series());
    // Every admitted colony, page by page (MAX_COLONIES bounds them, and so the subrequests of
    // one scrape), asked COLONIES_IN_FLIGHT at a time.
    let mut colonies = Vec::new();
    let mut failed = 0;
    let mut after: Option<String> = None;
    loop {
        let page =
            registry::client::page(&call.bindings, NameKind::Colony, after.as_deref()).await?;
        for wave in page.names.chunks(COLONIES_IN_FLIGHT) {
            let names: Vec<ColonyName> = wave.iter().map(|n| ColonyName::parse(n)).collect();
            let replies = futures::future::join_all(
                names
                    .iter()
                    .map(|c| client::call(&call.bindings, c, &MetricsRequest {})),
            )
            .await;
            // A colony that fails is skipped (and counted), never fatal to the scrape.
            for (colony, reply) in names.iter().zip(replies) {
                match reply {
                    Ok(mut r) => {
                        if r.tenant.is_empty() {
                            r.tenant = colony.tenant.clone();
                        }
                        colonies.push(ColonyMetrics::new(colony.cluster_label(), r))
                    }
                    Err(e) => {
                        failed += 1;
                        worker::console_error!(
                            "metrics: colony {:?} skipped: {}",
                            colony.object_name(),
                            e.message
                        );
                    }
                }
            }
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    call.event.count(
        "aco_metrics_colony_errors_total",
        String::new(),
        failed as f64,
    );
    text.push_str(&render_colonies(&colonies, failed));
    Ok(text_response(200, text, "text/plain; version=0.0.4"))
}
