//! Operations endpoints: health probes, version, metrics, and a trivial echo route used as the
//! baseline in latency benchmarks.

use worker::{Env, Method};

use super::{Call, Handled, Probe};
use crate::colony::api::{self as colony_api, ColonyName, MetricsRequest};
use crate::colony::client;
use crate::http::{json_response, read_body, text_response, ApiError};
use crate::metrics_text::{render_colonies, ColonyMetrics};
use crate::telemetry;
use crate::{env_config, facts, pod_index};

/// At most this many tenants' colonies are asked for their metrics per scrape.
const MAX_TENANTS_SCRAPED: usize = 200;

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
    #[derive(serde::Deserialize)]
    struct Gathered {
        text: String,
        tenants: Vec<String>,
    }
    // This isolate's own counters first, so that a scrape sees every request it answered; the
    // other isolates' arrive within TELEMETRY_FLUSH_MS. A failed flush is retried by the next.
    if let Err(e) = telemetry::flush(&call.bindings, call.now_ms).await {
        worker::console_error!("metrics: flushing this isolate's counters failed: {e}");
        call.event
            .count("aco_telemetry_flush_failures_total", String::new(), 1.0);
    }
    let req = worker::Request::new("https://telemetry/metrics", Method::Get)
        .map_err(|e| ApiError::unavailable("telemetry", e))?;
    let mut resp = call
        .bindings
        .do_fetch(telemetry::BINDING, "Telemetry", telemetry::INSTANCE, req)
        .await?;
    let gathered: Gathered = resp
        .json()
        .await
        .map_err(|e| ApiError::unavailable("telemetry reply", e))?;
    let mut text = gathered.text;
    let names: Vec<ColonyName> = gathered
        .tenants
        .iter()
        .take(MAX_TENANTS_SCRAPED)
        .map(|t| ColonyName::parse(t))
        .collect();
    let replies = futures::future::join_all(
        names
            .iter()
            .map(|c| client::call(&call.bindings, c, &MetricsRequest {})),
    )
    .await;
    // A colony that fails is skipped (and counted), never fatal to the scrape.
    let mut colonies = Vec::with_capacity(replies.len());
    let mut failed = 0;
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
    call.event.count(
        "aco_metrics_colony_errors_total",
        String::new(),
        failed as f64,
    );
    text.push_str(&render_colonies(&colonies, failed));
    Ok(text_response(200, text, "text/plain; version=0.0.4"))
}
