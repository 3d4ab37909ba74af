//! The Colony object's storage before the ledger (tables `trails`, `outcomes`, `meta`,
//! `decisions`, `confirmed`, `shadow`): read once, the first time an upgraded object starts, into
//! a store whose first commit writes the snapshot (and segment) that replace them.

use std::collections::BTreeMap;

use super::pod_index::{key_hash, IndexChange};
use super::{corrupt, ColonyStore, CorruptState, StoreMeta, MAX_PODS_REMEMBERED};
use crate::colony::{ColonyCounters, Confirmed, Decision, Trail};
use crate::config::Config;
use crate::heuristic::OutcomeStats;
use crate::shadow::{ShadowRecord, ShadowSummary};

/// The old tables' rows, as SQLite hands them over (numbers as f64).
#[derive(Debug, Default, Clone)]
pub struct LegacyRows {
    /// (node, tau, epoch)
    pub trails: Vec<(String, f64, f64)>,
    /// (node, successes, failures)
    pub outcomes: Vec<(String, f64, f64)>,
    /// (name, value)
    pub meta: Vec<(String, String)>,
    /// (key, body)
    pub decisions: Vec<(String, String)>,
    /// (key, node, confirmed_ms, outcome_recorded, deposit_quality, deposit_epoch)
    pub confirmed: Vec<(String, String, f64, f64, f64, f64)>,
    /// (key, node, seen_ms, outcome_recorded)
    pub shadow: Vec<(String, String, f64, f64)>,
}

pub const LEGACY_TABLES: [&str; 6] = [
    "trails",
    "outcomes",
    "meta",
    "decisions",
    "confirmed",
    "shadow",
];

fn whole(v: f64, what: impl Fn() -> String) -> Result<u64, CorruptState> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64 {
        Ok(v as u64)
    } else {
        Err(corrupt(what(), v))
    }
}

fn non_negative(v: f64, what: impl Fn() -> String) -> Result<f64, CorruptState> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(corrupt(what(), v))
    }
}

impl ColonyStore {
    /// A store holding what the old tables held; dirty, so that its first commit persists it.
    pub fn import_legacy(
        rows: LegacyRows,
        incarnation: u64,
        now_ms: u64,
        config: &Config,
    ) -> Result<Self, CorruptState> {
        let mut store = Self::new(incarnation);
        let meta: BTreeMap<String, String> = rows.meta.into_iter().collect();
        let c = &mut store.colony;
        for (node, tau, epoch) in rows.trails {
            let tau = non_negative(tau, || format!("trails[{node}].tau"))?;
            let epoch = whole(epoch, || format!("trails[{node}].epoch"))?;
            c.pheromones.trails.insert(node, Trail { tau, epoch });
        }
        for (node, successes, failures) in rows.outcomes {
            let successes = non_negative(successes, || format!("outcomes[{node}].successes"))?;
            let failures = non_negative(failures, || format!("outcomes[{node}].failures"))?;
            c.outcomes.insert(
                node,
                OutcomeStats {
                    successes,
                    failures,
                    as_of_ms: now_ms,
                    ..OutcomeStats::default()
                },
            );
        }
        if let Some(epoch) = meta.get("epoch") {
            c.pheromones.epoch = epoch.trim().parse().map_err(|e| corrupt("meta.epoch", e))?;
        }
        if let Some(counters) = meta.get("counters") {
            c.counters = serde_json::from_str::<ColonyCounters>(counters)
                .map_err(|e| corrupt("meta.counters", e))?;
        }
        store.meta = StoreMeta {
            tenant: meta.get("tenant").cloned().unwrap_or_default(),
            version: match meta.get("version") {
                Some(v) => v.trim().parse().map_err(|e| corrupt("meta.version", e))?,
                None => 0,
            } + 1,
            shadow: match meta.get("shadow") {
                Some(s) => serde_json::from_str::<ShadowSummary>(s)
                    .map_err(|e| corrupt("meta.shadow", e))?,
                None => ShadowSummary::default(),
            },
            ..StoreMeta::default()
        };
        let cap = config.max_decisions_per_tenant as usize;
        for (key, body) in rows.decisions {
            let d: Decision = serde_json::from_str(&body)
                .map_err(|e| corrupt(format!("decisions[{key}].body"), e))?;
            store.pending.insert(key, d, cap);
        }
        for (key, node, at, recorded, quality, epoch) in rows.confirmed {
            let confirmed = Confirmed {
                node,
                confirmed_ms: whole(at, || format!("confirmed[{key}].confirmed_ms"))?,
                outcome_recorded: recorded != 0.0,
                deposit_quality: quality,
                deposit_epoch: whole(epoch, || format!("confirmed[{key}].deposit_epoch"))?,
            };
            let change = IndexChange {
                hash: key_hash(&key),
                confirmed: Some(confirmed),
                shadow: None,
            };
            store.index.apply(&change, MAX_PODS_REMEMBERED);
            store.changed_records.push(change);
        }
        for (key, node, seen, recorded) in rows.shadow {
            let change = IndexChange {
                hash: key_hash(&key),
                confirmed: None,
                shadow: Some(ShadowRecord {
                    node,
                    seen_ms: whole(seen, || format!("shadow[{key}].seen_ms"))?,
                    outcome_recorded: recorded != 0.0,
                }),
            };
            store.index.apply(&change, MAX_PODS_REMEMBERED);
            store.changed_records.push(change);
        }
        store.expire(now_ms, config);
        store.touch(now_ms);
        Ok(store)
    }
}
