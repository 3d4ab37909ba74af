//! `GET /v1/tenants/{tenant}/decisions/{podUid}` (admin): why prioritize scored a pod's
//! candidates as it did — each remembered candidate's η factors, τ and 0–10 score, and the
//! filter's rejections when the scoring isolate served the pod's filter call. While the decision
//! is remembered (until its placement is confirmed, or `DECISION_TTL_MS`), and after the
//! confirmation, with the node the pod was bound on, for `CONFIRMED_EXPLANATIONS_TTL_MS` and the
//! newest `CONFIRMED_EXPLANATIONS_MAX` pods of the tenant (`colony_store::explained`). Bounded:
//! `DECISION_KEEP_TOP` candidates and `FILTER_REJECTIONS_KEPT` rejected nodes.

use aco_core::cluster::TenantId;
use aco_core::colony_store::wire::LookupRequest;
use aco_core::names::PodKey;

use super::admission::admitted_colony;
use super::{Call, Handled};
use crate::auth::require_admin;
use crate::colony::client;
use crate::http::{json_response, ApiError};

pub async fn decision(call: &mut Call, tenant: &TenantId, key: &str) -> Handled {
    require_admin(&call.req, &call.env)?;
    // Where the key enters: a path segment.
    let key = PodKey::parse(key).map_err(|m| ApiError::field(400, "podUid", m))?;
    let colony = admitted_colony(call, tenant, "decision").await?;
    // Read your writes: a decision this isolate scored from its copy may not have reached the
    // colony yet (it is sent after the prioritize response).
    client::send_not_durable(&call.bindings, &colony).await?;
    let lookup = client::call(
        &call.bindings,
        &colony,
        &LookupRequest {
            key: key.clone(),
            now_ms: call.now_ms,
        },
    )
    .await?;
    match (lookup.decision, lookup.explained, lookup.confirmed) {
        (Some(decision), ..) => Ok(json_response(
            200,
            &decision.explain(&key, tenant.as_str()),
        )),
        (None, Some(explained), _) => Ok(json_response(200, &explained.explain(tenant.as_str()))),
        (None, None, Some(c)) => Err(ApiError {
            detail: Some(serde_json::json!({"confirmed": {"node": c.node, "confirmedMs": c.confirmed_ms}})),
            ..ApiError::field(
                404,
                "podUid",
                format!(
                    "no explanation kept for podUid {key:?} of tenant {tenant:?}: its placement on {:?} was confirmed at {} ms, \
                     and a confirmed pod's explanation is kept CONFIRMED_EXPLANATIONS_TTL_MS ({} ms), for the newest \
                     CONFIRMED_EXPLANATIONS_MAX ({}) pods of the tenant",
                    c.node, c.confirmed_ms, call.config.retention.confirmed_explanations_ttl_ms, call.config.retention.confirmed_explanations_max
                ),
            )
        }),
        (None, None, None) => Err(ApiError::field(
            404,
            "podUid",
            format!(
                "no decision remembered for podUid {key:?} of tenant {tenant:?} (never scored by this tenant's colony, \
                 expired after DECISION_TTL_MS, evicted beyond MAX_DECISIONS_PER_TENANT, or confirmed longer ago than \
                 CONFIRMED_TTL_MS and CONFIRMED_EXPLANATIONS_TTL_MS)"
            ),
        )),
    }
}
