//! Operations endpoints: health probes, version, metrics, and a trivial echo route used as the
//! baseline in latency benchmarks.

use worker::{Env, Method};

use super::extender_verbs::colony_fetch;
use super::{Call, Handled};
use crate::http::{json_response, read_body, text_response, ApiError};
use crate::telemetry;
use crate::{colony_do, env_config, facts_store};

/// At most this many tenants' colonies are asked for their metrics per scrape.
const MAX_TENANTS_SCRAPED: usize = 200;

pub fn health(probe: &str, method: &Method, env: &Env) -> Handled {
    if *method != Method::Get {
        return Err(ApiError::new(405, format!("/{probe} accepts GET")));
    }
    match probe {
        "livez" => Ok(text_response(200, "ok\n".into(), "text/plain")),
        "version" => Ok(json_response(200, &serde_json::json!({"name": env!("CARGO_PKG_NAME"), "version": env!("CARGO_PKG_VERSION")}))),
        _ => {
            let mut problems = Vec::new();
            if let Err(e) = env_config::config(env) {
                problems.push(e.to_string());
            }
            for (kind, ok) in [
                (facts_store::BINDING, env.kv(facts_store::BINDING).is_ok()),
                (colony_do::BINDING, env.durable_object(colony_do::BINDING).is_ok()),
                (telemetry::BINDING, env.durable_object(telemetry::BINDING).is_ok()),
            ] {
                if !ok {
                    problems.push(format!("binding {kind} missing"));
                }
            }
            let status = if problems.is_empty() { 200 } else { 503 };
            Ok(json_response(status, &serde_json::json!({"ready": problems.is_empty(), "problems": problems})))
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
    let stub = call
        .env
        .durable_object(telemetry::BINDING)
        .and_then(|ns| ns.get_by_name(telemetry::INSTANCE))
        .map_err(|e| ApiError::unavailable("telemetry Durable Object", e))?;
    let mut resp = stub.fetch_with_str("https://telemetry/metrics").await.map_err(|e| ApiError::unavailable("telemetry", e))?;
    let gathered: Gathered = resp.json().await.map_err(|e| ApiError::unavailable("telemetry reply", e))?;
    let mut text = gathered.text;
    let tenants: Vec<&String> = gathered.tenants.iter().take(MAX_TENANTS_SCRAPED).collect();
    let replies = futures::future::join_all(
        tenants.iter().map(|t| colony_fetch::<()>(&call.env, t, Method::Get, "/metrics", None)),
    )
    .await;
    let mut colony_text = String::new();
    for reply in replies {
        colony_text.push_str(&reply?);
    }
    if !colony_text.is_empty() {
        text.push_str("# HELP aco_pheromone Pheromone level τ per tenant and node (evaporation applied).\n# TYPE aco_pheromone gauge\n");
        text.push_str(&colony_text);
    }
    Ok(text_response(200, text, "text/plain; version=0.0.4"))
}
