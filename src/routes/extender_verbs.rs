//! The kube-scheduler extender verbs `filter` and `prioritize`.

use std::collections::HashMap;

use aco_core::cluster::colony_name;
use aco_core::colony::TenantColony;
use aco_core::extender::{filter as run_filter, parse_args, scoring_input, Args};
use aco_core::facts::NodeFacts;
use rand::{rngs::SmallRng, SeedableRng};
use worker::{Method, Request, RequestInit};

use super::{Call, Handled};
use crate::bindings::Bindings;
use crate::colony_cache;
use crate::colony_do::{
    self, DecisionBatch, DecisionRecord, DecisionReply, PrioritizeRequest, PrioritizeResponse,
};
use crate::decision_queue;
use crate::facts_store;
use crate::filter_memory;
use crate::http::{json_response, json_response_sized, read_body, ApiError};
use crate::pod_index;
use crate::telemetry;

/// Node facts of every candidate (isolate cache, then KV).
async fn candidate_facts(
    call: &Call,
    args: &Args<'_>,
) -> Result<HashMap<String, NodeFacts>, ApiError> {
    facts_store::load(
        &call.bindings,
        &call.cluster,
        args.node_names(),
        call.now_ms,
        call.config.facts_cache_ms,
    )
    .await
}

pub async fn filter(call: &mut Call) -> Handled {
    let body = read_body(&mut call.req, call.config.max_body_bytes).await?;
    let args = parse_args(&body, &call.config)?;
    let facts = candidate_facts(call, &args).await?;
    let mut outcome = run_filter(&args, &facts, call.now_ms, &call.config)?;
    // For the explanation of this pod's decision: prioritize never sees the rejected nodes.
    filter_memory::remember(
        &call.cluster,
        &args.pod.decision_key(),
        call.now_ms,
        std::mem::take(&mut outcome.rejections),
    );
    let ev = &mut call.event;
    ev.count(
        "aco_filter_nodes_passed_total",
        String::new(),
        outcome.passed as f64,
    );
    for (code, n) in &outcome.rejected {
        ev.count(
            "aco_filter_nodes_rejected_total",
            format!("reason=\"{}\"", code.as_str()),
            *n as f64,
        );
    }
    ev.count(
        "aco_stale_node_facts_total",
        "verb=\"filter\"".into(),
        outcome.stale as f64,
    );
    // The reply echoes the passing nodes' bytes: at most about the request's size.
    Ok(json_response_sized(200, &outcome.result, body.len() + 4096))
}

pub async fn prioritize(call: &mut Call) -> Handled {
    let body = read_body(&mut call.req, call.config.max_body_bytes).await?;
    let args = parse_args(&body, &call.config)?;
    let facts = candidate_facts(call, &args).await?;
    let input = scoring_input(&args, &facts, call.now_ms, &call.config)?;
    // Taken whatever happens next, so that a filter is attached to one decision at most.
    let filter_reasons = filter_memory::take(&call.cluster, &input.demand.key, call.now_ms);
    call.event.count(
        "aco_stale_node_facts_total",
        "verb=\"prioritize\"".into(),
        input.stale as f64,
    );
    if input.features.is_empty() {
        return Ok(json_response(
            200,
            &Vec::<aco_core::wire::HostPriority>::new(),
        ));
    }
    let tenant = input.demand.tenant.clone();
    let mut rng = SmallRng::seed_from_u64(getrandom::u64().unwrap_or(call.now_ms));
    if !call.config.tenant_allowed(&tenant) {
        // No colony for a tenant outside TENANTS/TENANT_PATTERN: η alone (τ_initial everywhere),
        // nothing remembered, so such pods cannot create Durable Objects or grow storage.
        call.event.count(
            "aco_tenants_refused_total",
            "verb=\"prioritize\"".into(),
            1.0,
        );
        let scored = TenantColony::default().prioritize(
            &input.features,
            input.demand.workload,
            call.now_ms,
            &call.config,
            &mut rng,
        );
        return Ok(json_response(200, &scored.priorities));
    }
    // With BIND_INDEX, remember which tenant scored this pod, so that the bind verb (which
    // carries no labels) can find the colony. Awaited, so it is in place before kube-scheduler
    // can call bind.
    if call.config.bind_index {
        pod_index::remember(
            &call.bindings,
            &input.demand.key,
            &tenant,
            call.config.decision_ttl_ms,
        )
        .await;
    }
    let (workload, now_ms, config) = (input.demand.workload, call.now_ms, call.config.clone());
    // The tenant's colony in this cluster: the Durable Object's name and this isolate's keys.
    let colony = colony_name(&call.cluster, &tenant);
    // The fast path: score from this isolate's copy of the colony, remember the decision after
    // the response (see colony_cache.rs for the consistency this trades).
    let local = colony_cache::with_fresh(&colony, now_ms, config.colony_snapshot_ms, |c| {
        c.prioritize(&input.features, workload, now_ms, &config, &mut rng)
    });
    if let Some((version, mut prioritized)) = local {
        if let Some(e) = prioritized.decision.explanation.as_mut() {
            e.filter = filter_reasons;
        }
        let record = DecisionRecord {
            key: input.demand.key.clone(),
            explored: prioritized.explored.is_some(),
            decision: prioritized.decision,
        };
        let dropped = decision_queue::push(&colony, record);
        call.event.count(
            "aco_colony_decisions_dropped_total",
            String::new(),
            dropped as f64,
        );
        call.deferred.push(Box::pin(send_decisions(
            call.bindings.clone(),
            colony.clone(),
            tenant,
            version,
        )));
        call.event.tenants.push(colony);
        return Ok(json_response(200, &prioritized.priorities));
    }
    let request = PrioritizeRequest {
        tenant: tenant.clone(),
        key: input.demand.key.clone(),
        workload,
        features: input.features,
        now_ms,
        filter_reasons,
    };
    match colony_call::<_, PrioritizeResponse>(
        &call.bindings,
        &colony,
        Method::Post,
        "/prioritize",
        Some(&request),
    )
    .await
    {
        Ok(reply) => {
            colony_cache::refresh(
                &colony,
                reply.snapshot.version,
                Some(reply.snapshot),
                now_ms,
            );
            call.event.tenants.push(colony);
            Ok(json_response(200, &reply.priorities))
        }
        Err(e) => {
            // Scores are advisory: without the colony, answer from an old copy or from η alone
            // (counted, and the failure itself in aco_colony_errors_total), never an error.
            let reason = e.colony_failure.unwrap_or("error");
            worker::console_error!(
                "prioritize: colony of {tenant:?} failed, answering without it: {}",
                e.message
            );
            call.event.count(
                "aco_colony_errors_total",
                format!("reason=\"{reason}\""),
                1.0,
            );
            let mut score = |c: &mut TenantColony| {
                c.prioritize(&request.features, workload, now_ms, &config, &mut rng)
                    .priorities
            };
            let (mode, priorities) = match colony_cache::with_any(&colony, &mut score) {
                Some(p) => ("stale_copy", p),
                None => ("eta_only", score(&mut TenantColony::default())),
            };
            call.event.count(
                "aco_colony_fallback_total",
                format!("mode=\"{mode}\",reason=\"{reason}\""),
                1.0,
            );
            Ok(json_response(200, &priorities))
        }
    }
}

/// After the response: the colony remembers the decisions scored from this isolate's copy, and
/// its reply refreshes the copy if the colony moved on. A failure keeps them queued (the next
/// prioritize or placement batch of the tenant sends them again) and is counted.
async fn send_decisions(bindings: Bindings, colony: String, tenant: String, known_version: u64) {
    let decisions = decision_queue::take_unsent(&colony);
    if decisions.is_empty() {
        return;
    }
    let batch = DecisionBatch {
        tenant: tenant.clone(),
        decisions,
        known_version,
    };
    let result = colony_call::<_, DecisionReply>(
        &bindings,
        &colony,
        Method::Post,
        "/decisions",
        Some(&batch),
    )
    .await;
    let now_ms = worker::Date::now().as_millis();
    let sent = batch.decisions.len() as f64;
    match result {
        Ok(reply) => {
            decision_queue::acknowledged(&colony, &batch.decisions);
            colony_cache::refresh(&colony, reply.version, reply.snapshot, now_ms);
            telemetry::count(
                "aco_colony_local_decisions_total",
                "result=\"recorded\"",
                sent,
            );
        }
        Err(e) => {
            decision_queue::failed(&colony, &batch.decisions);
            worker::console_error!(
                "prioritize: {sent} decisions of colony {colony:?} not recorded yet: {}",
                e.message
            );
            telemetry::count(
                "aco_colony_errors_total",
                &format!("reason=\"{}\"", e.colony_failure.unwrap_or("error")),
                1.0,
            );
            telemetry::count("aco_colony_local_decisions_total", "result=\"retry\"", sent);
        }
    }
}

/// Sends every decision of the tenant this isolate has not seen acknowledged (in flight ones too:
/// the colony applies each once), so that what follows reads them.
pub async fn send_unacknowledged(
    bindings: &Bindings,
    colony: &str,
    tenant: &str,
) -> Result<(), ApiError> {
    let decisions = decision_queue::unacknowledged(colony);
    if decisions.is_empty() {
        return Ok(());
    }
    let batch = DecisionBatch {
        tenant: tenant.to_string(),
        decisions,
        known_version: 0,
    };
    let reply =
        colony_call::<_, DecisionReply>(bindings, colony, Method::Post, "/decisions", Some(&batch))
            .await?;
    decision_queue::acknowledged(colony, &batch.decisions);
    colony_cache::refresh(
        colony,
        reply.version,
        reply.snapshot,
        worker::Date::now().as_millis(),
    );
    Ok(())
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
    let unavailable = |e: worker::Error| ApiError {
        colony_failure: Some("unreachable"),
        ..ApiError::unavailable("colony Durable Object", e)
    };
    let mut init = RequestInit::new();
    init.with_method(method);
    if let Some(b) = body {
        let json = serde_json::to_string(b)
            .map_err(|e| ApiError::unavailable("serialising colony request", e))?;
        init.with_body(Some(json.into()));
    }
    let req =
        Request::new_with_init(&format!("https://colony{path}"), &init).map_err(unavailable)?;
    let mut resp = bindings
        .do_fetch(colony_do::BINDING, "Colony", tenant, req)
        .await?;
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
        let e = ApiError::new(
            503,
            format!(
                "colony Durable Object of tenant {tenant:?} answered {}: {text}",
                resp.status_code()
            ),
        );
        return Err(ApiError {
            colony_failure: Some(reason),
            ..e
        });
    }
    Ok(text)
}
