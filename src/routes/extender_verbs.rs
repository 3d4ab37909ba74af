//! The kube-scheduler extender verbs `filter` and `prioritize`.

use std::collections::HashMap;

use aco_core::extender::{filter as run_filter, parse_args, scoring_input, Args};
use aco_core::colony::TenantColony;
use aco_core::facts::NodeFacts;
use rand::{rngs::SmallRng, SeedableRng};
use worker::{Method, Request, RequestInit};

use super::{Call, Handled};
use crate::bindings::Bindings;
use crate::colony_do::{self, PrioritizeRequest, PrioritizeResponse};
use crate::facts_store;
use crate::pod_index;
use crate::http::{json_response, read_body, ApiError};

/// Node facts of every candidate (isolate cache, then KV).
async fn candidate_facts(call: &Call, args: &Args<'_>) -> Result<HashMap<String, NodeFacts>, ApiError> {
    facts_store::load(&call.bindings, facts_store::DEFAULT_CLUSTER, args.node_names(), call.now_ms, call.config.facts_cache_ms).await
}

pub async fn filter(call: &mut Call) -> Handled {
    let body = read_body(&mut call.req, call.config.max_body_bytes).await?;
    let args = parse_args(&body, &call.config)?;
    let facts = candidate_facts(call, &args).await?;
    let outcome = run_filter(&args, &facts, call.now_ms, &call.config)?;
    let ev = &mut call.event;
    ev.count("aco_filter_nodes_passed_total", String::new(), outcome.passed as f64);
    for (code, n) in &outcome.rejected {
        ev.count("aco_filter_nodes_rejected_total", format!("reason=\"{}\"", code.as_str()), *n as f64);
    }
    ev.count("aco_stale_node_facts_total", "verb=\"filter\"".into(), outcome.stale as f64);
    Ok(json_response(200, &outcome.result))
}

pub async fn prioritize(call: &mut Call) -> Handled {
    let body = read_body(&mut call.req, call.config.max_body_bytes).await?;
    let args = parse_args(&body, &call.config)?;
    let facts = candidate_facts(call, &args).await?;
    let input = scoring_input(&args, &facts, call.now_ms, &call.config)?;
    call.event.count("aco_stale_node_facts_total", "verb=\"prioritize\"".into(), input.stale as f64);
    if input.features.is_empty() {
        return Ok(json_response(200, &Vec::<aco_core::wire::HostPriority>::new()));
    }
    if !call.config.tenant_allowed(&input.demand.tenant) {
        // No colony for a tenant outside TENANTS/TENANT_PATTERN: η alone (τ_initial everywhere),
        // nothing remembered, so such pods cannot create Durable Objects or grow storage.
        call.event.count("aco_tenants_refused_total", "verb=\"prioritize\"".into(), 1.0);
        let mut rng = SmallRng::seed_from_u64(getrandom::u64().unwrap_or(call.now_ms));
        let scored = TenantColony::default().prioritize(&input.features, input.demand.workload, call.now_ms, &call.config, &mut rng);
        return Ok(json_response(200, &scored.priorities));
    }
    let request = PrioritizeRequest {
        tenant: input.demand.tenant.clone(),
        key: input.demand.key.clone(),
        workload: input.demand.workload,
        features: input.features,
        now_ms: call.now_ms,
    };
    // With BIND_INDEX, remember which tenant scored this pod, so that the bind verb (which
    // carries no labels) can find the colony. Written concurrently with the colony call, so it is
    // in place before kube-scheduler can call bind.
    let index = async {
        if call.config.bind_index {
            pod_index::remember(&call.bindings, &request.key, &request.tenant, call.config.decision_ttl_ms).await;
        }
    };
    let (reply, ()) = futures::future::join(
        colony_call::<_, PrioritizeResponse>(&call.bindings, &request.tenant, Method::Post, "/prioritize", Some(&request)),
        index,
    )
    .await;
    let reply = reply?;
    call.event.tenants.push(request.tenant);
    Ok(json_response(200, &reply.priorities))
}

/// Calls the tenant's Colony Durable Object with a JSON body and decodes its JSON reply.
pub async fn colony_call<B: serde::Serialize, R: serde::de::DeserializeOwned>(
    bindings: &Bindings,
    tenant: &str,
    method: Method,
    path: &str,
    body: Option<&B>,
) -> Result<R, ApiError> {
    let text = colony_fetch(bindings, tenant, method, path, body).await?;
    serde_json::from_str(&text).map_err(|e| ApiError::unavailable("colony reply", e))
}

pub async fn colony_fetch<B: serde::Serialize>(
    bindings: &Bindings,
    tenant: &str,
    method: Method,
    path: &str,
    body: Option<&B>,
) -> Result<String, ApiError> {
    let unavailable = |e: worker::Error| ApiError { colony_failure: Some("unreachable"), ..ApiError::unavailable("colony Durable Object", e) };
    let mut init = RequestInit::new();
    init.with_method(method);
    if let Some(b) = body {
        let json = serde_json::to_string(b).map_err(|e| ApiError::unavailable("serialising colony request", e))?;
        init.with_body(Some(json.into()));
    }
    let req = Request::new_with_init(&format!("https://colony{path}"), &init).map_err(unavailable)?;
    let mut resp = bindings.do_fetch(colony_do::BINDING, "Colony", tenant, req).await?;
    let text = resp.text().await.map_err(unavailable)?;
    if resp.status_code() != 200 {
        #[derive(serde::Deserialize)]
        struct Failure {
            reason: String,
        }
        let reason = match serde_json::from_str::<Failure>(&text).map(|f| f.reason) {
            Ok(r) if r == "corrupt_state" => "corrupt_state",
            _ => "error",
        };
        let e = ApiError::new(503, format!("colony Durable Object of tenant {tenant:?} answered {}: {text}", resp.status_code()));
        return Err(ApiError { colony_failure: Some(reason), ..e });
    }
    Ok(text)
}
