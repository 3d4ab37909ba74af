//! The kube-scheduler extender verbs `filter` and `prioritize`.

use aco_core::cluster::TenantId;
use aco_core::colony::Prioritized;
use aco_core::colony_store::wire::{ColonyFailure, DecisionRecord};
use aco_core::config::Config;
use aco_core::extender::FilterReply;
use aco_core::extender::{parse_args, ScoringInput};
use aco_core::metrics;
use aco_core::names::PodKey;
use aco_core::pipeline::ColonySource;
use rand::{rngs::SmallRng, SeedableRng};

use super::admission::{admit_tenant, TenantAdmission};
use super::{Call, Handled};
use crate::colony::{client, queue};
use crate::facts::client as facts_client;
use crate::http::{priorities_response, read_body, stream_response, ApiError};
use crate::isolate;
use crate::pipeline;
use crate::pod_index;

/// Brings the cluster's facts copy up to date (from the Facts object when older than
/// `FACTS_CACHE_MS`) before the body is parsed (the verbs judge each node as it is read). If they
/// cannot be had, a body the client got wrong is still its 400, as when the body was read
/// first; a good one gets the 503.
async fn facts_for(call: &Call, body: &str) -> Result<(), ApiError> {
    match facts_client::load(&call.bindings, &call.cluster, call.now_ms, &call.config).await {
        Ok(()) => Ok(()),
        Err(e) => {
            parse_args(body, &call.config.pod_keys, &call.config.node_keys)?;
            Err(e)
        }
    }
}

/// The cluster's pipeline answers `input` from the colony `from` names (and assumes the pod on
/// the answer's top); `None` when it holds no copy to answer from.
/// Takes the whole Config, as the pipeline's scoring does.
fn answer<'a>(
    call: &Call,
    input: &'a ScoringInput,
    from: ColonySource,
    config: &Config,
    rng: &mut SmallRng,
) -> Option<Prioritized<'a>> {
    pipeline::with(&call.cluster, |s| {
        s.pipeline.prioritize(
            &input.features,
            &input.demand,
            from,
            call.now_ms,
            config,
            rng,
        )
    })
}

/// Chunks of the filter reply sent while kube-scheduler reads it.
const REPLY_CHUNK_BYTES: usize = 64 << 10;

pub async fn filter(call: &mut Call) -> Handled {
    let body = read_body(&mut call.req, call.config.serving.max_body_bytes).await?;
    facts_for(call, &body).await?;
    let (now_ms, config) = (call.now_ms, &call.config);
    // Every node is judged before the answer is known to be a 200: a node that does not read,
    // however late in the list, is a 400 and nothing of a 200 has been sent. Judged on the
    // facts alone: an assumed placement is a guess, and a guess must never reject a node
    // (kube-scheduler's own fit check is exact); prioritize ranks with them. kube-scheduler
    // binds the only node left without asking prioritize: the pipeline assumes the pod there.
    let streamed = pipeline::with(&call.cluster, |s| {
        s.pipeline.filter_body(&body, now_ms, config)
    })?;
    let mut outcome = streamed.output;
    // For the explanation of this pod's decision: prioritize never sees the rejected nodes.
    isolate::with(|i| {
        i.filter_memory.borrow_mut().remember(
            call.cluster.as_str(),
            &streamed.pod.decision_key(),
            call.now_ms,
            std::mem::take(&mut outcome.rejections),
        )
    });
    let ev = &mut call.event;
    ev.count(&metrics::FILTER_NODES_PASSED, &[], outcome.passed as f64);
    for (code, n) in &outcome.rejected {
        ev.count(&metrics::FILTER_NODES_REJECTED, &[code.as_str()], *n as f64);
    }
    ev.count(
        &metrics::STALE_NODE_FACTS,
        &["filter"],
        outcome.stale as f64,
    );
    // The reply echoes the passing nodes' bytes: sent from the request body, chunk by chunk,
    // never copied into one reply buffer.
    let reply = FilterReply::of(&mut outcome.result, &body)
        .ok_or_else(|| ApiError::new(503, "filter reply: a node's bytes are not the request's"))?;
    stream_response(reply.chunks(body, REPLY_CHUNK_BYTES))
}

pub async fn prioritize(call: &mut Call) -> Handled {
    let body = read_body(&mut call.req, call.config.serving.max_body_bytes).await?;
    facts_for(call, &body).await?;
    let (now_ms, config) = (call.now_ms, call.config.clone());
    let input = pipeline::with(&call.cluster, |s| {
        s.pipeline.scoring_input_body(&body, now_ms, &config)
    })?
    .output;
    // Taken whatever happens next, so that a filter is attached to one decision at most.
    let filter_reasons = isolate::with(|i| {
        i.filter_memory
            .borrow_mut()
            .take(call.cluster.as_str(), &input.demand.key, call.now_ms)
    });
    call.event.count(
        &metrics::STALE_NODE_FACTS,
        &["prioritize"],
        input.stale as f64,
    );
    if input.features.is_empty() {
        return Ok(priorities_response(&[]));
    }
    // The colony remembers the decision under this key, made from the pod's metadata as the
    // body was read (borrowed, untyped, for the hot path): one no placement could name is
    // refused here rather than stored.
    let key = PodKey::parse(&input.demand.key)
        .map_err(|m| ApiError::field(400, "Pod.metadata.uid", m))?;
    // Valid by `tenant_of` when the demand was read; typed here, where the colony is named.
    let tenant = TenantId::parse(&input.demand.tenant)
        .map_err(|m| ApiError::field(400, "Pod.metadata.labels", m))?;
    call.tenant = Some(tenant.to_string());
    let mut rng = SmallRng::seed_from_u64(getrandom::u64().unwrap_or(call.now_ms));
    // η alone always answers; the pipeline then assumes the pod on its top like any answer.
    let eta_alone = |call: &Call, rng: &mut SmallRng| {
        answer(call, &input, ColonySource::EtaAlone, &config, rng)
            .map(|p| priorities_response(&p.priorities))
            .ok_or_else(|| ApiError::new(503, "η alone gave no answer"))
    };
    let admission = match admit_tenant(call, &tenant, "prioritize").await {
        Ok(a) => a,
        // The Registry did not answer: fail open with η alone, creating nothing.
        Err(e) => {
            let message = format!("registry: {}", e.message);
            crate::log::error("prioritize", Some(&call.bindings.request_id), &message);
            call.event.count(
                &metrics::COLONY_FALLBACK,
                &["eta_only", "registry_unavailable"],
                1.0,
            );
            TenantAdmission::OverLimit
        }
    };
    let colony = match admission {
        TenantAdmission::Admitted(colony) => Some(colony),
        TenantAdmission::NotAllowed => {
            call.event
                .count(&metrics::TENANTS_REFUSED, &["prioritize"], 1.0);
            None
        }
        TenantAdmission::OverLimit => None,
    };
    let Some(colony) = colony else {
        // No colony for a tenant outside TENANTS/TENANT_PATTERN or beyond MAX_COLONIES: η alone
        // (τ_initial everywhere), nothing remembered, so such pods cannot create Durable
        // Objects or grow storage.
        return eta_alone(call, &mut rng);
    };
    // With BIND_INDEX, remember which tenant scored this pod, so that the bind verb (which
    // carries no labels) can find the colony. Awaited, so it is in place before kube-scheduler
    // can call bind.
    if config.serving.bind_index {
        pod_index::remember(
            &call.bindings,
            &input.demand.key,
            &tenant,
            config.retention.decision_ttl_ms,
        )
        .await;
    }
    // Scored from this isolate's copy of the colony (see `aco_core::pipeline::ColonyCopies` for
    // the consistency this trades): when it is fresh, no binding operation before the answer;
    // otherwise one, to fetch the colony first. The decision is sent after the response either
    // way.
    let fresh = |max_age_ms| ColonySource::Fresh {
        tenant: colony.tenant.as_str(),
        max_age_ms,
    };
    let mut local = answer(
        call,
        &input,
        fresh(config.serving.colony_snapshot_ms),
        &config,
        &mut rng,
    );
    if local.is_none() {
        match client::fetch_copy(&call.bindings, &colony, now_ms).await {
            Ok(_) => local = answer(call, &input, fresh(u64::MAX), &config, &mut rng),
            Err(e) => {
                // Scores are advisory: without the colony, answer from an old copy or from η
                // alone (counted, and the failure itself in aco_colony_errors_total), never an
                // error. Nothing is remembered: such a pod's placement counts as unknown.
                let reason = e.colony_failure.unwrap_or(ColonyFailure::Error).label();
                let message = format!(
                    "colony of {tenant:?} failed, answering without it: {}",
                    e.message
                );
                crate::log::error("prioritize", Some(&call.bindings.request_id), &message);
                call.event.count(&metrics::COLONY_ERRORS, &[reason], 1.0);
                let stale = ColonySource::Any(colony.tenant.as_str());
                let (mode, reply) = match answer(call, &input, stale, &config, &mut rng) {
                    Some(p) => ("stale_copy", Ok(priorities_response(&p.priorities))),
                    None => ("eta_only", eta_alone(call, &mut rng)),
                };
                call.event
                    .count(&metrics::COLONY_FALLBACK, &[mode, reason], 1.0);
                return reply;
            }
        }
    }
    let Some(mut prioritized) = local else {
        return Err(ApiError::new(503, "colony copy missing after its fetch"));
    };
    if let Some(e) = prioritized.decision.explanation.as_mut() {
        e.filter = filter_reasons;
    }
    let record = DecisionRecord {
        key,
        explored: prioritized.explored.is_some(),
        decision: prioritized.decision,
    };
    let dropped = queue::push(&colony, record);
    call.event
        .count(&metrics::COLONY_DECISIONS_DROPPED, &[], dropped as f64);
    if queue::schedule_send(&colony, now_ms) {
        call.deferred.push(Box::pin(client::send_decisions(
            call.bindings.clone(),
            colony.clone(),
            config.serving.decision_flush_ms,
        )));
    }
    Ok(priorities_response(&prioritized.priorities))
}
