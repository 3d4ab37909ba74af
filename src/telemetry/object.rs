//! The Telemetry Durable Object: one global instance gathering every isolate's deliveries
//! (`aco_core::telemetry`): counter parts, one row per cluster (`parts`), and the newest report
//! of each colony, one row per colony (`colony_reports`), each written only when it changed.
//!
//! Internal API (`api.rs`): `/batches` (`Delivery` → `Ack`), and `/scrape` (`ScrapeRequest`: the
//! scraping isolate's own delivery, applied first, and its view → `ScrapeReply`: the Prometheus
//! text and the `Ack` of that delivery). A scrape is this one request, however many colonies
//! there are: none of them is asked anything.

use std::cell::RefCell;

use aco_core::telemetry::ledger::{self, Plan, TelemetryLedger};
use aco_core::telemetry::{scrape, Delivery, ScrapeReply, ScrapeRequest};
use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::api::{Route, TelemetryApi};
use crate::bindings::ROWS_WRITTEN_HEADER;
use crate::http::text_response;
use crate::object_call::{self, Incoming, ObjectCall};
use crate::sql_transaction::run_in_transaction;

fn rust_error(e: impl std::fmt::Display) -> worker::Error {
    worker::Error::RustError(e.to_string())
}

/// The reply to the call `C`, with the rows its request wrote.
fn reply<C: ObjectCall>(value: &C::Reply, rows: usize) -> Result<Response> {
    let body = object_call::reply::<C>(value).map_err(rust_error)?;
    let resp = text_response(200, body, "application/json");
    resp.headers().set(ROWS_WRITTEN_HEADER, &rows.to_string())?;
    Ok(resp)
}

#[durable_object]
pub struct Telemetry {
    state: State,
    sql: SqlStorage,
    ledger: RefCell<Option<TelemetryLedger>>,
}

#[derive(serde::Deserialize)]
struct Row {
    key: String,
    body: String,
}

impl Telemetry {
    fn with_ledger<T>(&self, f: impl FnOnce(&mut TelemetryLedger) -> T) -> Result<T> {
        let mut slot = self.ledger.borrow_mut();
        let ledger = match slot.take() {
            Some(s) => s,
            None => self.load()?,
        };
        Ok(f(slot.insert(ledger)))
    }

    /// The stored rows. A row that does not parse is logged and that cluster (or colony)
    /// starts from empty, counted (`aco_telemetry_state_resets_total`): metrics must keep
    /// working.
    fn load(&self) -> Result<TelemetryLedger> {
        self.sql.exec(ledger::CREATE_TABLE, None)?;
        self.sql.exec(ledger::CREATE_REPORTS_TABLE, None)?;
        let rows = |query: &str| -> Result<Vec<Row>> { self.sql.exec(query, None)?.to_array() };
        let parts = rows(ledger::SELECT_ALL)?;
        let reports = rows(ledger::SELECT_REPORTS)?;
        let (mut ledger, unreadable) = TelemetryLedger::from_rows(
            parts.iter().map(|r| (r.key.as_str(), r.body.as_str())),
            reports.iter().map(|r| (r.key.as_str(), r.body.as_str())),
        );
        for problem in &unreadable {
            let message = format!("stored {problem} does not parse; it starts empty");
            crate::log::error("telemetry", None, &message);
            ledger.count_reset();
        }
        Ok(ledger)
    }

    /// Applies a delivery: planned on copies, written in one transaction, then kept — a failed
    /// write changes nothing and the isolate (not acknowledged) sends it again. Returns the
    /// acknowledgement and the rows written.
    fn apply(&self, delivery: &Delivery) -> Result<(aco_core::telemetry::Ack, usize)> {
        let plan = self.with_ledger(|l| l.plan(delivery))?;
        let ack = plan.ack;
        if plan.is_empty() {
            return Ok((ack, 0));
        }
        let rows = self.persist(&plan)?;
        self.with_ledger(|l| l.commit(plan))?;
        Ok((ack, rows))
    }

    fn persist(&self, plan: &Plan) -> Result<usize> {
        let text = |r: serde_json::Result<String>| r.map_err(rust_error);
        let mut statements = Vec::with_capacity(plan.parts.len() + plan.reports.len());
        for (cluster, part) in &plan.parts {
            let body = text(TelemetryLedger::row(part))?;
            statements.push((ledger::UPSERT, vec![cluster.as_str().into(), body.into()]));
        }
        for (colony, report) in &plan.reports {
            let body = text(TelemetryLedger::report_row(report))?;
            statements.push((
                ledger::UPSERT_REPORT,
                vec![colony.as_str().into(), body.into()],
            ));
        }
        run_in_transaction(&self.state.storage(), &self.sql, &statements)
    }
}

impl DurableObject for Telemetry {
    fn new(state: State, _env: Env) -> Self {
        Self {
            sql: state.storage().sql(),
            state,
            ledger: RefCell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let incoming = match Incoming::<TelemetryApi>::read(&mut req).await {
            Ok(incoming) => incoming,
            Err(e) => return Ok(text_response(404, e.to_string(), "text/plain")),
        };
        match incoming.route {
            Route::Batches => {
                let delivery: Delivery = incoming.call().map_err(rust_error)?;
                let (ack, rows) = self.apply(&delivery)?;
                reply::<Delivery>(&ack, rows)
            }
            Route::Scrape => {
                let scrape: ScrapeRequest = incoming.call().map_err(rust_error)?;
                let (ack, rows) = match &scrape.delivery {
                    Some(d) => {
                        let (ack, rows) = self.apply(d)?;
                        (Some(ack), rows)
                    }
                    None => (None, 0),
                };
                let exposition = self.with_ledger(|l| scrape::render(l, scrape.isolate))?;
                reply::<ScrapeRequest>(&ScrapeReply { ack, exposition }, rows)
            }
        }
    }
}
