//! `GET /v1/tenants/{tenant}/pheromones` (table and stats) and `DELETE` (reset the colony).

use aco_core::cluster::colony_name;
use aco_core::demand::validate_tenant;
use worker::Method;

use super::extender_verbs::{colony_fetch, send_unacknowledged};
use super::{Call, Handled};
use crate::auth::require_admin;
use crate::colony_cache;
use crate::http::{text_response, ApiError};

pub async fn pheromones(call: &mut Call, tenant: &str, method: Method) -> Handled {
    require_admin(&call.req, &call.env)?;
    validate_tenant(tenant).map_err(|m| ApiError::field(400, "tenant", m))?;
    if !call.config.tenant_allowed(tenant) {
        return Err(ApiError::field(
            404,
            "tenant",
            format!("tenant {tenant:?} is not allowed (TENANTS / TENANT_PATTERN)"),
        ));
    }
    let reset = method == Method::Delete;
    let colony = colony_name(&call.cluster, tenant);
    // Read your writes: decisions this isolate scored from its copy reach the colony first.
    send_unacknowledged(&call.bindings, &colony, tenant).await?;
    let text = colony_fetch::<()>(&call.bindings, &colony, method, "/pheromones", None).await?;
    if reset {
        colony_cache::forget(&colony);
    }
    Ok(text_response(200, text, "application/json"))
}
