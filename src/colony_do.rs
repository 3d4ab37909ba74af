//! The Colony Durable Object: one instance per tenant (`id_from_name(tenant)`), holding that
//! tenant's pheromone table, per-node outcome history, remembered decisions, confirmed
//! placements and counters. A Durable Object runs one event at a time, so updates are serialised
//! without locks; all storage calls here are synchronous SQLite statements, so no other event can
//! interleave between reading and writing the table.
//!
//! Atomicity: a request first computes everything in memory (the cached `TenantColony` and the
//! rows to write), then commits all its writes in one SQLite transaction through the storage's
//! `transactionSync` (DO SQLite refuses `BEGIN`/`COMMIT` statements, and workers-rs 0.8 binds no
//! `transactionSync`, so it is called through `js_sys`). If the commit fails, nothing was written
//! and the in-memory colony is dropped, to be reloaded from SQLite by the next request.
//!
//! Internal API (JSON over the stub's fetch), used only by the Worker:
//! `POST /prioritize` (score and remember, the synchronous path), `POST /decisions` (remember a
//! decision an isolate scored from its copy), `POST /placements`, `GET|DELETE /pheromones`,
//! `GET /metrics`, `GET /decisions/<key>` (a pod's decision with its explanation, or its
//! confirmation), and shadow mode's `POST /shadow`, `GET /shadow`, `GET /shadow/snapshot` (see
//! the shadow section at the end). Replies to the first two carry the colony ([`ColonySnapshot`]) when the
//! caller's copy is not the current `version`; see `colony_cache.rs`.
//!
//! Rows written per decision: one (the decision, its explanation inside the same row). The tenant name is written once, and the
//! counters a decision moves are persisted with the next placement commit, reset or alarm — a
//! restart before that loses those increments (a counter reset, as Prometheus sees it).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};

use aco_core::colony::{
    Confirmed, Decision, FilterRejections, Outcome, PheromoneTable, PodRecord, ReportEffect,
    TenantColony, Trail,
};
use aco_core::config::Config;
use aco_core::demand::WorkloadClass;
use aco_core::heuristic::{NodeFeatures, OutcomeStats};
use aco_core::shadow::{ShadowEffect, ShadowRecord, ShadowScore, ShadowSummary};
use aco_core::wire::HostPriority;
use rand::{rngs::SmallRng, SeedableRng};
use serde::{Deserialize, Serialize};
use worker::{
    durable_object, DurableObject, Env, Method, Request, Response, Result, SqlStorage,
    SqlStorageValue, State,
};

use crate::bindings::ROWS_WRITTEN_HEADER;
use crate::env_config;
use crate::http::{json_response, text_response};
use crate::metrics_text::ColonyMetrics;
use crate::sql_transaction::run_in_transaction;

pub const BINDING: &str = "COLONY";

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizeRequest {
    pub tenant: String,
    pub key: String,
    pub workload: WorkloadClass,
    pub features: Vec<NodeFeatures>,
    pub now_ms: u64,
    /// What this isolate's filter call rejected for the pod, for the decision's explanation.
    #[serde(default)]
    pub filter_reasons: Option<FilterRejections>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizeResponse {
    pub priorities: Vec<HostPriority>,
    pub explored: Option<String>,
    /// The colony the scores came from, for the caller's copy.
    pub snapshot: ColonySnapshot,
}

/// What an isolate needs to score like the colony: τ table and outcome history, at `version`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColonySnapshot {
    pub version: u64,
    pub pheromones: PheromoneTable,
    pub outcomes: BTreeMap<String, OutcomeStats>,
}

/// A decision an isolate scored from its copy of the colony, to remember for the pod.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    pub key: String,
    pub decision: Decision,
    pub explored: bool,
}

/// Decisions an isolate scored from its copy (`POST /decisions`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionBatch {
    pub tenant: String,
    pub decisions: Vec<DecisionRecord>,
    /// The version of the caller's copy (0: none).
    pub known_version: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionReply {
    pub version: u64,
    /// Present when `known_version` is not the colony's version.
    pub snapshot: Option<ColonySnapshot>,
}

// ---- explain: begin ----

/// `GET /decisions/<key>`: what the colony remembers of a pod.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionLookup {
    pub decision: Option<Decision>,
    /// Present when the pod's placement was confirmed (its decision was deleted then).
    pub confirmed: Option<ConfirmedView>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmedView {
    pub node: String,
    pub confirmed_ms: u64,
}

// ---- explain: end ----

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementItem {
    pub key: String,
    pub node: String,
    pub outcome: Option<Outcome>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementsRequest {
    pub tenant: String,
    /// Decisions the sending isolate has not seen acknowledged: applied (once) first, so that
    /// no placement overtakes its decision.
    #[serde(default)]
    pub decisions: Vec<DecisionRecord>,
    pub items: Vec<PlacementItem>,
    pub now_ms: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementsResponse {
    pub deposited: u64,
    /// Later outcomes of confirmed placements (reliability updated, no deposit).
    pub outcomes: u64,
    /// Reports already counted (replays): nothing changed.
    pub duplicates: u64,
    pub unknown_pod: u64,
    pub not_a_candidate: u64,
    /// The colony's version after this batch (isolates holding an older copy drop it).
    #[serde(default)]
    pub version: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrailView {
    pub node: String,
    pub tau: f64,
    pub successes: f64,
    pub failures: f64,
}

#[derive(Deserialize)]
struct TrailRow {
    node: String,
    tau: f64,
    epoch: f64,
}

#[derive(Deserialize)]
struct OutcomeRow {
    node: String,
    successes: f64,
    failures: f64,
}

#[derive(Deserialize)]
struct ValueRow {
    value: String,
}

#[derive(Deserialize)]
struct ConfirmedRow {
    node: String,
    confirmed_ms: f64,
    outcome_recorded: f64,
    deposit_quality: f64,
    deposit_epoch: f64,
}

#[derive(Deserialize)]
struct NumberRow {
    value: Option<f64>,
}

/// Statements computed in memory, to be committed together by [`Colony::commit`].
#[derive(Default)]
struct Writes(Vec<(&'static str, Vec<SqlStorageValue>)>);

impl Writes {
    fn push(&mut self, query: &'static str, bindings: Vec<SqlStorageValue>) {
        self.0.push((query, bindings));
    }

    fn meta(&mut self, name: &str, value: String) {
        self.push(
            "INSERT OR REPLACE INTO meta(name, value) VALUES(?, ?)",
            vec![name.into(), value.into()],
        );
    }
}

/// Prefix of the error a colony answers when its stored state does not parse.
pub const CORRUPT: &str = "corrupt colony state";

fn corrupt(what: &str, value: &str) -> worker::Error {
    let shown: String = value.chars().take(80).collect();
    worker::Error::RustError(format!("{CORRUPT}: {what} = {shown:?} does not parse; DELETE /v1/tenants/{{tenant}}/pheromones resets it"))
}

/// A stored non-negative integer (SQLite hands numbers over as f64).
fn stored_u64(v: f64) -> Option<u64> {
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64).then_some(v as u64)
}

/// Alarms are never set further ahead than this (the longest TTL allowed).
const MAX_ALARM_DELAY_MS: u64 = aco_core::config::MAX_CONFIRMED_TTL_MS;

/// A bounded alarm offset in ms from now.
fn alarm_offset(delay_ms: u64) -> i64 {
    delay_ms.clamp(MIN_ALARM_DELAY_MS, MAX_ALARM_DELAY_MS) as i64
}

fn int(v: u64) -> SqlStorageValue {
    SqlStorageValue::Integer(v.min(i64::MAX as u64) as i64)
}

#[durable_object]
pub struct Colony {
    state: State,
    env: Env,
    sql: SqlStorage,
    colony: RefCell<Option<TenantColony>>,
    /// The schema exists: created in the constructor, retried by the next event if that failed.
    schema_ready: Cell<bool>,
    /// An alarm is known to be armed (saves a storage round trip per decision).
    alarm_armed: Cell<bool>,
    /// Rows in `decisions`, once counted (None: count again). Kept so that the cap costs no
    /// `COUNT(*)` per decision.
    decision_count: Cell<Option<u64>>,
    /// Placement requests failed so far by `TEST_FAULT_PLACEMENTS` (tests only).
    faults_injected: Cell<u64>,
    /// The colony's version (bumped by every change to τ or outcomes, and by a reset), once read.
    version: Cell<Option<u64>>,
    /// The tenant name is stored (written once, not with every decision).
    tenant_stored: Cell<bool>,
    /// SQLite rows written by the current event (reported in `x-aco-rows-written`).
    rows_written: Cell<usize>,
    /// Counter increments of decisions not yet persisted (they are, by the alarm within
    /// COUNTERS_PERSIST_MS, or with the next commit that writes the counters).
    counters_dirty: Cell<bool>,
    /// When the armed alarm fires (ms since the epoch), if known.
    alarm_at: Cell<Option<u64>>,
}

/// Decisions' counter increments reach storage within this long (one row per tenant per
/// interval at most, instead of one per decision); a restart sooner loses them.
const COUNTERS_PERSIST_MS: u64 = 1_000;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS trails(node TEXT PRIMARY KEY, tau REAL NOT NULL, epoch INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS outcomes(node TEXT PRIMARY KEY, successes REAL NOT NULL, failures REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS decisions(key TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, body TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS decisions_by_age ON decisions(created_ms);
    CREATE TABLE IF NOT EXISTS confirmed(key TEXT PRIMARY KEY, node TEXT NOT NULL, confirmed_ms INTEGER NOT NULL, outcome_recorded INTEGER NOT NULL, deposit_quality REAL NOT NULL, deposit_epoch INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS confirmed_by_age ON confirmed(confirmed_ms);
    CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS shadow(key TEXT PRIMARY KEY, node TEXT NOT NULL, seen_ms INTEGER NOT NULL, outcome_recorded INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS shadow_by_age ON shadow(seen_ms);
";

/// Empties every table (reset).
const RESET: [&str; 6] = [
    "DELETE FROM trails",
    "DELETE FROM outcomes",
    "DELETE FROM decisions",
    "DELETE FROM confirmed",
    "DELETE FROM meta",
    "DELETE FROM shadow",
];

/// The alarm never re-arms sooner than this.
const MIN_ALARM_DELAY_MS: u64 = 1_000;

impl Colony {
    fn config(&self) -> Result<std::rc::Rc<Config>> {
        env_config::config(&self.env).map_err(|e| worker::Error::RustError(e.to_string()))
    }

    fn ensure_schema(&self) -> Result<()> {
        if !self.schema_ready.get() {
            self.sql.exec(SCHEMA, None)?;
            self.schema_ready.set(true);
        }
        Ok(())
    }

    /// Loads the colony from SQLite on first use in this instance's lifetime. A stored value that
    /// does not parse (or is out of range) is an error naming it: the colony refuses to work on
    /// state it cannot read rather than silently start again from 0 (reset repairs it).
    fn with_colony<T>(&self, f: impl FnOnce(&mut TenantColony) -> T) -> Result<T> {
        let mut slot = self.colony.borrow_mut();
        let colony = match slot.take() {
            Some(c) => c,
            None => self.load_colony()?,
        };
        Ok(f(slot.insert(colony)))
    }

    fn load_colony(&self) -> Result<TenantColony> {
        let mut colony = TenantColony::default();
        for row in self
            .sql
            .exec("SELECT node, tau, epoch FROM trails", None)?
            .to_array::<TrailRow>()?
        {
            if !row.tau.is_finite() || row.tau < 0.0 {
                return Err(corrupt(
                    &format!("trails[{}].tau", row.node),
                    &row.tau.to_string(),
                ));
            }
            let epoch = stored_u64(row.epoch).ok_or_else(|| {
                corrupt(
                    &format!("trails[{}].epoch", row.node),
                    &row.epoch.to_string(),
                )
            })?;
            colony.pheromones.trails.insert(
                row.node,
                Trail {
                    tau: row.tau,
                    epoch,
                },
            );
        }
        for row in self
            .sql
            .exec("SELECT node, successes, failures FROM outcomes", None)?
            .to_array::<OutcomeRow>()?
        {
            for (what, v) in [("successes", row.successes), ("failures", row.failures)] {
                if !v.is_finite() || v < 0.0 {
                    return Err(corrupt(
                        &format!("outcomes[{}].{what}", row.node),
                        &v.to_string(),
                    ));
                }
            }
            colony.outcomes.insert(
                row.node,
                OutcomeStats {
                    successes: row.successes,
                    failures: row.failures,
                },
            );
        }
        if let Some(epoch) = self.meta("epoch")? {
            colony.pheromones.epoch = epoch
                .trim()
                .parse()
                .map_err(|_| corrupt("meta.epoch", &epoch))?;
        }
        if let Some(counters) = self.meta("counters")? {
            colony.counters =
                serde_json::from_str(&counters).map_err(|_| corrupt("meta.counters", &counters))?;
        }
        Ok(colony)
    }

    fn meta(&self, name: &str) -> Result<Option<String>> {
        let rows: Vec<ValueRow> = self
            .sql
            .exec(
                "SELECT value FROM meta WHERE name = ?",
                Some(vec![name.into()]),
            )?
            .to_array()?;
        Ok(rows.into_iter().next().map(|r| r.value))
    }

    fn count(&self, table: &str) -> Result<u64> {
        let rows: Vec<NumberRow> = self
            .sql
            .exec(&format!("SELECT COUNT(*) AS value FROM {table}"), None)?
            .to_array()?;
        Ok(rows.first().and_then(|r| r.value).unwrap_or(0.0) as u64)
    }

    /// Commits one request's writes atomically. On failure nothing was written, so the cached
    /// colony (already updated in memory) is dropped and reloaded by the next request.
    fn commit(&self, writes: Writes) -> Result<()> {
        match run_in_transaction(&self.state.storage(), &self.sql, &writes.0) {
            Ok(rows) => {
                self.rows_written.set(self.rows_written.get() + rows);
                Ok(())
            }
            Err(e) => {
                *self.colony.borrow_mut() = None;
                self.version.set(None);
                self.tenant_stored.set(false);
                Err(e)
            }
        }
    }

    fn version(&self) -> Result<u64> {
        if let Some(v) = self.version.get() {
            return Ok(v);
        }
        let v = match self.meta("version")? {
            Some(text) => text
                .trim()
                .parse()
                .map_err(|_| corrupt("meta.version", &text))?,
            None => 0,
        };
        self.version.set(Some(v));
        Ok(v)
    }

    /// The colony as the caller's copy needs it.
    fn snapshot(&self) -> Result<ColonySnapshot> {
        let version = self.version()?;
        self.with_colony(|c| ColonySnapshot {
            version,
            pheromones: c.pheromones.clone(),
            outcomes: c.outcomes.clone(),
        })
    }

    /// Remembers decisions (at most MAX_DECISIONS_PER_TENANT, oldest evicted) in one
    /// transaction: one row each, plus evictions and, the first time, the tenant name. With
    /// `from_copy`, a decision is applied only if it is newer than what the pod has — a
    /// remembered decision or a confirmation — so a record delivered twice, or after its
    /// placement was confirmed, changes nothing (it would otherwise reopen the pod for a second
    /// deposit). Returns how many were applied.
    async fn remember(
        &self,
        tenant: &str,
        records: &[DecisionRecord],
        from_copy: bool,
        config: &Config,
    ) -> Result<usize> {
        let mut count = match self.decision_count.get() {
            Some(n) => n,
            None => self.count("decisions")?,
        };
        let mut writes = Writes::default();
        let mut applied = 0;
        let (mut decisions, mut explorations, mut evicted) = (0, 0, 0);
        for r in records {
            let stored: Vec<NumberRow> = self
                .sql
                .exec(
                    "SELECT created_ms AS value FROM decisions WHERE key = ?",
                    Some(vec![r.key.clone().into()]),
                )?
                .to_array()?;
            let known = !stored.is_empty();
            if from_copy {
                let confirmed: Vec<NumberRow> = self
                    .sql
                    .exec(
                        "SELECT confirmed_ms AS value FROM confirmed WHERE key = ?",
                        Some(vec![r.key.clone().into()]),
                    )?
                    .to_array()?;
                let latest = stored
                    .iter()
                    .chain(&confirmed)
                    .filter_map(|n| n.value)
                    .fold(f64::NEG_INFINITY, f64::max);
                if latest >= r.decision.created_ms as f64 {
                    continue;
                }
            }
            let after_insert = count + (!known) as u64;
            let evict = after_insert.saturating_sub(config.max_decisions_per_tenant);
            if evict > 0 {
                writes.push(
                    "DELETE FROM decisions WHERE key IN (SELECT key FROM decisions WHERE key != ? ORDER BY created_ms, key LIMIT ?)",
                    vec![r.key.clone().into(), int(evict)],
                );
            }
            writes.push(
                "INSERT OR REPLACE INTO decisions(key, created_ms, body) VALUES(?, ?, ?)",
                vec![
                    r.key.clone().into(),
                    int(r.decision.created_ms),
                    serde_json::to_string(&r.decision)?.into(),
                ],
            );
            count = after_insert - evict;
            applied += 1;
            decisions += 1;
            explorations += r.explored as u64;
            evicted += evict;
        }
        if applied == 0 {
            return Ok(0);
        }
        if !self.tenant_stored.get() && self.meta("tenant")?.as_deref() != Some(tenant) {
            writes.meta("tenant", tenant.to_string());
        }
        self.decision_count.set(None);
        self.commit(writes)?;
        self.with_colony(|c| {
            c.counters.decisions += decisions;
            c.counters.explorations += explorations;
            c.counters.evicted_decisions += evicted;
        })?;
        self.tenant_stored.set(true);
        self.decision_count.set(Some(count));
        self.counters_dirty.set(true);
        self.ensure_alarm(config).await?;
        self.alarm_within(COUNTERS_PERSIST_MS).await?;
        Ok(applied)
    }

    async fn record_decisions(&self, req: DecisionBatch) -> Result<Response> {
        let config = self.config()?;
        self.remember(&req.tenant, &req.decisions, true, &config)
            .await?;
        let version = self.version()?;
        let snapshot = if req.known_version == version {
            None
        } else {
            Some(self.snapshot()?)
        };
        Ok(json_response(200, &DecisionReply { version, snapshot }))
    }

    async fn prioritize(&self, req: PrioritizeRequest) -> Result<Response> {
        let config = self.config()?;
        let mut rng = SmallRng::seed_from_u64(getrandom::u64().unwrap_or(req.now_ms));
        // Scored on a scratch copy (same τ and outcomes): `remember` counts the decision, once.
        let mut prioritized = self.with_colony(|c| {
            let mut scratch = TenantColony {
                pheromones: std::mem::take(&mut c.pheromones),
                outcomes: std::mem::take(&mut c.outcomes),
                ..Default::default()
            };
            let p = scratch.prioritize(&req.features, req.workload, req.now_ms, &config, &mut rng);
            c.pheromones = scratch.pheromones;
            c.outcomes = scratch.outcomes;
            p
        })?;
        if let Some(e) = prioritized.decision.explanation.as_mut() {
            e.filter = req.filter_reasons;
        }
        let record = DecisionRecord {
            key: req.key,
            explored: prioritized.explored.is_some(),
            decision: prioritized.decision,
        };
        self.remember(&req.tenant, std::slice::from_ref(&record), false, &config)
            .await?;
        let snapshot = self.snapshot()?;
        Ok(json_response(
            200,
            &PrioritizeResponse {
                priorities: prioritized.priorities,
                explored: prioritized.explored,
                snapshot,
            },
        ))
    }

    /// The unexpired decision and confirmation remembered for a pod key.
    fn load_record(&self, key: &str, now_ms: u64, config: &Config) -> Result<PodRecord> {
        let decisions: Vec<ValueRow> = self
            .sql
            .exec(
                "SELECT body AS value FROM decisions WHERE key = ? AND created_ms >= ?",
                Some(vec![
                    key.into(),
                    int(now_ms.saturating_sub(config.decision_ttl_ms)),
                ]),
            )?
            .to_array()?;
        let confirmed: Vec<ConfirmedRow> = self
            .sql
            .exec(
                "SELECT node, confirmed_ms, outcome_recorded, deposit_quality, deposit_epoch FROM confirmed WHERE key = ? AND confirmed_ms >= ?",
                Some(vec![key.into(), int(now_ms.saturating_sub(config.confirmed_ttl_ms))]),
            )?
            .to_array()?;
        let decision = match decisions.into_iter().next() {
            Some(r) => Some(
                serde_json::from_str(&r.value)
                    .map_err(|_| corrupt(&format!("decisions[{key}].body"), &r.value))?,
            ),
            None => None,
        };
        let confirmed = match confirmed.into_iter().next() {
            Some(r) => {
                let bad = |what: &str, v: f64| {
                    corrupt(&format!("confirmed[{key}].{what}"), &v.to_string())
                };
                if !r.deposit_quality.is_finite() {
                    return Err(bad("deposit_quality", r.deposit_quality));
                }
                Some(Confirmed {
                    node: r.node,
                    confirmed_ms: stored_u64(r.confirmed_ms)
                        .ok_or_else(|| bad("confirmed_ms", r.confirmed_ms))?,
                    outcome_recorded: r.outcome_recorded != 0.0,
                    deposit_quality: r.deposit_quality,
                    deposit_epoch: stored_u64(r.deposit_epoch)
                        .ok_or_else(|| bad("deposit_epoch", r.deposit_epoch))?,
                })
            }
            None => None,
        };
        Ok(PodRecord {
            decision,
            confirmed,
        })
    }

    /// Applies a batch of reports (see `aco_core::colony::report` for what each does) and commits
    /// every change in one transaction.
    async fn placements(&self, req: PlacementsRequest) -> Result<Response> {
        let config = self.config()?;
        if !req.decisions.is_empty() {
            self.remember(&req.tenant, &req.decisions, true, &config)
                .await?;
        }
        // The Worker validated the outcomes; checked again so that no item can fail halfway.
        for item in &req.items {
            item.outcome
                .map(Outcome::quality)
                .transpose()
                .map_err(worker::Error::RustError)?;
        }
        // key → (record as loaded, record as updated)
        let mut records: BTreeMap<String, (PodRecord, PodRecord)> = BTreeMap::new();
        for item in &req.items {
            if !records.contains_key(&item.key) {
                let record = self.load_record(&item.key, req.now_ms, &config)?;
                records.insert(item.key.clone(), (record.clone(), record));
            }
        }
        let mut out = PlacementsResponse::default();
        let mut trails: BTreeMap<String, Trail> = BTreeMap::new();
        let mut outcome_nodes: BTreeSet<String> = BTreeSet::new();
        let applied = self.with_colony(|c| -> std::result::Result<_, String> {
            for item in &req.items {
                let Some((_, record)) = records.get_mut(&item.key) else {
                    return Err(format!("no record loaded for pod {:?}", item.key));
                };
                match c.report(record, &item.node, item.outcome, req.now_ms, &config)? {
                    ReportEffect::Deposited {
                        node,
                        trail,
                        outcome,
                        ..
                    } => {
                        out.deposited += 1;
                        if outcome.is_some() {
                            outcome_nodes.insert(node.clone());
                        }
                        trails.insert(node, trail);
                    }
                    ReportEffect::OutcomeRecorded { node, trail, .. } => {
                        out.outcomes += 1;
                        outcome_nodes.insert(node.clone());
                        trails.insert(node, trail);
                    }
                    ReportEffect::Duplicate => out.duplicates += 1,
                    ReportEffect::UnknownPod => out.unknown_pod += 1,
                    ReportEffect::NotACandidate => out.not_a_candidate += 1,
                }
            }
            let stats: Vec<(String, OutcomeStats)> = outcome_nodes
                .iter()
                .map(|n| (n.clone(), c.outcomes.get(n).copied().unwrap_or_default()))
                .collect();
            let counters = serde_json::to_string(&c.counters).map_err(|e| e.to_string())?;
            Ok((stats, c.pheromones.epoch, counters))
        })?;
        let (stats, epoch, counters) = applied.map_err(|e| {
            *self.colony.borrow_mut() = None;
            worker::Error::RustError(e)
        })?;

        let mut writes = Writes::default();
        writes.meta("tenant", req.tenant.clone());
        // Isolates scoring from a copy learn of the change through this version.
        let version = self.version()? + (!trails.is_empty() || !stats.is_empty()) as u64;
        writes.meta("version", version.to_string());
        for (node, trail) in trails {
            writes.push(
                "INSERT OR REPLACE INTO trails(node, tau, epoch) VALUES(?, ?, ?)",
                vec![node.into(), trail.tau.into(), int(trail.epoch)],
            );
        }
        for (node, s) in stats {
            writes.push(
                "INSERT OR REPLACE INTO outcomes(node, successes, failures) VALUES(?, ?, ?)",
                vec![node.into(), s.successes.into(), s.failures.into()],
            );
        }
        let mut confirmed_any = false;
        for (key, (before, after)) in records {
            if before.decision.is_some() && after.decision.is_none() {
                writes.push(
                    "DELETE FROM decisions WHERE key = ?",
                    vec![key.clone().into()],
                );
            }
            if let Some(c) = after
                .confirmed
                .filter(|c| before.confirmed.as_ref() != Some(c))
            {
                confirmed_any = true;
                writes.push(
                    "INSERT OR REPLACE INTO confirmed(key, node, confirmed_ms, outcome_recorded, deposit_quality, deposit_epoch) VALUES(?, ?, ?, ?, ?, ?)",
                    vec![
                        key.into(),
                        c.node.into(),
                        int(c.confirmed_ms),
                        int(c.outcome_recorded as u64),
                        c.deposit_quality.into(),
                        int(c.deposit_epoch),
                    ],
                );
            }
        }
        writes.meta("epoch", epoch.to_string());
        writes.meta("counters", counters);
        self.counters_dirty.set(false);
        if self.inject_fault(&req.tenant) {
            // A statement that fails inside the transaction: everything above is rolled back.
            writes.push("INSERT INTO injected_fault_no_such_table VALUES(1)", vec![]);
        }
        self.decision_count.set(None);
        self.commit(writes)?;
        self.version.set(Some(version));
        out.version = version;
        if confirmed_any {
            self.ensure_alarm(&config).await?;
        }
        Ok(json_response(200, &out))
    }

    fn table(&self) -> Result<Response> {
        let config = self.config()?;
        let tenant = self.tenant()?;
        let pending = self.count("decisions")?;
        let confirmed = self.count("confirmed")?;
        let body = self.with_colony(|c| {
            let nodes: Vec<TrailView> = c
                .pheromones
                .snapshot(&config)
                .into_iter()
                .map(|(node, tau)| {
                    let o = c.outcomes.get(&node).copied().unwrap_or_default();
                    TrailView {
                        node,
                        tau,
                        successes: o.successes,
                        failures: o.failures,
                    }
                })
                .collect();
            serde_json::json!({
                "tenant": tenant,
                "epoch": c.pheromones.epoch,
                "tauInitialNow": c.pheromones.tau("", &config),
                "bounds": {"tauMin": config.tau_min, "tauMax": config.tau_max, "rho": config.rho},
                "nodes": nodes,
                "counters": c.counters,
                "pendingDecisions": pending,
                "confirmedPods": confirmed,
            })
        })?;
        Ok(json_response(200, &body))
    }

    fn tenant(&self) -> Result<String> {
        Ok(self.meta("tenant")?.unwrap_or_default())
    }

    fn reset(&self) -> Result<Response> {
        let tenant = self.tenant()?;
        let mut writes = Writes::default();
        for statement in RESET {
            writes.push(statement, vec![]);
        }
        if !tenant.is_empty() {
            writes.meta("tenant", tenant);
        }
        // A reset is a new version too, so that no isolate keeps scoring with the old table.
        let version = self.version()? + 1;
        writes.meta("version", version.to_string());
        self.decision_count.set(None);
        self.commit(writes)?;
        *self.colony.borrow_mut() = None;
        self.version.set(Some(version));
        Ok(json_response(
            200,
            &serde_json::json!({"reset": true, "version": version}),
        ))
    }

    fn metrics(&self) -> Result<Response> {
        let config = self.config()?;
        let tenant = self.tenant()?;
        let body = self.with_colony(|c| ColonyMetrics {
            cluster: String::new(),
            tenant,
            counters: c.counters.clone(),
            epoch: c.pheromones.epoch,
            pheromones: c.pheromones.snapshot(&config),
            shadow: Default::default(),
        })?;
        let body = ColonyMetrics {
            shadow: self.shadow_summary()?,
            ..body
        };
        Ok(json_response(200, &body))
    }

    /// Makes the alarm fire within `ms` (it persists the counters, then re-arms for expiries).
    async fn alarm_within(&self, ms: u64) -> Result<()> {
        let now = worker::Date::now().as_millis();
        if self.alarm_at.get().is_some_and(|at| at <= now + ms) {
            return Ok(());
        }
        self.state.storage().set_alarm(alarm_offset(ms)).await?;
        self.alarm_at.set(Some(now + ms.max(MIN_ALARM_DELAY_MS)));
        self.alarm_armed.set(true);
        Ok(())
    }

    async fn ensure_alarm(&self, config: &Config) -> Result<()> {
        if self.alarm_armed.get() {
            return Ok(());
        }
        let storage = self.state.storage();
        if storage.get_alarm().await?.is_none() {
            storage
                .set_alarm(alarm_offset(
                    config.decision_ttl_ms.min(config.confirmed_ttl_ms),
                ))
                .await?;
        }
        self.alarm_armed.set(true);
        Ok(())
    }

    /// Tests only: `TEST_FAULT_PLACEMENTS = "tenant:n"` makes the first `n` placement requests of
    /// `tenant` (per instance) fail at commit, rolled back. Never set it in production.
    fn inject_fault(&self, tenant: &str) -> bool {
        let Ok(spec) = self.env.var("TEST_FAULT_PLACEMENTS").map(|v| v.to_string()) else {
            return false;
        };
        let fails = spec
            .split(',')
            .filter_map(|s| s.trim().split_once(':'))
            .any(|(t, n)| {
                t == tenant
                    && n.trim()
                        .parse::<u64>()
                        .is_ok_and(|n| self.faults_injected.get() < n)
            });
        if fails {
            self.faults_injected.set(self.faults_injected.get() + 1);
        }
        fails
    }

    async fn route(&self, mut req: Request) -> Result<Response> {
        self.ensure_schema()?;
        match (req.method(), req.path().as_str()) {
            (Method::Post, "/prioritize") => self.prioritize(req.json().await?).await,
            (Method::Post, "/decisions") => self.record_decisions(req.json().await?).await,
            (Method::Post, "/placements") => self.placements(req.json().await?).await,
            (Method::Get, "/pheromones") => self.table(),
            (Method::Delete, "/pheromones") => self.reset(),
            (Method::Get, "/metrics") => self.metrics(),
            (Method::Post, "/shadow") => self.shadow(req.json().await?).await,
            (Method::Get, "/shadow") => Ok(json_response(200, &self.shadow_summary()?)),
            (Method::Get, "/shadow/snapshot") => Ok(json_response(200, &self.snapshot()?)),
            // explain: begin
            (Method::Get, path) if path.starts_with("/decisions/") => {
                self.decision_of(&path["/decisions/".len()..])
            }
            // explain: end
            _ => Ok(text_response(
                404,
                "unknown colony route".into(),
                "text/plain",
            )),
        }
    }

    // ---- explain: begin (GET /decisions/<key>; see docs/explanations.md) ----

    /// The pod's remembered decision (explanation included) and, if the decision is gone because
    /// the placement was confirmed, the confirmation. Reads only; always 200 (the Worker turns
    /// "no decision" into its 404, and a non-200 here would count as a colony failure).
    fn decision_of(&self, key: &str) -> Result<Response> {
        let config = self.config()?;
        let record = self.load_record(key, worker::Date::now().as_millis(), &config)?;
        let reply = DecisionLookup {
            decision: record.decision,
            confirmed: record.confirmed.map(|c| ConfirmedView {
                node: c.node,
                confirmed_ms: c.confirmed_ms,
            }),
        };
        Ok(json_response(200, &reply))
    }

    // ---- explain: end ----

    /// The oldest timestamp in a table's time column, if any rows remain.
    fn oldest(&self, query: &str) -> Result<Option<u64>> {
        let rows: Vec<NumberRow> = self.sql.exec(query, None)?.to_array()?;
        Ok(rows.first().and_then(|r| r.value).map(|v| v as u64))
    }
}

impl DurableObject for Colony {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        // Before any event, so that every route works on a fresh colony (a placement for a
        // tenant that never scored a pod used to find no `meta` table).
        let schema_ready = sql.exec(SCHEMA, None).is_ok();
        Self {
            state,
            env,
            sql,
            colony: RefCell::new(None),
            schema_ready: Cell::new(schema_ready),
            alarm_armed: Cell::new(false),
            counters_dirty: Cell::new(false),
            alarm_at: Cell::new(None),
            decision_count: Cell::new(None),
            faults_injected: Cell::new(0),
            version: Cell::new(None),
            tenant_stored: Cell::new(false),
            rows_written: Cell::new(0),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        self.rows_written.set(0);
        match self.route(req).await {
            Ok(r) => {
                r.headers()
                    .set(ROWS_WRITTEN_HEADER, &self.rows_written.get().to_string())?;
                Ok(r)
            }
            Err(e) => {
                let message = e.to_string();
                let reason = if message.starts_with(CORRUPT) {
                    "corrupt_state"
                } else {
                    "error"
                };
                worker::console_error!("colony {}: {message}", self.tenant().unwrap_or_default());
                Ok(json_response(
                    503,
                    &serde_json::json!({"error": message, "reason": reason}),
                ))
            }
        }
    }

    /// Drops decisions older than DECISION_TTL_MS (pods never confirmed) and confirmations older
    /// than CONFIRMED_TTL_MS, then re-arms for the moment the oldest remaining row expires.
    async fn alarm(&self) -> Result<Response> {
        self.alarm_armed.set(false);
        self.alarm_at.set(None);
        self.ensure_schema()?;
        let config = self.config()?;
        let now = worker::Date::now().as_millis();
        let mut writes = Writes::default();
        writes.push(
            "DELETE FROM decisions WHERE created_ms < ?",
            vec![int(now.saturating_sub(config.decision_ttl_ms))],
        );
        writes.push(
            "DELETE FROM confirmed WHERE confirmed_ms < ?",
            vec![int(now.saturating_sub(config.confirmed_ttl_ms))],
        );
        writes.push(
            "DELETE FROM shadow WHERE seen_ms < ?",
            vec![int(now.saturating_sub(config.confirmed_ttl_ms))],
        );
        // Decisions' counter increments since the last placement commit.
        if self.counters_dirty.replace(false) {
            if let Some(colony) = self.colony.borrow().as_ref() {
                writes.meta("counters", serde_json::to_string(&colony.counters)?);
            }
        }
        self.decision_count.set(None);
        self.commit(writes)?;
        let next = [
            (
                self.oldest("SELECT MIN(created_ms) AS value FROM decisions")?,
                config.decision_ttl_ms,
            ),
            (
                self.oldest("SELECT MIN(confirmed_ms) AS value FROM confirmed")?,
                config.confirmed_ttl_ms,
            ),
            (
                self.oldest("SELECT MIN(seen_ms) AS value FROM shadow")?,
                config.confirmed_ttl_ms,
            ),
        ]
        .into_iter()
        .filter_map(|(oldest, ttl)| oldest.map(|t| t.saturating_add(ttl)))
        .min();
        if let Some(expires_at) = next {
            let offset = alarm_offset(expires_at.saturating_sub(now));
            self.state.storage().set_alarm(offset).await?;
            self.alarm_armed.set(true);
            self.alarm_at.set(Some(now + offset as u64));
        }
        Response::ok("pruned")
    }
}

// ---- Shadow mode (routes/shadow.rs, aco_core::shadow) ------------------------------------------
//
// Per tenant: the summary in `meta` (name `shadow`), one row per pod seen in `shadow` (kept
// CONFIRMED_TTL_MS, pruned by the alarm). A batch costs one row per new pod, one per pod whose
// outcome is recorded, the summary, and for outcomes their nodes' `outcomes` rows and the version;
// all in one transaction. τ is never written: shadow pods deposit nothing.

/// One scored report, from the Worker (`POST /shadow`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowItem {
    pub key: String,
    pub node: String,
    pub outcome: Option<Outcome>,
    pub score: ShadowScore,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowRequest {
    pub tenant: String,
    pub items: Vec<ShadowItem>,
    pub now_ms: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowResponse {
    pub scored: u64,
    pub outcomes: u64,
    pub duplicates: u64,
    pub unknown_pod: u64,
    pub not_feasible: u64,
    pub version: u64,
}

#[derive(Deserialize)]
struct ShadowRow {
    node: String,
    seen_ms: f64,
    outcome_recorded: f64,
}

impl Colony {
    /// The tenant's shadow summary (zero before the first shadow report).
    fn shadow_summary(&self) -> Result<ShadowSummary> {
        match self.meta("shadow")? {
            Some(text) => serde_json::from_str(&text).map_err(|_| corrupt("meta.shadow", &text)),
            None => Ok(ShadowSummary::default()),
        }
    }

    fn shadow_record(
        &self,
        key: &str,
        now_ms: u64,
        config: &Config,
    ) -> Result<Option<ShadowRecord>> {
        let rows: Vec<ShadowRow> = self
            .sql
            .exec(
                "SELECT node, seen_ms, outcome_recorded FROM shadow WHERE key = ? AND seen_ms >= ?",
                Some(vec![
                    key.into(),
                    int(now_ms.saturating_sub(config.confirmed_ttl_ms)),
                ]),
            )?
            .to_array()?;
        rows.into_iter()
            .next()
            .map(|r| {
                let seen_ms = stored_u64(r.seen_ms).ok_or_else(|| {
                    corrupt(&format!("shadow[{key}].seen_ms"), &r.seen_ms.to_string())
                })?;
                Ok(ShadowRecord {
                    node: r.node,
                    seen_ms,
                    outcome_recorded: r.outcome_recorded != 0.0,
                })
            })
            .transpose()
    }

    /// Applies a batch of scored shadow reports (`aco_core::shadow::report`) in one transaction.
    async fn shadow(&self, req: ShadowRequest) -> Result<Response> {
        let config = self.config()?;
        // The Worker validated the outcomes; checked again so that no item can fail halfway.
        for item in &req.items {
            item.outcome
                .map(Outcome::quality)
                .transpose()
                .map_err(worker::Error::RustError)?;
        }
        let mut summary = self.shadow_summary()?;
        // key → (record as loaded, record as updated)
        let mut records: BTreeMap<String, (Option<ShadowRecord>, Option<ShadowRecord>)> =
            BTreeMap::new();
        for item in &req.items {
            if !records.contains_key(&item.key) {
                let r = self.shadow_record(&item.key, req.now_ms, &config)?;
                records.insert(item.key.clone(), (r.clone(), r));
            }
        }
        let mut out = ShadowResponse::default();
        let mut outcome_nodes: BTreeSet<String> = BTreeSet::new();
        let applied = self.with_colony(|c| -> std::result::Result<_, String> {
            let counters_before = c.counters.clone();
            for item in &req.items {
                let Some((_, record)) = records.get_mut(&item.key) else {
                    return Err(format!("no shadow record loaded for pod {:?}", item.key));
                };
                let effect = aco_core::shadow::report(
                    c,
                    &mut summary,
                    record,
                    &item.node,
                    &item.score,
                    item.outcome,
                    req.now_ms,
                )?;
                let outcome = match effect {
                    ShadowEffect::Scored { outcome } => {
                        out.scored += 1;
                        outcome
                    }
                    ShadowEffect::NotFeasible { outcome } => {
                        out.not_feasible += 1;
                        outcome
                    }
                    ShadowEffect::Outcome => {
                        out.outcomes += 1;
                        true
                    }
                    ShadowEffect::UnknownPod => {
                        out.unknown_pod += 1;
                        false
                    }
                    ShadowEffect::Duplicate => {
                        out.duplicates += 1;
                        false
                    }
                };
                if outcome {
                    outcome_nodes.insert(item.node.clone());
                }
            }
            let stats: Vec<(String, OutcomeStats)> = outcome_nodes
                .iter()
                .map(|n| (n.clone(), c.outcomes.get(n).copied().unwrap_or_default()))
                .collect();
            // Only outcomes and duplicates move the counters: a batch of new pods writes none.
            let counters = (c.counters != counters_before)
                .then(|| serde_json::to_string(&c.counters))
                .transpose()
                .map_err(|e| e.to_string())?;
            Ok((stats, counters))
        })?;
        let (stats, counters) = applied.map_err(|e| {
            *self.colony.borrow_mut() = None;
            worker::Error::RustError(e)
        })?;

        let mut writes = Writes::default();
        if !self.tenant_stored.get() && self.meta("tenant")?.as_deref() != Some(req.tenant.as_str())
        {
            writes.meta("tenant", req.tenant.clone());
        }
        // Reliability moved: isolates scoring from a copy learn of it through the version.
        let version = self.version()? + (!stats.is_empty()) as u64;
        if !stats.is_empty() {
            writes.meta("version", version.to_string());
        }
        for (node, s) in stats {
            writes.push(
                "INSERT OR REPLACE INTO outcomes(node, successes, failures) VALUES(?, ?, ?)",
                vec![node.into(), s.successes.into(), s.failures.into()],
            );
        }
        let mut remembered = false;
        for (key, (before, after)) in records {
            if let Some(r) = after.filter(|a| before.as_ref() != Some(a)) {
                remembered = true;
                writes.push(
                    "INSERT OR REPLACE INTO shadow(key, node, seen_ms, outcome_recorded) VALUES(?, ?, ?, ?)",
                    vec![key.into(), r.node.into(), int(r.seen_ms), int(r.outcome_recorded as u64)],
                );
            }
        }
        writes.meta("shadow", serde_json::to_string(&summary)?);
        if let Some(counters) = counters {
            writes.meta("counters", counters);
            self.counters_dirty.set(false);
        }
        self.commit(writes)?;
        self.tenant_stored.set(true);
        self.version.set(Some(version));
        out.version = version;
        if remembered {
            self.ensure_alarm(&config).await?;
        }
        Ok(json_response(200, &out))
    }
}
