//! `POST /v1/placements`: confirmed placements (from an in-cluster watcher reporting
//! `pod.spec.nodeName` after binding) and, later, their outcomes. The first report of a pod
//! deposits pheromone in its tenant's colony, using the decision remembered for that pod; a
//! later report with an `outcome` updates the node's reliability once; replays are counted as
//! duplicates and change nothing; unknown pods are counted and ignored (see
//! `aco_core::colony::report`).

use aco_core::metrics;
use std::collections::BTreeMap;

use aco_core::api::batch_failure::{TenantApplied, TenantCommit};
use aco_core::api::placements::{PlacementReport, PlacementsBatch, PlacementsSummary};
use aco_core::cluster::TenantId;
use aco_core::colony_store::wire::{PlacementItem, PlacementsRequest};
use aco_core::config::Config;

use super::admission::{admit_tenant, count_overflow, over_limit, TenantAdmission};
use super::{Call, Handled};
use crate::auth::require_admin;
use crate::colony::{client, copy, queue};
use crate::http::{json_response, parse_json, read_body, ApiError};

/// At most this many placements per request.
const MAX_BATCH: usize = 5_000;

/// A reported tenant, where it enters: a valid name, allowed by `TENANTS` / `TENANT_PATTERN`.
/// Takes the whole Config: the tenant policy is derived from two vars, in no group.
pub(super) fn parse_tenant(tenant: &str, config: &Config) -> Result<TenantId, String> {
    let tenant = TenantId::parse(tenant)?;
    if !config.tenant_allowed(tenant.as_str()) {
        return Err(format!(
            "tenant {tenant:?} is not allowed (TENANTS / TENANT_PATTERN)"
        ));
    }
    Ok(tenant)
}

/// A batch some of whose tenants' colonies failed: 503 (the first failure's) naming what each
/// tenant did (`tenants.<t>.committed`), so that the reporter retries the whole batch.
pub(super) fn partial_failure(per_tenant: BTreeMap<String, TenantCommit>, e: ApiError) -> ApiError {
    let failed = per_tenant.values().filter(|t| !t.committed).count();
    let message = format!(
        "{failed} of {} tenants' colonies failed ({}); the others committed. Retry the whole batch: pods already counted are duplicates",
        per_tenant.len(),
        e.message
    );
    ApiError {
        message,
        detail: Some(serde_json::json!({ "tenants": per_tenant })),
        ..e
    }
}

/// A report made ready for its colony: (tenant, item).
fn validate(
    i: usize,
    r: PlacementReport,
    config: &Config,
) -> Result<(TenantId, PlacementItem), ApiError> {
    let field = |f: &str| format!("placements[{i}].{f}");
    // The node and a `podUid` are typed, valid as the batch was read; a key made from the
    // namespace and name is checked as it is made.
    let key = r
        .pod_key()
        .ok_or_else(|| ApiError::field(400, field("podUid"), "need podUid, or namespace and name"))?
        .map_err(|m| ApiError::field(400, field("podUid"), m))?;
    let tenant = r
        .tenant
        .clone()
        .or_else(|| r.namespace.clone())
        .ok_or_else(|| {
            ApiError::field(
                400,
                field("tenant"),
                "need tenant (or namespace, the default tenant)",
            )
        })?;
    let tenant =
        parse_tenant(&tenant, config).map_err(|m| ApiError::field(400, field("tenant"), m))?;
    if let Some(o) = r.outcome {
        o.quality()
            .map_err(|m| ApiError::field(400, field("outcome"), m))?;
    }
    Ok((
        tenant,
        PlacementItem {
            key,
            node: r.node,
            outcome: r.outcome,
        },
    ))
}

/// Sends validated placements to their colonies, one call (one transaction) per tenant.
///
/// Tenants are separate Durable Objects, so a batch spanning several cannot commit atomically.
/// Instead every tenant is tried, and a failure answers 503 with what each tenant did
/// (`tenants.<t>.committed`). A retry of the whole batch is then exact: each colony is idempotent
/// per pod (a committed pod is a `duplicate` the second time, an outcome applies once), so every
/// pod is counted exactly once across the attempts.
pub async fn deliver(
    call: &mut Call,
    items: Vec<(TenantId, PlacementItem)>,
    source: &str,
) -> Result<PlacementsSummary, ApiError> {
    let mut by_tenant: BTreeMap<TenantId, Vec<PlacementItem>> = BTreeMap::new();
    let received = items.len() as u64;
    for (tenant, item) in items {
        by_tenant.entry(tenant).or_default().push(item);
    }
    let mut summary = PlacementsSummary {
        received,
        ..Default::default()
    };
    let mut per_tenant = BTreeMap::new();
    let mut first_failure: Option<ApiError> = None;
    for (tenant, items) in by_tenant {
        let colony = match admit_tenant(call, &tenant, source).await {
            Ok(TenantAdmission::Admitted(colony)) => colony,
            // No colony, so no decision any of these pods could confirm: they are unknown
            // pods, and retrying would not change that. (Callers refuse tenants outside the
            // policy before they get here.)
            Ok(refused) => {
                let why = match refused {
                    TenantAdmission::OverLimit => {
                        // One was counted by the admission.
                        count_overflow(call, source, items.len() as u64 - 1);
                        over_limit(call, &tenant).message
                    }
                    _ => format!("tenant {tenant:?} is not allowed (TENANTS / TENANT_PATTERN)"),
                };
                summary.unknown_pod += items.len() as u64;
                per_tenant.insert(tenant.to_string(), TenantCommit::refused(why));
                continue;
            }
            Err(e) => {
                per_tenant.insert(tenant.to_string(), TenantCommit::failed(&e.message));
                first_failure.get_or_insert(e);
                continue;
            }
        };
        // Decisions this isolate scored but has not seen durable go first (applied once).
        let decisions = queue::not_durable(&colony);
        let req = PlacementsRequest {
            decisions,
            items,
            now_ms: call.now_ms,
            known_version: copy::version_of(&colony),
        };
        match client::call(&call.bindings, &colony, &req).await {
            Ok(r) => {
                client::count_recorded(queue::answered(&colony, &req.decisions, r.durability));
                // This isolate's copy follows the batch (the reply carries the colony if the
                // copy is behind), so the next prioritize here needs no fetch.
                copy::refresh(&colony, r.version, r.snapshot.clone(), call.now_ms);
                summary.deposited += r.deposited;
                summary.outcomes += r.outcomes;
                summary.duplicates += r.duplicates;
                summary.unknown_pod += r.unknown_pod;
                summary.not_a_candidate += r.not_a_candidate;
                summary.held += r.held;
                let applied = TenantApplied {
                    deposited: r.deposited,
                    outcomes: r.outcomes,
                    duplicates: r.duplicates,
                    unknown_pod: r.unknown_pod,
                    not_a_candidate: r.not_a_candidate,
                    held: r.held,
                    dropped: r.dropped,
                };
                per_tenant.insert(tenant.to_string(), TenantCommit::committed(Some(applied)));
            }
            Err(e) => {
                per_tenant.insert(tenant.to_string(), TenantCommit::failed(&e.message));
                first_failure.get_or_insert(e);
            }
        }
    }
    call.event
        .count(&metrics::PLACEMENTS_RECEIVED, &[source], received as f64);
    match first_failure {
        None => Ok(summary),
        Some(e) => Err(partial_failure(per_tenant, e)),
    }
}

pub async fn placements(call: &mut Call) -> Handled {
    require_admin(&call.req, &call.env)?;
    let body = read_body(&mut call.req, call.config.serving.max_body_bytes).await?;
    let batch: PlacementsBatch = parse_json(&body, "placements batch")?;
    if batch.placements.len() > MAX_BATCH {
        return Err(ApiError::field(
            413,
            "placements",
            format!("at most {MAX_BATCH} placements per request"),
        ));
    }
    // Validate everything before touching any colony: a bad batch changes nothing.
    let items = batch
        .placements
        .into_iter()
        .enumerate()
        .map(|(i, r)| validate(i, r, &call.config).map_err(|e| e.for_item(i)))
        .collect::<Result<Vec<_>, _>>()?;
    let summary = deliver(call, items, "placements").await?;
    Ok(json_response(200, &summary))
}
