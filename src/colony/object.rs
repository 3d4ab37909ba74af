//! The Colony Durable Object: one per cluster × tenant (named by `api::ColonyName`), a thin
//! adapter over `aco_core::colony_store::ColonyStore`, which holds the colony in memory and plans
//! what to write. This file loads the rows, routes the typed API (`api.rs`), runs a commit's
//! statements in one SQLite transaction (`transactionSync`) and arms the alarm that commits
//! decisions no request committed (`COMMIT_BACKSTOP_MS`). A Durable Object runs one event at a
//! time and nothing here awaits while the store is borrowed, so updates are serialised without
//! locks.
//!
//! Atomicity: a commit writes everything since the previous one, or (on failure) nothing; the
//! store is then dropped and reloaded from SQLite by the next event, under a new incarnation, so
//! isolates holding decisions it had not committed send them again.
//!
//! Every reply carries `x-aco-rows-written` (the rows its commit wrote); the object also counts
//! everything it wrote since it started — alarms and `setAlarm` included, which no reply shows —
//! and reports it (`aco_colony_rows_written_total`). A reply is the route's body in an
//! envelope `{"reply": …, "report": …}`: whenever the colony changed since its last report, the
//! new one rides along, and the isolate that gets it carries it to the Telemetry object, so no
//! scrape ever asks a colony (`aco_core::telemetry`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use aco_core::api::colony_export::ImportReply;
use aco_core::api::pheromones::ResetReply;
use aco_core::colony_store::explained::ExplainedRow;
use aco_core::colony_store::schema::{
    LedgerRow, SegmentRow, SnapshotRow, SqlArg, Statement, SCHEMA, SELECT_EXPLAINED_BODY,
    SELECT_EXPLAINED_KEYS, SELECT_LEDGER, SELECT_SEGMENTS, SELECT_SNAPSHOT,
};
use aco_core::colony_store::wire::{
    ColonyFailure, CopyRequest, DecisionBatch, DecisionLookup, DecisionsReply, FailureBody,
    LookupRequest, PlacementsRequest, ShadowRequest,
};
use aco_core::colony_store::ColonyStore;
use aco_core::config::{Config, Retention, StateBounds};
use serde::Deserialize;
use worker::{
    durable_object, DurableObject, Env, Request, Response, SqlStorage, SqlStorageValue, State,
};

use aco_core::colony_store::ReportKey;
use aco_core::telemetry::StampedReport;

use super::api::{
    ColonyApi, ExportReply, ExportRequest, ImportRequest, ResetRequest, Route,
    ShadowSummaryRequest, TableRequest, NAME_HEADER,
};
use crate::bindings::ROWS_WRITTEN_HEADER;
use crate::clock;
use crate::env_config;
use crate::http::json_response;
use crate::object_call::{self, Incoming, ObjectCall};
use crate::sql_transaction::run_in_transaction;

/// Prefix of the error a colony answers when its stored state does not parse.
const CORRUPT: &str = "corrupt colony state";

/// Why an event failed, kept typed up to the reply ([`FailureBody`]'s reason).
#[derive(Debug)]
enum Failure {
    /// The stored state does not parse.
    Corrupt(String),
    Other(worker::Error),
}

impl From<worker::Error> for Failure {
    fn from(e: worker::Error) -> Self {
        Failure::Other(e)
    }
}

impl From<Failure> for worker::Error {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Corrupt(m) => worker::Error::RustError(m),
            Failure::Other(e) => e,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Corrupt(m) => f.write_str(m),
            Failure::Other(e) => e.fmt(f),
        }
    }
}

impl Failure {
    fn reason(&self) -> ColonyFailure {
        match self {
            Failure::Corrupt(_) => ColonyFailure::CorruptState,
            Failure::Other(_) => ColonyFailure::Error,
        }
    }
}

type Result<T, E = Failure> = std::result::Result<T, E>;

fn failure(message: impl std::fmt::Display) -> Failure {
    Failure::Other(worker::Error::RustError(message.to_string()))
}

fn now() -> u64 {
    clock::now_ms()
}

#[derive(Deserialize)]
struct SnapshotSqlRow {
    part: f64,
    seq: f64,
    parts: f64,
    body: String,
}

#[derive(Deserialize)]
struct SegmentSqlRow {
    id: f64,
    body: String,
}

#[derive(Deserialize)]
struct LedgerSqlRow {
    seq: f64,
    body: String,
}

#[derive(Deserialize)]
struct ExplainedSqlRow {
    id: f64,
    newest_ms: f64,
    keys: String,
}

#[derive(Deserialize)]
struct BodySqlRow {
    body: String,
}

fn sql_value(a: &SqlArg) -> SqlStorageValue {
    match a {
        SqlArg::Int(i) => SqlStorageValue::Integer(*i),
        SqlArg::Text(t) => t.as_str().into(),
    }
}

#[durable_object]
pub struct Colony {
    state: State,
    env: Env,
    sql: SqlStorage,
    store: RefCell<Option<ColonyStore>>,
    /// The schema exists: created in the constructor, retried by the next event if that failed.
    schema_ready: Cell<bool>,
    /// When the armed alarm fires (ms since the epoch), if one is known to be armed.
    alarm_at: Cell<Option<u64>>,
    /// SQLite rows written since this instance started, `setAlarm` included.
    rows_written: Cell<u64>,
    /// Rows written by the current request (its `x-aco-rows-written`).
    request_rows: Cell<u64>,
    /// Placement requests failed so far by `TEST_FAULT_PLACEMENTS` (tests only).
    faults_injected: Cell<u64>,
    /// What the report a reply last carried was (none yet since the instance started).
    last_report: RefCell<Option<ReportKey>>,
}

impl Colony {
    fn config(&self) -> Result<Rc<Config>> {
        env_config::config(&self.env).map_err(failure)
    }

    fn ensure_schema(&self) -> Result<()> {
        if !self.schema_ready.get() {
            self.sql.exec(SCHEMA, None)?;
            self.schema_ready.set(true);
        }
        Ok(())
    }

    fn load(&self, retention: &Retention, bounds: &StateBounds) -> Result<ColonyStore> {
        let snapshot: Vec<SnapshotRow> = self
            .sql
            .exec(SELECT_SNAPSHOT, None)?
            .to_array::<SnapshotSqlRow>()?
            .into_iter()
            .map(|r| SnapshotRow {
                part: r.part as i64,
                seq: r.seq as i64,
                parts: r.parts as i64,
                body: r.body,
            })
            .collect();
        let after = ColonyStore::ledger_after(&snapshot);
        let ledger: Vec<LedgerRow> = self
            .sql
            .exec(SELECT_LEDGER, vec![SqlStorageValue::Integer(after)])?
            .to_array::<LedgerSqlRow>()?
            .into_iter()
            .map(|r| LedgerRow {
                seq: r.seq as i64,
                body: r.body,
            })
            .collect();
        let segments: Vec<SegmentRow> = self
            .sql
            .exec(SELECT_SEGMENTS, None)?
            .to_array::<SegmentSqlRow>()?
            .into_iter()
            .map(|r| SegmentRow {
                id: r.id as i64,
                body: r.body,
            })
            .collect();
        let explained: Vec<ExplainedRow> = self
            .sql
            .exec(SELECT_EXPLAINED_KEYS, None)?
            .to_array::<ExplainedSqlRow>()?
            .into_iter()
            .map(|r| ExplainedRow {
                id: r.id as i64,
                newest_ms: r.newest_ms as i64,
                keys: r.keys,
            })
            .collect();
        // A new incarnation per load: what an earlier one accepted but never committed is gone.
        let incarnation = getrandom::u64().unwrap_or_else(|_| now());
        let corrupt = |e: aco_core::colony_store::CorruptState| {
            Failure::Corrupt(format!(
                "{CORRUPT}: {e}; DELETE /v1/tenants/{{tenant}}/pheromones resets it"
            ))
        };
        ColonyStore::load(
            snapshot,
            segments,
            ledger,
            explained,
            incarnation,
            now(),
            retention,
            bounds,
        )
        .map_err(corrupt)
    }

    /// Runs `f` on the store, loading it on first use in this instance's lifetime.
    fn with_store<T>(
        &self,
        retention: &Retention,
        bounds: &StateBounds,
        f: impl FnOnce(&mut ColonyStore) -> T,
    ) -> Result<T> {
        let mut slot = self.store.borrow_mut();
        let store = match slot.take() {
            Some(s) => s,
            None => self.load(retention, bounds)?,
        };
        Ok(f(slot.insert(store)))
    }

    /// Commits what the store holds uncommitted, in one transaction. On failure nothing was
    /// written and the store is dropped (reloaded, under a new incarnation, by the next event).
    fn commit(&self, retention: &Retention, fault: bool) -> Result<()> {
        let mut slot = self.store.borrow_mut();
        let Some(store) = slot.as_mut() else {
            return Ok(());
        };
        if !store.is_dirty() {
            return Ok(());
        }
        let plan = store.plan_commit(now(), retention).map_err(failure)?;
        let mut statements: Vec<(&'static str, Vec<SqlStorageValue>)> = plan
            .statements
            .iter()
            .map(|s: &Statement| (s.sql, s.args.iter().map(sql_value).collect()))
            .collect();
        if fault {
            // A statement that fails inside the transaction: everything above is rolled back.
            statements.push(("INSERT INTO injected_fault_no_such_table VALUES(1)", vec![]));
        }
        match run_in_transaction(&self.state.storage(), &self.sql, &statements) {
            Ok(rows) => {
                self.count_rows(rows as u64);
                store.committed(plan, retention);
                Ok(())
            }
            Err(e) => {
                *slot = None;
                Err(e.into())
            }
        }
    }

    fn count_rows(&self, rows: u64) {
        self.rows_written.set(self.rows_written.get() + rows);
        self.request_rows.set(self.request_rows.get() + rows);
    }

    /// Arms the alarm for the store's backstop, unless one is armed at least as early.
    async fn arm_backstop(&self) -> Result<()> {
        let at = self
            .store
            .borrow()
            .as_ref()
            .and_then(ColonyStore::backstop_at);
        let Some(at) = at else {
            return Ok(());
        };
        if self.alarm_at.get().is_some_and(|armed| armed <= at) {
            return Ok(());
        }
        let offset = at.saturating_sub(now()).max(1) as i64;
        self.state.storage().set_alarm(offset).await?;
        // `setAlarm` is billed as a row written.
        self.count_rows(1);
        self.alarm_at.set(Some(at));
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

    /// The route's reply in its envelope, with the colony's report when it changed.
    fn envelope(&self, name: &str, reply: String) -> Result<String> {
        let report = match self.store.borrow().as_ref() {
            Some(store) => {
                let config = self.config()?;
                let mut last = self.last_report.borrow_mut();
                store.report_if_changed(&config.cost, self.rows_written.get(), &mut last)
            }
            None => None,
        };
        let report = match report {
            Some(report) => serde_json::to_string(&StampedReport {
                colony: name.to_string(),
                at_ms: now(),
                report,
            })
            .map_err(failure)?,
            None => "null".to_string(),
        };
        Ok(format!(r#"{{"reply":{reply},"report":{report}}}"#))
    }

    /// What is remembered of a pod, its confirmed explanation read from its `explained` row
    /// when it is not in memory (one row read).
    fn lookup(
        &self,
        retention: &Retention,
        bounds: &StateBounds,
        req: &LookupRequest,
    ) -> Result<DecisionLookup> {
        let (mut out, row) = self.with_store(retention, bounds, |s| {
            let out = s.lookup(&req.key, req.now_ms, retention);
            let row = match out.explained {
                Some(_) => None,
                None => s.explained_row(&req.key, req.now_ms, retention),
            };
            (out, row)
        })?;
        if let Some(id) = row {
            let rows: Vec<BodySqlRow> = self
                .sql
                .exec(SELECT_EXPLAINED_BODY, vec![SqlStorageValue::Integer(id)])?
                .to_array()?;
            if let Some(r) = rows.first() {
                out.explained =
                    ColonyStore::explained_in_row(id, &r.body, &req.key, req.now_ms, retention)
                        .map_err(|e| Failure::Corrupt(format!("{CORRUPT}: {e}")))?;
            }
        }
        Ok(out)
    }

    async fn route(&self, incoming: &Incoming<ColonyApi>, tenant: &str) -> Result<String> {
        self.ensure_schema()?;
        let config = self.config()?;
        // The groups the store reads: how long it keeps what, its bounds, and how outcomes decay.
        let (retention, bounds, cost) = (&config.retention, &config.bounds, &config.cost);
        fn parse<C: ObjectCall<Api = ColonyApi>>(incoming: &Incoming<ColonyApi>) -> Result<C> {
            incoming.call().map_err(failure)
        }
        fn reply<C: ObjectCall>(value: &C::Reply) -> Result<String> {
            object_call::reply::<C>(value).map_err(failure)
        }
        match incoming.route {
            Route::Copy => {
                parse::<CopyRequest>(incoming)?;
                reply::<CopyRequest>(&self.with_store(retention, bounds, |s| s.copy())?)
            }
            Route::Decisions => {
                let batch: DecisionBatch = parse(incoming)?;
                let due = self.with_store(retention, bounds, |s| {
                    s.name_tenant(tenant, batch.now_ms);
                    let dropped = s.record_decisions(
                        batch.decisions,
                        true,
                        batch.now_ms,
                        retention,
                        bounds,
                        cost,
                    );
                    (dropped, s.commit_due(now()))
                })?;
                let (dropped, due) = due;
                if due {
                    self.commit(retention, false)?;
                } else {
                    self.arm_backstop().await?;
                }
                let out = self.with_store(retention, bounds, |s| DecisionsReply {
                    version: s.version(),
                    snapshot: (batch.known_version != s.version()).then(|| s.copy()),
                    durability: s.durability(),
                    dropped,
                })?;
                reply::<DecisionBatch>(&out)
            }
            Route::Placements => {
                let req: PlacementsRequest = parse(incoming)?;
                let mut out = self.with_store(retention, bounds, |s| {
                    s.name_tenant(tenant, req.now_ms);
                    let mut dropped = s.record_decisions(
                        req.decisions,
                        true,
                        req.now_ms,
                        retention,
                        bounds,
                        cost,
                    );
                    let mut out = s.placements(&req.items, req.now_ms, retention, cost);
                    for (reason, n) in std::mem::take(&mut out.dropped) {
                        *dropped.entry(reason).or_default() += n;
                    }
                    out.dropped = dropped;
                    out
                })?;
                // Durable before the reply: the reporter forgets what was acknowledged.
                self.commit(retention, self.inject_fault(tenant))?;
                self.with_store(retention, bounds, |s| {
                    out.version = s.version();
                    out.durability = s.durability();
                    out.snapshot = req
                        .known_version
                        .filter(|v| *v != s.version())
                        .map(|_| s.copy());
                })?;
                reply::<PlacementsRequest>(&out)
            }
            Route::Shadow => {
                let req: ShadowRequest = parse(incoming)?;
                let out = self.with_store(retention, bounds, |s| {
                    s.name_tenant(tenant, req.now_ms);
                    s.shadow(&req.items, req.now_ms, retention, cost)
                })?;
                self.commit(retention, false)?;
                reply::<ShadowRequest>(&out)
            }
            Route::ShadowSummary => {
                parse::<ShadowSummaryRequest>(incoming)?;
                reply::<ShadowSummaryRequest>(
                    &self.with_store(retention, bounds, |s| s.meta().shadow.clone())?,
                )
            }
            Route::Lookup => {
                let req: LookupRequest = parse(incoming)?;
                reply::<LookupRequest>(&self.lookup(retention, bounds, &req)?)
            }
            Route::Table => {
                let req: TableRequest = parse(incoming)?;
                reply::<TableRequest>(
                    &self.with_store(retention, bounds, |s| s.table(req.now_ms, cost))?,
                )
            }
            Route::Export => {
                parse::<ExportRequest>(incoming)?;
                reply::<ExportRequest>(&self.with_store(retention, bounds, |s| ExportReply {
                    version: s.version(),
                    state: s.export(),
                })?)
            }
            Route::Import => {
                // Checked whole by the Worker (`api::colony_export`) before it was sent.
                let req: ImportRequest = parse(incoming)?;
                let trails = req.state.colony.pheromones.trails.len() as u64;
                let changed = self.with_store(retention, bounds, |s| {
                    s.name_tenant(tenant, req.now_ms);
                    s.import(req.state, req.now_ms)
                })?;
                // One transaction: on failure nothing is written and the store is reloaded.
                self.commit(retention, false)?;
                let version = self.with_store(retention, bounds, |s| s.version())?;
                reply::<ImportRequest>(&ImportReply {
                    changed,
                    version,
                    trails,
                })
            }
            Route::Reset => {
                let req: ResetRequest = parse(incoming)?;
                if self.store.borrow().is_none() {
                    if let Err(e) = self.with_store(retention, bounds, |_| ()) {
                        // Unreadable state: the reset is what repairs it, so it starts over.
                        let message = format!("reset over unreadable state: {e}");
                        crate::log::object_error("colony", tenant, None, &message);
                        let incarnation = getrandom::u64().unwrap_or_else(|_| now());
                        *self.store.borrow_mut() = Some(ColonyStore::reset_unreadable(
                            tenant,
                            incarnation,
                            req.now_ms,
                        ));
                    }
                }
                let version = self.with_store(retention, bounds, |s| {
                    s.name_tenant(tenant, req.now_ms);
                    s.reset(req.now_ms);
                    s.version()
                })?;
                self.commit(retention, false)?;
                reply::<ResetRequest>(&ResetReply {
                    reset: true,
                    version,
                })
            }
        }
    }
}

impl DurableObject for Colony {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        // Before any event, so that every route works on a fresh colony.
        let schema_ready = sql.exec(SCHEMA, None).is_ok();
        Self {
            state,
            env,
            sql,
            store: RefCell::new(None),
            schema_ready: Cell::new(schema_ready),
            alarm_at: Cell::new(None),
            rows_written: Cell::new(0),
            request_rows: Cell::new(0),
            faults_injected: Cell::new(0),
            last_report: RefCell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> worker::Result<Response> {
        self.request_rows.set(0);
        // On the Worker's clock (the wall clock but under TEST_CLOCK_HEADER).
        if let Ok(config) = self.config() {
            clock::of_request(&req, &config.testing).map_err(|e| failure(e.message))?;
        }
        let name = req.headers().get(NAME_HEADER)?.unwrap_or_default();
        let tenant = aco_core::cluster::split_colony_name(&name).1.to_string();
        let request_id = crate::log::forwarded_id(&req);
        let result = match Incoming::<ColonyApi>::read(&mut req).await {
            Ok(incoming) => self.route(&incoming, &tenant).await,
            Err(e) => Err(Failure::Other(e)),
        };
        let resp = match result.and_then(|text| self.envelope(&name, text)) {
            Ok(text) => crate::http::text_response(200, text, "application/json"),
            Err(e) => {
                let body = FailureBody {
                    error: e.to_string(),
                    reason: e.reason(),
                };
                crate::log::object_error("colony", &name, request_id.as_deref(), &body.error);
                json_response(503, &body)
            }
        };
        resp.headers()
            .set(ROWS_WRITTEN_HEADER, &self.request_rows.get().to_string())?;
        Ok(resp)
    }

    /// Commits what no request committed within `COMMIT_BACKSTOP_MS`.
    async fn alarm(&self) -> worker::Result<Response> {
        self.alarm_at.set(None);
        self.ensure_schema()?;
        let config = self.config()?;
        self.commit(&config.retention, false)?;
        // Changes made while this alarm was pending and not committed with it.
        self.arm_backstop().await?;
        Response::ok("committed")
    }
}
