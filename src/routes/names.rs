//! `GET /v1/clusters` and `GET [/c/<cluster>]/v1/tenants` (admin): the named clusters (the
//! default one is always there and not listed) and a cluster's tenants with a colony, from the
//! Registry, a page at a time (`?after=<name>&limit=<n>`, `aco_core::registry::Page`: `next` is
//! the `after` of the next page). One Registry request each; they only read, so listing a
//! cluster's tenants does not make the cluster exist (`Route::admits_cluster`).

use aco_core::cluster::{ClusterId, TenantId};
use aco_core::registry::{NameKind, PAGE_LIMIT};
use serde::Deserialize;

use super::{Call, Handled};
use crate::auth::require_admin;
use crate::http::{json_response, ApiError};
use crate::registry::client;

#[derive(Deserialize)]
struct PageQuery {
    after: Option<String>,
    limit: Option<String>,
}

/// `after` (a cluster id or a tenant, `N`) and `limit` (1..=PAGE_LIMIT, default PAGE_LIMIT).
fn page_query<N: for<'a> TryFrom<&'a str, Error = String>>(
    call: &Call,
) -> Result<(Option<N>, usize), ApiError> {
    let q: PageQuery = call
        .req
        .query()
        .map_err(|e| ApiError::new(400, format!("query: {e}")))?;
    let after = q
        .after
        .as_deref()
        .map(N::try_from)
        .transpose()
        .map_err(|m| ApiError::field(400, "after", m))?;
    let limit = match q.limit.as_deref() {
        None => PAGE_LIMIT,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=PAGE_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::field(
                    400,
                    "limit",
                    format!("limit {text:?} is not within 1..={PAGE_LIMIT}"),
                )
            })?,
    };
    Ok((after, limit))
}

pub async fn clusters(call: &mut Call) -> Handled {
    require_admin(&call.req, &call.env)?;
    let (after, limit) = page_query::<ClusterId>(call)?;
    let page = client::page(
        &call.bindings,
        NameKind::Cluster,
        None,
        after.as_ref().map(ClusterId::as_str),
        limit,
    )
    .await?;
    Ok(json_response(200, &page))
}

pub async fn tenants(call: &mut Call) -> Handled {
    require_admin(&call.req, &call.env)?;
    let (after, limit) = page_query::<TenantId>(call)?;
    let page = client::page(
        &call.bindings,
        NameKind::Colony,
        Some(&call.cluster),
        after.as_ref().map(TenantId::as_str),
        limit,
    )
    .await?;
    Ok(json_response(200, &page))
}
