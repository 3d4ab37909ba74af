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
//! `POST /prioritize`, `POST /placements`, `GET|DELETE /pheromones`, `GET /metrics`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};

use aco_core::colony::{Confirmed, Outcome, PodRecord, ReportEffect, TenantColony, Trail};
use aco_core::config::Config;
use aco_core::demand::WorkloadClass;
use aco_core::heuristic::{NodeFeatures, OutcomeStats};
use aco_core::wire::HostPriority;
use rand::{rngs::SmallRng, SeedableRng};
use serde::{Deserialize, Serialize};
use worker::js_sys::{Function, Reflect};
use worker::wasm_bindgen::closure::ScopedClosure;
use worker::wasm_bindgen::{JsCast, JsValue};
use worker::{durable_object, DurableObject, Env, Method, Request, Response, Result, SqlStorage, SqlStorageValue, State};

use crate::env_config;
use crate::http::{json_response, text_response};
use crate::metrics_text::ColonyMetrics;

pub const BINDING: &str = "COLONY";

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizeRequest {
    pub tenant: String,
    pub key: String,
    pub workload: WorkloadClass,
    pub features: Vec<NodeFeatures>,
    pub now_ms: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizeResponse {
    pub priorities: Vec<HostPriority>,
    pub explored: Option<String>,
}

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
        self.push("INSERT OR REPLACE INTO meta(name, value) VALUES(?, ?)", vec![name.into(), value.into()]);
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

/// Runs `statements` in one SQLite transaction: all of them, or (on the first error) none.
fn run_in_transaction(storage: &worker::Storage, sql: &SqlStorage, statements: &[(&'static str, Vec<SqlStorageValue>)]) -> Result<()> {
    let mut body = || -> std::result::Result<JsValue, JsValue> {
        for (query, bindings) in statements {
            sql.exec(query, bindings.clone()).map_err(JsValue::from)?;
        }
        Ok(JsValue::UNDEFINED)
    };
    let raw: &JsValue = storage.as_raw();
    let transaction_sync = Reflect::get(raw, &JsValue::from_str("transactionSync"))?;
    match transaction_sync.dyn_ref::<Function>() {
        Some(f) => {
            // Called synchronously and not retained by the runtime, so a borrowed closure is
            // enough. A thrown error (our `Err`) rolls the transaction back and is rethrown.
            let closure = ScopedClosure::<dyn FnMut() -> std::result::Result<JsValue, JsValue>>::borrow_mut_aborting(&mut body);
            f.call1(raw, closure.as_ref()).map(|_| ()).map_err(worker::Error::from)
        }
        // A runtime without transactionSync: still one synchronous block, but no rollback.
        None => body().map(|_| ()).map_err(worker::Error::from),
    }
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
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS trails(node TEXT PRIMARY KEY, tau REAL NOT NULL, epoch INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS outcomes(node TEXT PRIMARY KEY, successes REAL NOT NULL, failures REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS decisions(key TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, body TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS decisions_by_age ON decisions(created_ms);
    CREATE TABLE IF NOT EXISTS confirmed(key TEXT PRIMARY KEY, node TEXT NOT NULL, confirmed_ms INTEGER NOT NULL, outcome_recorded INTEGER NOT NULL, deposit_quality REAL NOT NULL, deposit_epoch INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS confirmed_by_age ON confirmed(confirmed_ms);
    CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
";

/// Empties every table (reset).
const RESET: [&str; 5] = ["DELETE FROM trails", "DELETE FROM outcomes", "DELETE FROM decisions", "DELETE FROM confirmed", "DELETE FROM meta"];

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
        for row in self.sql.exec("SELECT node, tau, epoch FROM trails", None)?.to_array::<TrailRow>()? {
            if !row.tau.is_finite() || row.tau < 0.0 {
                return Err(corrupt(&format!("trails[{}].tau", row.node), &row.tau.to_string()));
            }
            let epoch = stored_u64(row.epoch).ok_or_else(|| corrupt(&format!("trails[{}].epoch", row.node), &row.epoch.to_string()))?;
            colony.pheromones.trails.insert(row.node, Trail { tau: row.tau, epoch });
        }
        for row in self.sql.exec("SELECT node, successes, failures FROM outcomes", None)?.to_array::<OutcomeRow>()? {
            for (what, v) in [("successes", row.successes), ("failures", row.failures)] {
                if !v.is_finite() || v < 0.0 {
                    return Err(corrupt(&format!("outcomes[{}].{what}", row.node), &v.to_string()));
                }
            }
            colony.outcomes.insert(row.node, OutcomeStats { successes: row.successes, failures: row.failures });
        }
        if let Some(epoch) = self.meta("epoch")? {
            colony.pheromones.epoch = epoch.trim().parse().map_err(|_| corrupt("meta.epoch", &epoch))?;
        }
        if let Some(counters) = self.meta("counters")? {
            colony.counters = serde_json::from_str(&counters).map_err(|_| corrupt("meta.counters", &counters))?;
        }
        Ok(colony)
    }

    fn meta(&self, name: &str) -> Result<Option<String>> {
        let rows: Vec<ValueRow> = self.sql.exec("SELECT value FROM meta WHERE name = ?", Some(vec![name.into()]))?.to_array()?;
        Ok(rows.into_iter().next().map(|r| r.value))
    }

    fn count(&self, table: &str) -> Result<u64> {
        let rows: Vec<NumberRow> = self.sql.exec(&format!("SELECT COUNT(*) AS value FROM {table}"), None)?.to_array()?;
        Ok(rows.first().and_then(|r| r.value).unwrap_or(0.0) as u64)
    }

    /// Commits one request's writes atomically. On failure nothing was written, so the cached
    /// colony (already updated in memory) is dropped and reloaded by the next request.
    fn commit(&self, writes: Writes) -> Result<()> {
        let result = run_in_transaction(&self.state.storage(), &self.sql, &writes.0);
        if result.is_err() {
            *self.colony.borrow_mut() = None;
        }
        result
    }

    async fn prioritize(&self, req: PrioritizeRequest) -> Result<Response> {
        let config = self.config()?;
        let mut rng = SmallRng::seed_from_u64(getrandom::u64().unwrap_or(req.now_ms));
        // The cap: a new key beyond MAX_DECISIONS_PER_TENANT evicts the oldest decisions.
        let count = match self.decision_count.get() {
            Some(n) => n,
            None => self.count("decisions")?,
        };
        let known: Vec<NumberRow> =
            self.sql.exec("SELECT 1 AS value FROM decisions WHERE key = ?", Some(vec![req.key.clone().into()]))?.to_array()?;
        let after_insert = count + known.is_empty() as u64;
        let evict = after_insert.saturating_sub(config.max_decisions_per_tenant);
        let (prioritized, counters) = self.with_colony(|c| {
            let p = c.prioritize(&req.features, req.workload, req.now_ms, &config, &mut rng);
            c.counters.evicted_decisions += evict;
            (p, serde_json::to_string(&c.counters))
        })?;
        let mut writes = Writes::default();
        writes.meta("tenant", req.tenant.clone());
        writes.meta("counters", counters?);
        if evict > 0 {
            writes.push(
                "DELETE FROM decisions WHERE key IN (SELECT key FROM decisions WHERE key != ? ORDER BY created_ms, key LIMIT ?)",
                vec![req.key.clone().into(), int(evict)],
            );
        }
        writes.push(
            "INSERT OR REPLACE INTO decisions(key, created_ms, body) VALUES(?, ?, ?)",
            vec![req.key.into(), int(req.now_ms), serde_json::to_string(&prioritized.decision)?.into()],
        );
        self.decision_count.set(None);
        self.commit(writes)?;
        self.decision_count.set(Some(after_insert - evict));
        self.ensure_alarm(&config).await?;
        Ok(json_response(200, &PrioritizeResponse { priorities: prioritized.priorities, explored: prioritized.explored }))
    }

    /// The unexpired decision and confirmation remembered for a pod key.
    fn load_record(&self, key: &str, now_ms: u64, config: &Config) -> Result<PodRecord> {
        let decisions: Vec<ValueRow> = self
            .sql
            .exec(
                "SELECT body AS value FROM decisions WHERE key = ? AND created_ms >= ?",
                Some(vec![key.into(), int(now_ms.saturating_sub(config.decision_ttl_ms))]),
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
            Some(r) => Some(serde_json::from_str(&r.value).map_err(|_| corrupt(&format!("decisions[{key}].body"), &r.value))?),
            None => None,
        };
        let confirmed = match confirmed.into_iter().next() {
            Some(r) => {
                let bad = |what: &str, v: f64| corrupt(&format!("confirmed[{key}].{what}"), &v.to_string());
                if !r.deposit_quality.is_finite() {
                    return Err(bad("deposit_quality", r.deposit_quality));
                }
                Some(Confirmed {
                    node: r.node,
                    confirmed_ms: stored_u64(r.confirmed_ms).ok_or_else(|| bad("confirmed_ms", r.confirmed_ms))?,
                    outcome_recorded: r.outcome_recorded != 0.0,
                    deposit_quality: r.deposit_quality,
                    deposit_epoch: stored_u64(r.deposit_epoch).ok_or_else(|| bad("deposit_epoch", r.deposit_epoch))?,
                })
            }
            None => None,
        };
        Ok(PodRecord { decision, confirmed })
    }

    /// Applies a batch of reports (see `aco_core::colony::report` for what each does) and commits
    /// every change in one transaction.
    async fn placements(&self, req: PlacementsRequest) -> Result<Response> {
        let config = self.config()?;
        // The Worker validated the outcomes; checked again so that no item can fail halfway.
        for item in &req.items {
            item.outcome.map(Outcome::quality).transpose().map_err(worker::Error::RustError)?;
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
                    ReportEffect::Deposited { node, trail, outcome, .. } => {
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
            let stats: Vec<(String, OutcomeStats)> =
                outcome_nodes.iter().map(|n| (n.clone(), c.outcomes.get(n).copied().unwrap_or_default())).collect();
            let counters = serde_json::to_string(&c.counters).map_err(|e| e.to_string())?;
            Ok((stats, c.pheromones.epoch, counters))
        })?;
        let (stats, epoch, counters) = applied.map_err(|e| {
            *self.colony.borrow_mut() = None;
            worker::Error::RustError(e)
        })?;

        let mut writes = Writes::default();
        writes.meta("tenant", req.tenant.clone());
        for (node, trail) in trails {
            writes.push("INSERT OR REPLACE INTO trails(node, tau, epoch) VALUES(?, ?, ?)", vec![node.into(), trail.tau.into(), int(trail.epoch)]);
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
                writes.push("DELETE FROM decisions WHERE key = ?", vec![key.clone().into()]);
            }
            if let Some(c) = after.confirmed.filter(|c| before.confirmed.as_ref() != Some(c)) {
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
        if self.inject_fault(&req.tenant) {
            // A statement that fails inside the transaction: everything above is rolled back.
            writes.push("INSERT INTO injected_fault_no_such_table VALUES(1)", vec![]);
        }
        self.decision_count.set(None);
        self.commit(writes)?;
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
                    TrailView { node, tau, successes: o.successes, failures: o.failures }
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
        self.decision_count.set(None);
        self.commit(writes)?;
        *self.colony.borrow_mut() = None;
        Ok(json_response(200, &serde_json::json!({"reset": true})))
    }

    fn metrics(&self) -> Result<Response> {
        let config = self.config()?;
        let tenant = self.tenant()?;
        let body = self.with_colony(|c| ColonyMetrics {
            tenant,
            counters: c.counters.clone(),
            epoch: c.pheromones.epoch,
            pheromones: c.pheromones.snapshot(&config),
        })?;
        Ok(json_response(200, &body))
    }

    async fn ensure_alarm(&self, config: &Config) -> Result<()> {
        if self.alarm_armed.get() {
            return Ok(());
        }
        let storage = self.state.storage();
        if storage.get_alarm().await?.is_none() {
            storage.set_alarm(alarm_offset(config.decision_ttl_ms.min(config.confirmed_ttl_ms))).await?;
        }
        self.alarm_armed.set(true);
        Ok(())
    }

    /// Tests only: `TEST_FAULT_PLACEMENTS = "tenant:n"` makes the first `n` placement requests of
    /// `tenant` (per instance) fail at commit, rolled back. Never set it in production.
    fn inject_fault(&self, tenant: &str) -> bool {
        let Ok(spec) = self.env.var("TEST_FAULT_PLACEMENTS").map(|v| v.to_string()) else { return false };
        let fails = spec.split(',').filter_map(|s| s.trim().split_once(':')).any(|(t, n)| {
            t == tenant && n.trim().parse::<u64>().is_ok_and(|n| self.faults_injected.get() < n)
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
            (Method::Post, "/placements") => self.placements(req.json().await?).await,
            (Method::Get, "/pheromones") => self.table(),
            (Method::Delete, "/pheromones") => self.reset(),
            (Method::Get, "/metrics") => self.metrics(),
            _ => Ok(text_response(404, "unknown colony route".into(), "text/plain")),
        }
    }

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
            decision_count: Cell::new(None),
            faults_injected: Cell::new(0),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        match self.route(req).await {
            Ok(r) => Ok(r),
            Err(e) => {
                let message = e.to_string();
                let reason = if message.starts_with(CORRUPT) { "corrupt_state" } else { "error" };
                worker::console_error!("colony {}: {message}", self.tenant().unwrap_or_default());
                Ok(json_response(503, &serde_json::json!({"error": message, "reason": reason})))
            }
        }
    }


    /// Drops decisions older than DECISION_TTL_MS (pods never confirmed) and confirmations older
    /// than CONFIRMED_TTL_MS, then re-arms for the moment the oldest remaining row expires.
    async fn alarm(&self) -> Result<Response> {
        self.alarm_armed.set(false);
        self.ensure_schema()?;
        let config = self.config()?;
        let now = worker::Date::now().as_millis();
        let mut writes = Writes::default();
        writes.push("DELETE FROM decisions WHERE created_ms < ?", vec![int(now.saturating_sub(config.decision_ttl_ms))]);
        writes.push("DELETE FROM confirmed WHERE confirmed_ms < ?", vec![int(now.saturating_sub(config.confirmed_ttl_ms))]);
        self.decision_count.set(None);
        self.commit(writes)?;
        let next = [
            (self.oldest("SELECT MIN(created_ms) AS value FROM decisions")?, config.decision_ttl_ms),
            (self.oldest("SELECT MIN(confirmed_ms) AS value FROM confirmed")?, config.confirmed_ttl_ms),
        ]
        .into_iter()
        .filter_map(|(oldest, ttl)| oldest.map(|t| t.saturating_add(ttl)))
        .min();
        if let Some(expires_at) = next {
            self.state.storage().set_alarm(alarm_offset(expires_at.saturating_sub(now))).await?;
            self.alarm_armed.set(true);
        }
        Response::ok("pruned")
    }
}
