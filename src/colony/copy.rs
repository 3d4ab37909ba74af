//! This isolate's copies of tenants' colonies (τ table and per-node outcome history), so that
//! prioritize scores without waiting for the tenant's Durable Object. Each cluster's pipeline
//! holds its tenants' copies (`aco_core::pipeline::ColonyCopies`, where the consistency this
//! trades is described); this file names them by `ColonyName` and bounds them across the
//! isolate's clusters.

use aco_core::colony::TenantColony;
use aco_core::colony_store::wire::ColonySnapshot;

use super::api::ColonyName;
use crate::pipeline;

/// Tenants' copies kept per isolate, whatever their clusters; beyond it the least recently
/// confirmed is dropped.
const MAX_TENANTS: usize = 256;

/// Runs `f` on the tenant's copy if it was confirmed within `max_age_ms` (0: never fresh, as
/// `COLONY_SNAPSHOT_MS = 0` means); `None` otherwise.
pub fn with_fresh<T>(
    colony: &ColonyName,
    now_ms: u64,
    max_age_ms: u64,
    f: impl FnOnce(&mut TenantColony) -> T,
) -> Option<(u64, T)> {
    pipeline::with(&colony.cluster, |s| {
        s.pipeline
            .colonies()
            .with_fresh(colony.tenant.as_str(), now_ms, max_age_ms, f)
    })
}

/// Drops the tenant's copy (its colony was reset).
pub fn forget(colony: &ColonyName) {
    pipeline::with(&colony.cluster, |s| {
        s.pipeline.colonies().forget(colony.tenant.as_str())
    });
}

/// The colony answered: `snapshot` replaces the copy; without one, `version` confirms the copy
/// if it is that version and drops it otherwise (the next prioritize fetches the colony).
pub fn refresh(colony: &ColonyName, version: u64, snapshot: Option<ColonySnapshot>, now_ms: u64) {
    pipeline::with_all(|clusters| {
        let Some(s) = snapshot else {
            if let Some(c) = clusters.get_mut(colony.cluster.as_str()) {
                c.pipeline
                    .colonies()
                    .confirm(colony.tenant.as_str(), version, now_ms);
            }
            return;
        };
        let held = |c: &str, t: &str| {
            clusters
                .get(c)
                .is_some_and(|c| c.pipeline.colonies_ref().contains(t))
        };
        let total: usize = clusters
            .values()
            .map(|c| c.pipeline.colonies_ref().len())
            .sum();
        if !held(colony.cluster.as_str(), colony.tenant.as_str()) && total >= MAX_TENANTS {
            let oldest = clusters
                .iter()
                .filter_map(|(cluster, c)| {
                    let (tenant, at) = c.pipeline.colonies_ref().least_recent()?;
                    Some((at, cluster.clone(), tenant.to_string()))
                })
                .min();
            if let Some((_, cluster, tenant)) = oldest {
                if let Some(c) = clusters.get_mut(&cluster) {
                    c.pipeline.colonies().forget(&tenant);
                }
            }
        }
        clusters
            .entry(colony.cluster.to_string())
            .or_default()
            .pipeline
            .colonies()
            .install(colony.tenant.as_str(), s.version, s.colony, now_ms);
    })
}

/// The version of this isolate's copy of the colony, if it holds one.
pub fn version_of(colony: &ColonyName) -> Option<u64> {
    pipeline::with(&colony.cluster, |s| {
        s.pipeline.colonies_ref().version_of(colony.tenant.as_str())
    })
}
