//! Operations endpoints: health probes, version, metrics, and a trivial echo route used as the
//! baseline in latency benchmarks.

use aco_core::metrics;
use aco_core::telemetry::{Ack, ScrapeRequest};
use worker::{Env, Method, RequestInit};

use super::{Call, Handled, Probe};
use crate::colony::api as colony_api;
use crate::http::{json_response, read_body, text_response, ApiError};
use crate::registry;
use crate::telemetry::{self, ACK_HEADER};
use crate::{auth, env_config, facts, pod_index};

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
            for key in [auth::ADMIN_TOKEN, auth::METRICS_TOKEN] {
                if let Err(e) = auth::configured(env, key) {
                    problems.push(e.to_string());
                }
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
    let body = read_body(&mut call.req, call.config.serving.max_body_bytes).await?;
    Ok(text_response(200, body, "application/json"))
}

/// `GET /metrics` (behind `METRICS_TOKEN`): one request to the Telemetry object, which
/// applies this isolate's own delivery first (so the scrape is exact for the isolate that
/// answers it) and renders every cluster's counters and every colony's latest report. No
/// colony is asked anything, so a scrape costs the same however many colonies exist.
pub async fn metrics(call: &mut Call) -> Handled {
    let delivery = telemetry::seal(call.now_ms);
    let scrape = ScrapeRequest {
        delivery: delivery.clone(),
        isolate: telemetry::isolate_view(),
    };
    let body = serde_json::to_string(&scrape)
        .map_err(|e| ApiError::unavailable("serialising the scrape", e))?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(body.into()));
    let req = worker::Request::new_with_init("https://telemetry/scrape", &init)
        .map_err(|e| ApiError::unavailable("telemetry", e))?;
    let sent = call
        .bindings
        .do_fetch(telemetry::BINDING, "Telemetry", telemetry::INSTANCE, req)
        .await;
    let mut resp = match sent {
        Ok(resp) if resp.status_code() == 200 => resp,
        failed => {
            if let Some(d) = &delivery {
                telemetry::delivered(d, Err(()));
            }
            call.event
                .count(&metrics::TELEMETRY_FLUSH_FAILURES, &[], 1.0);
            return Err(match failed {
                Ok(resp) => {
                    ApiError::new(503, format!("telemetry answered {}", resp.status_code()))
                }
                Err(e) => e,
            });
        }
    };
    if let Some(d) = &delivery {
        let ack: Option<Ack> = resp
            .headers()
            .get(ACK_HEADER)
            .ok()
            .flatten()
            .and_then(|a| serde_json::from_str(&a).ok());
        telemetry::delivered(d, ack.ok_or(()));
    }
    let text = resp
        .text()
        .await
        .map_err(|e| ApiError::unavailable("telemetry reply", e))?;
    Ok(text_response(200, text, "text/plain; version=0.0.4"))
}
