//! Shadow mode: `POST /v1/shadow` (pods another scheduler placed, as the reporter saw them bound)
//! and `GET /v1/tenants/{tenant}/shadow` (what the tenant's colony would have done instead).
//!
//! A batch costs one facts read (every node of the cluster, from this isolate's copy) and per
//! tenant at most two colony requests: the colony itself when this isolate holds no copy
//! fresher than `COLONY_SNAPSHOT_MS` (as prioritize scores from one), then the batch. Each pod
//! is scored by `aco_core::shadow` — the filter over the whole cluster, the colony's argmax, the
//! marginal cost of both nodes with the pod's own request taken off its node — and the colony
//! keeps the summary and a record per pod (replays are duplicates, a later outcome updates the
//! node's reliability once, τ is never touched). Validated whole first: a bad batch changes
//! nothing.

use aco_core::metrics;
use std::collections::BTreeMap;

use aco_core::api::batch_failure::TenantCommit;
use aco_core::api::shadow::{ShadowBatch, ShadowBatchSummary, ShadowReport, ShadowSummaryReply};
use aco_core::cluster::TenantId;
use aco_core::colony::{Outcome, TenantColony};
use aco_core::colony_store::wire::{ShadowItem, ShadowReply, ShadowRequest};
use aco_core::config::Config;
use aco_core::demand::{tenant_of, DemandError, PodDemand};
use aco_core::k8s::PodView;
use aco_core::names::{NodeName, PodKey};
use aco_core::shadow::{ShadowCluster, ShadowScore, ShadowSummary};

use super::admission::{
    admit_tenant, admitted_colony, count_overflow, over_limit, TenantAdmission,
};
use super::placements::{parse_tenant, partial_failure};
use super::{Call, Handled};
use crate::auth::require_admin;
use crate::colony::api::{ColonyName, ShadowSummaryRequest};
use crate::colony::{client, copy};
use crate::facts::client as facts_client;
use crate::http::{json_response, parse_json, read_body, ApiError};

/// At most this many pods per request: each is scored against every node of the cluster, so a
/// batch of 1,000 over 5,000 nodes is 5 M node evaluations, a few seconds of CPU.
pub const MAX_BATCH: usize = 1_000;

/// A report made ready for scoring.
struct Valid {
    tenant: TenantId,
    key: PodKey,
    node: NodeName,
    /// `None`: a pod the extender itself could not evaluate (an unusable annotation; its filter
    /// would reject every node) — counted as not feasible, never an error of the reporter's.
    demand: Option<PodDemand>,
    outcome: Option<Outcome>,
}

/// Takes the whole Config: the tenant policy (in no group) beside the pod and node keys.
fn validate(i: usize, r: ShadowReport, config: &Config) -> Result<Valid, ApiError> {
    let field = |f: &str| format!("placements[{i}].{f}");
    // The node and a `podUid` are typed, valid as the batch was read.
    let reported_key = r.pod_key();
    let raw = r
        .pod
        .ok_or_else(|| ApiError::field(400, field("pod"), "need the v1.Pod as bound"))?;
    let mut pod: PodView = serde_json::from_value(raw)
        .map_err(|e| ApiError::field(400, field("pod"), format!("invalid Pod: {e}")))?;
    // The report's key, else the pod's own (its UID, else namespace/name): checked as it is
    // made from its parts.
    let key = reported_key
        .or_else(|| {
            (!pod.metadata.uid.is_empty() || !pod.metadata.name.is_empty())
                .then(|| PodKey::try_from(pod.decision_key()))
        })
        .ok_or_else(|| ApiError::field(400, field("podUid"), "need podUid, or namespace and name"))?
        .map_err(|m| ApiError::field(400, field("podUid"), m))?;
    let tenant = match r.tenant {
        Some(t) => t,
        None => tenant_of(&pod, &config.pod_keys).map_err(|e| {
            ApiError::field(
                400,
                field("tenant"),
                format!("no tenant given and the pod's is unusable: {e}"),
            )
        })?,
    };
    let tenant =
        parse_tenant(&tenant, config).map_err(|m| ApiError::field(400, field("tenant"), m))?;
    if let Some(o) = r.outcome {
        o.quality()
            .map_err(|m| ApiError::field(400, field("outcome"), m))?;
    }
    // The report's tenant wins over the pod's (TENANT_SOURCE=label without the label, say).
    pod.metadata
        .labels
        .insert(config.pod_keys.tenant_label.clone(), tenant.to_string());
    let demand = match PodDemand::from_pod(&pod, &config.pod_keys, &config.node_keys) {
        Ok(d) => Some(d),
        Err(DemandError::Resource(e)) => {
            let path = e
                .field
                .strip_prefix("Pod")
                .map_or_else(|| field("pod"), |rest| format!("{}{rest}", field("pod")));
            return Err(ApiError::field(400, path, e.to_string()));
        }
        Err(_) => None,
    };
    Ok(Valid {
        tenant,
        key,
        node: r.node,
        demand,
        outcome: r.outcome,
    })
}

pub async fn report(call: &mut Call) -> Handled {
    require_admin(&call.req, &call.env)?;
    let body = read_body(&mut call.req, call.config.serving.max_body_bytes).await?;
    let batch: ShadowBatch = parse_json(&body, "shadow batch")?;
    if batch.placements.len() > MAX_BATCH {
        return Err(ApiError::field(
            413,
            "placements",
            format!("at most {MAX_BATCH} pods per request"),
        ));
    }
    let reports = batch
        .placements
        .into_iter()
        .enumerate()
        .map(|(i, r)| validate(i, r, &call.config).map_err(|e| e.for_item(i)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut summary = ShadowBatchSummary {
        received: reports.len() as u64,
        ..Default::default()
    };
    if reports.is_empty() {
        return Ok(json_response(200, &summary));
    }
    let config = call.config.clone();
    let facts = facts_client::load_all(&call.bindings, &call.cluster, call.now_ms, &config).await?;
    // The outlook prioritize would score with, from the copy load_all just refreshed.
    let outlook =
        crate::pipeline::with(&call.cluster, |s| s.pipeline.outlook(call.now_ms, &config));
    let cluster = ShadowCluster::new(&facts, &outlook, call.now_ms, &config);
    let mut by_tenant: BTreeMap<TenantId, Vec<Valid>> = BTreeMap::new();
    for r in reports {
        by_tenant.entry(r.tenant.clone()).or_default().push(r);
    }
    let mut per_tenant = BTreeMap::new();
    let mut first_failure: Option<ApiError> = None;
    for (tenant, reports) in by_tenant {
        let colony = match admit_tenant(call, &tenant, "shadow").await {
            Ok(TenantAdmission::Admitted(colony)) => colony,
            Ok(_) => {
                // Beyond MAX_COLONIES (the policy was checked in validation): nothing to score
                // into, and a retry would not change that.
                count_overflow(call, "shadow", reports.len() as u64 - 1);
                let why = over_limit(call, &tenant).message;
                per_tenant.insert(tenant.to_string(), TenantCommit::refused(why));
                continue;
            }
            Err(e) => {
                per_tenant.insert(tenant.to_string(), TenantCommit::failed(&e.message));
                first_failure.get_or_insert(e);
                continue;
            }
        };
        let result = deliver(call, &cluster, &colony, reports, &config).await;
        match result {
            Ok(r) => {
                summary.scored += r.scored;
                summary.outcomes += r.outcomes;
                summary.duplicates += r.duplicates;
                summary.unknown_pod += r.unknown_pod;
                summary.not_feasible += r.not_feasible;
                per_tenant.insert(tenant.to_string(), TenantCommit::committed(None));
            }
            Err(e) => {
                per_tenant.insert(tenant.to_string(), TenantCommit::failed(&e.message));
                first_failure.get_or_insert(e);
            }
        }
    }
    call.event.count(
        &metrics::PLACEMENTS_RECEIVED,
        &["shadow"],
        summary.received as f64,
    );
    match first_failure {
        None => Ok(json_response(200, &summary)),
        // As for placements: tenants are separate objects, so a failure names what committed,
        // and a retry of the whole batch is exact (committed pods are duplicates).
        Some(e) => Err(partial_failure(per_tenant, e)),
    }
}

/// Scores one tenant's pods with its colony and has the colony apply them (one transaction).
/// Takes the whole Config: it scores with the cluster (as the verbs) and reads `serving`.
async fn deliver(
    call: &Call,
    cluster: &ShadowCluster<'_>,
    colony: &ColonyName,
    reports: Vec<Valid>,
    config: &Config,
) -> Result<ShadowReply, ApiError> {
    let score_all = |c: &mut TenantColony| -> Vec<ShadowItem> {
        reports
            .iter()
            .map(|r| ShadowItem {
                key: r.key.clone(),
                node: r.node.clone(),
                outcome: r.outcome,
                score: match &r.demand {
                    Some(d) => ShadowScore::from(cluster.score(d, &r.node, c, config)),
                    None if !cluster.has_node(&r.node) => ShadowScore::UnknownNode,
                    None => ShadowScore::NotFeasible,
                },
            })
            .collect()
    };
    // The colony as prioritize would score with it: this isolate's copy when fresh, else fetched.
    let items = match copy::with_fresh(
        colony,
        call.now_ms,
        config.serving.colony_snapshot_ms,
        score_all,
    ) {
        Some((_, items)) => items,
        None => {
            let mut snapshot = client::fetch_copy(&call.bindings, colony, call.now_ms).await?;
            score_all(&mut snapshot.colony)
        }
    };
    let req = ShadowRequest {
        items,
        now_ms: call.now_ms,
    };
    let reply = client::call(&call.bindings, colony, &req).await?;
    // Outcomes move reliability: a copy of an older version is dropped (or confirmed if current).
    copy::refresh(colony, reply.version, None, call.now_ms);
    Ok(reply)
}

/// `GET /v1/tenants/{tenant}/shadow`: the summary with the figures derived from it.
pub async fn summary(call: &mut Call, tenant: &TenantId) -> Handled {
    require_admin(&call.req, &call.env)?;
    let colony = admitted_colony(call, tenant, "shadow_summary").await?;
    let s: ShadowSummary = client::call(&call.bindings, &colony, &ShadowSummaryRequest {}).await?;
    Ok(json_response(
        200,
        &ShadowSummaryReply::of(tenant.as_str(), call.cluster.as_str(), &s),
    ))
}
