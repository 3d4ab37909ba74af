//! `GET [/c/<cluster>]/v1/tenants/{tenant}/export` and `PUT …/import[?allowRename=true]`
//! (admin): a colony's learned state as a file and that file put back
//! (`aco_core::api::colony_export`; `acoctl export` / `import`).
//!
//! An export is one colony request. An import is checked whole here — format, version, cluster
//! and tenant, checksum, every value — before anything is made or changed, then applied by the
//! colony in one commit (one transaction: on failure nothing changes); the same file imported
//! twice changes nothing the second time. Both are bounded by `MAX_BODY_BYTES`: an import body
//! is read up to it (413 above), and an export that could not be imported back is refused.

use aco_core::api::colony_export::ColonyExport;
use aco_core::cluster::TenantId;
use serde::Deserialize;

use super::admission::admitted_colony;
use super::{Call, Handled};
use crate::auth::require_admin;
use crate::colony::api::{ExportRequest, ImportRequest};
use crate::colony::{client, copy, queue};
use crate::http::{json_response, read_body, text_response, ApiError};

pub async fn export(call: &mut Call, tenant: &TenantId) -> Handled {
    require_admin(&call.req, &call.env)?;
    let colony = admitted_colony(call, tenant, "export").await?;
    let reply = client::call(&call.bindings, &colony, &ExportRequest {}).await?;
    let file = ColonyExport::new(
        call.cluster.as_str(),
        tenant.as_str(),
        reply.version,
        call.now_ms,
        &reply.state,
    )
    .and_then(|f| serde_json::to_string(&f))
    .map_err(|e| ApiError::unavailable("serialising the export", e))?;
    if file.len() > call.config.serving.max_body_bytes {
        return Err(ApiError::new(
            503,
            format!(
                "the export of tenant {tenant:?} is {} bytes, more than MAX_BODY_BYTES ({}): it could not be imported; raise MAX_BODY_BYTES",
                file.len(),
                call.config.serving.max_body_bytes
            ),
        ));
    }
    Ok(text_response(200, file, "application/json"))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImportQuery {
    allow_rename: Option<String>,
}

pub async fn import(call: &mut Call, tenant: &TenantId) -> Handled {
    require_admin(&call.req, &call.env)?;
    let query: ImportQuery = call
        .req
        .query()
        .map_err(|e| ApiError::new(400, format!("query: {e}")))?;
    let allow_rename = match query.allow_rename.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::field(
                400,
                "allowRename",
                format!("allowRename is {other:?}, not true or false"),
            ))
        }
    };
    let body = read_body(&mut call.req, call.config.serving.max_body_bytes).await?;
    let state = ColonyExport::read(&body, call.cluster.as_str(), tenant.as_str(), allow_rename)
        .map_err(|r| ApiError::field(r.status, r.field, r.message))?;
    drop(body);
    let colony = admitted_colony(call, tenant, "import").await?;
    // Decisions this isolate scored are in the colony before it decides whether the import
    // changes it (if it does, they go with the rest, as in a reset).
    client::send_not_durable(&call.bindings, &colony).await?;
    let reply = client::call(
        &call.bindings,
        &colony,
        &ImportRequest {
            state,
            now_ms: call.now_ms,
        },
    )
    .await?;
    if reply.changed {
        queue::forget(&colony);
        copy::forget(&colony);
    }
    Ok(json_response(200, &reply))
}
