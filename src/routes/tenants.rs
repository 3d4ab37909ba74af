//! `GET /v1/tenants/{tenant}/pheromones` (table and stats, `aco_core::api::pheromones`) and
//! `DELETE` (reset the colony).

use aco_core::cluster::TenantId;
use worker::Method;

use super::admission::admitted_colony;
use super::{Call, Handled};
use crate::auth::require_admin;
use crate::colony::api::{ResetRequest, TableRequest};
use crate::colony::{client, copy, queue};
use crate::http::json_response;

pub async fn pheromones(call: &mut Call, tenant: &TenantId, method: Method) -> Handled {
    require_admin(&call.req, &call.env)?;
    let colony = admitted_colony(call, tenant, "pheromones").await?;
    if method == Method::Delete {
        // What this isolate holds for the colony is forgotten with it.
        queue::forget(&colony);
        let reply = client::call(
            &call.bindings,
            &colony,
            &ResetRequest {
                now_ms: call.now_ms,
            },
        )
        .await?;
        copy::forget(&colony);
        Ok(json_response(200, &reply))
    } else {
        // Read your writes: decisions this isolate scored from its copy reach the colony first.
        client::send_not_durable(&call.bindings, &colony).await?;
        let table = TableRequest {
            now_ms: call.now_ms,
        };
        Ok(json_response(
            200,
            &client::call(&call.bindings, &colony, &table).await?,
        ))
    }
}
