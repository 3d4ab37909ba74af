//! Operations endpoints: health probes, version, metrics, and a trivial echo route used as the
//! baseline in latency benchmarks.

use aco_core::metrics;
use aco_core::telemetry::ScrapeRequest;
use worker::{Env, Method};

use super::{Call, Handled, Probe};
use crate::colony::api as colony_api;
use crate::http::{json_response, read_body, text_response, ApiError};
use crate::registry;
use crate::telemetry;
use crate::{auth, env_config, facts, object_call, pod_index};

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
    let sent = object_call::call(&call.bindings, telemetry::api::INSTANCE, &scrape).await;
    if let Some(d) = &delivery {
        let ack = sent.as_ref().ok().and_then(|reply| reply.ack);
        telemetry::delivered(d, ack.ok_or(()));
    }
    match sent {
        Ok(reply) => Ok(text_response(
            200,
            reply.exposition,
            "text/plain; version=0.0.4",
        )),
        Err(e) => {
            call.event
                .count(&metrics::TELEMETRY_FLUSH_FAILURES, &[], 1.0);
            Err(e)
        }
    }
}
