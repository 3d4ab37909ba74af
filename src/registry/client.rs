//! The Worker's side of the Registry: whether a cluster or colony may exist, asked once per
//! name per isolate (an admitted name stays admitted, so the answer is kept), and the pages of
//! admitted names the operator's listings read (`routes/names.rs`).
//!
//! A refusal is remembered for `aco_core::registry::FULL_RECHECK_MS` per kind: once the registry is full, a caller
//! inventing names costs no Durable Object request per name, only the refusal.

use aco_core::registry::{AdmitReply, AdmitRequest, NameKind, Page};
use worker::{Method, Request, RequestInit};

use super::{BINDING, CLASS, INSTANCE};
use crate::bindings::Bindings;
use crate::http::ApiError;
use crate::isolate;

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
    let body = serde_json::to_string(&AdmitRequest {
        kind,
        name: name.to_string(),
    })
    .map_err(|e| ApiError::unavailable("registry request", e))?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(body.into()));
    let req = Request::new_with_init("https://registry/admit", &init)
        .map_err(|e| ApiError::unavailable("registry", e))?;
    let mut resp = bindings.do_fetch(BINDING, CLASS, INSTANCE, req).await?;
    if resp.status_code() != 200 {
        let text = resp.text().await.unwrap_or_default();
        return Err(ApiError::new(
            503,
            format!("registry refused {kind:?} {name:?}: {text}"),
        ));
    }
    let reply: AdmitReply = resp
        .json()
        .await
        .map_err(|e| ApiError::unavailable("registry reply", e))?;
    isolate::with(|i| i.names.borrow_mut().answered(kind, name, &reply, now_ms));
    Ok(reply.admitted())
}

/// One page of admitted names: named clusters, or (`cluster` given) that cluster's tenants, in
/// order after `after`. One Registry request.
pub async fn page(
    bindings: &Bindings,
    kind: NameKind,
    cluster: Option<&str>,
    after: Option<&str>,
    limit: usize,
) -> Result<Page, ApiError> {
    let mut url = format!(
        "https://registry/names?kind={}&limit={limit}",
        kind.as_str()
    );
    // Names are DNS labels and tenant names (validated by the caller): nothing to escape.
    if let Some(c) = cluster {
        url.push_str(&format!("&cluster={c}"));
    }
    if let Some(a) = after {
        url.push_str(&format!("&after={a}"));
    }
    let req = Request::new(&url, Method::Get).map_err(|e| ApiError::unavailable("registry", e))?;
    let mut resp = bindings.do_fetch(BINDING, CLASS, INSTANCE, req).await?;
    if resp.status_code() != 200 {
        let text = resp.text().await.unwrap_or_default();
        return Err(ApiError::new(503, format!("registry: {text}")));
    }
    resp.json()
        .await
        .map_err(|e| ApiError::unavailable("registry reply", e))
}
