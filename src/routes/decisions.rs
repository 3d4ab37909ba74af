//! `GET /v1/tenants/{tenant}/decisions/{podUid}` (admin): why prioritize scored a pod's
//! candidates as it did — each remembered candidate's η factors, τ and 0–10 score, and the
//! filter's rejections when the scoring isolate served the pod's filter call. Exists while the
//! decision is remembered: until the placement is confirmed (then the decision row is deleted,
//! and the 404 says so) or `DECISION_TTL_MS`. Bounded: `DECISION_KEEP_TOP` candidates and
//! `FILTER_REJECTIONS_KEPT` rejected nodes.

use aco_core::cluster::validate_tenant;
use aco_core::colony_store::validate_pod_key;
use aco_core::colony_store::wire::LookupRequest;

use super::admission::admitted_colony;
use super::{Call, Handled};
use crate::auth::require_admin;
use crate::colony::client;
use crate::http::{json_response, ApiError};

pub async fn decision(call: &mut Call, tenant: &str, key: &str) -> Handled {
    require_admin(&call.req, &call.env)?;
    validate_tenant(tenant).map_err(|m| ApiError::field(400, "tenant", m))?;
    validate_pod_key(key).map_err(|m| ApiError::field(400, "podUid", m))?;
    let colony = admitted_colony(call, tenant, "decision").await?;
    // Read your writes: a decision this isolate scored from its copy may not have reached the
    // colony yet (it is sent after the prioritize response).
    client::send_not_durable(&call.bindings, &colony).await?;
    let lookup = client::call(
        &call.bindings,
        &colony,
        &LookupRequest {
            key: key.to_string(),
            now_ms: call.now_ms,
        },
    )
    .await?;
    match (lookup.decision, lookup.confirmed) {
        (Some(decision), _) => Ok(json_response(200, &decision.explain(key, tenant))),
        (None, Some(c)) => Err(ApiError {
            detail: Some(serde_json::json!({"confirmed": {"node": c.node, "confirmedMs": c.confirmed_ms}})),
            ..ApiError::field(
                404,
                "podUid",
                format!(
                    "no decision remembered for podUid {key:?} of tenant {tenant:?}: its placement on {:?} was confirmed at {} ms, \
                     and a decision (with its explanation) is deleted when its placement is confirmed",
                    c.node, c.confirmed_ms
                ),
            )
        }),
        (None, None) => Err(ApiError::field(
            404,
            "podUid",
            format!(
                "no decision remembered for podUid {key:?} of tenant {tenant:?} (never scored by this tenant's colony, \
                 expired after DECISION_TTL_MS, evicted beyond MAX_DECISIONS_PER_TENANT, or confirmed longer ago than CONFIRMED_TTL_MS)"
            ),
        )),
    }
}
