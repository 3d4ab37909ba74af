//! Whether a tenant of this call's cluster may have a colony: `TENANTS`/`TENANT_PATTERN` say
//! which names may, the Registry how many (`MAX_COLONIES`, over all clusters). Every route that
//! would create or touch a Colony object asks here first, so neither a caller inventing tenant
//! names nor pods labelled with them can grow the colonies, their storage or `/metrics` beyond
//! the bound. Tenants beyond it are counted together under `tenant="other"`.

use aco_core::cluster::TenantId;
use aco_core::metrics;
use aco_core::registry::NameKind;

use super::Call;
use crate::colony::api::ColonyName;
use crate::http::ApiError;
use crate::registry;

pub enum TenantAdmission {
    Admitted(ColonyName),
    /// Outside `TENANTS`/`TENANT_PATTERN`.
    NotAllowed,
    /// Allowed, but `MAX_COLONIES` colonies exist (counted as `tenant="other"`).
    OverLimit,
}

/// Asks the policy, then the Registry (one request per new colony per isolate). `Err`: the
/// Registry did not answer.
pub async fn admit_tenant(
    call: &mut Call,
    tenant: &TenantId,
    verb: &str,
) -> Result<TenantAdmission, ApiError> {
    if !call.config.tenant_allowed(tenant.as_str()) {
        return Ok(TenantAdmission::NotAllowed);
    }
    let colony = ColonyName::new(&call.cluster, tenant);
    if registry::client::admit(
        &call.bindings,
        NameKind::Colony,
        &colony.object_name(),
        call.now_ms,
    )
    .await?
    {
        Ok(TenantAdmission::Admitted(colony))
    } else {
        count_overflow(call, verb, 1);
        Ok(TenantAdmission::OverLimit)
    }
}

pub fn count_overflow(call: &mut Call, verb: &str, requests: u64) {
    call.event
        .count(&metrics::TENANT_OVERFLOW, &[verb, "other"], requests as f64);
}

/// For the admin routes that read or reset one tenant's colony: the colony, or 404 naming
/// `tenant` (not allowed, or beyond `MAX_COLONIES`).
pub async fn admitted_colony(
    call: &mut Call,
    tenant: &TenantId,
    verb: &str,
) -> Result<ColonyName, ApiError> {
    match admit_tenant(call, tenant, verb).await? {
        TenantAdmission::Admitted(colony) => Ok(colony),
        TenantAdmission::NotAllowed => Err(ApiError::field(
            404,
            "tenant",
            format!("tenant {tenant:?} is not allowed (TENANTS / TENANT_PATTERN)"),
        )),
        TenantAdmission::OverLimit => Err(over_limit(call, tenant)),
    }
}

pub fn over_limit(call: &Call, tenant: &TenantId) -> ApiError {
    ApiError::field(
        404,
        "tenant",
        format!(
            "tenant {tenant:?} has no colony: MAX_COLONIES ({}) colonies exist",
            call.config.bounds.max_colonies
        ),
    )
}
