//! The Worker's side of the Registry: whether a cluster or colony may exist, asked once per
//! name per isolate (an admitted name stays admitted, so the answer is kept), and the pages of
//! admitted names the operator's listings read (`routes/names.rs`).
//!
//! A refusal is remembered for `aco_core::registry::FULL_RECHECK_MS` per kind: once the registry is full, a caller
//! inventing names costs no Durable Object request per name, only the refusal.

use aco_core::cluster::ClusterId;
use aco_core::registry::{AdmitRequest, NameKind, Page, PageRequest};

use super::api::INSTANCE;
use crate::bindings::Bindings;
use crate::http::ApiError;
use crate::isolate;
use crate::object_call;

/// Whether `name` may exist: `Ok(true)` admitted (now or before), `Ok(false)` the registry is
/// full, `Err` the registry did not answer (the caller decides whether to fail open).
pub async fn admit(
    bindings: &Bindings,
    kind: NameKind,
    name: &str,
    now_ms: u64,
) -> Result<bool, ApiError> {
    let known = isolate::with(|i| i.names.borrow().known(kind, name, now_ms));
    if let Some(answer) = known {
        return Ok(answer);
    }
    let request = AdmitRequest {
        kind,
        name: name.to_string(),
    };
    let reply = object_call::call(bindings, INSTANCE, &request).await?;
    isolate::with(|i| i.names.borrow_mut().answered(kind, name, &reply, now_ms));
    Ok(reply.admitted())
}

/// One page of admitted names: named clusters, or (`cluster` given) that cluster's tenants, in
/// order after `after`. One Registry request.
pub async fn page(
    bindings: &Bindings,
    kind: NameKind,
    cluster: Option<&ClusterId>,
    after: Option<&str>,
    limit: usize,
) -> Result<Page, ApiError> {
    let request = PageRequest {
        kind,
        cluster: cluster.map(ClusterId::to_string),
        after: after.map(str::to_string),
        limit,
    };
    object_call::call(bindings, INSTANCE, &request).await
}
