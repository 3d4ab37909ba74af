//! The Telemetry Durable Object: one global instance gathering every isolate's counter batches
//! (see `telemetry/mod.rs`). State is one row per cluster in the table `parts` (`ledger.rs`),
//! each bounded by construction (`state.rs`); a delivery rewrites the rows of the clusters it
//! changed — one row per isolate per flush interval for a one-cluster deployment, not one per
//! request.
//!
//! Internal API: `POST /batches` (`Delivery` → `Ack`), `GET /state` (every cluster's series, as
//! `TelemetryState` JSON; `metrics_text.rs` renders it in the Worker).

use std::cell::RefCell;
use std::collections::BTreeMap;

use worker::{
    durable_object, DurableObject, Env, Method, Request, Response, Result, SqlStorage, State,
};

use super::ledger::{self, ClusterPart, TelemetryLedger};
use super::Delivery;
use crate::bindings::ROWS_WRITTEN_HEADER;
use crate::http::{json_response, text_response};
use crate::sql_transaction::run_in_transaction;

#[durable_object]
pub struct Telemetry {
    state: State,
    sql: SqlStorage,
    ledger: RefCell<Option<TelemetryLedger>>,
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

    /// The stored parts. A row that does not parse is logged and that cluster starts from
    /// empty counters, counted (`aco_telemetry_state_resets_total`): metrics must keep working.
    fn load(&self) -> Result<TelemetryLedger> {
        self.sql.exec(ledger::CREATE_TABLE, None)?;
        #[derive(serde::Deserialize)]
        struct Row {
            cluster: String,
            body: String,
        }
        let rows: Vec<Row> = self.sql.exec(ledger::SELECT_ALL, None)?.to_array()?;
        let (mut ledger, unreadable) =
            TelemetryLedger::from_rows(rows.iter().map(|r| (r.cluster.as_str(), r.body.as_str())));
        for problem in &unreadable {
            worker::console_error!(
                "telemetry: stored part {problem} does not parse; that cluster starts from empty counters"
            );
            ledger.add("aco_telemetry_state_resets_total", "", 1.0);
        }
        Ok(ledger)
    }

    /// Writes the planned parts' rows in one transaction; returns the SQLite rows written.
    fn persist(&self, parts: &BTreeMap<String, ClusterPart>) -> Result<usize> {
        let statements = parts
            .iter()
            .map(|(cluster, part)| {
                let body = TelemetryLedger::row(part)
                    .map_err(|e| worker::Error::RustError(e.to_string()))?;
                Ok((ledger::UPSERT, vec![cluster.as_str().into(), body.into()]))
            })
            .collect::<Result<Vec<_>>>()?;
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
        match (req.method(), req.path().as_str()) {
            (Method::Post, "/batches") => {
                let delivery: Delivery = req.json().await?;
                // Planned on copies, written, then kept: a failed write changes nothing and the
                // isolate (not acknowledged) sends the batches again.
                let (ack, parts) = self.with_ledger(|l| l.plan(&delivery))?;
                let rows = if parts.is_empty() {
                    0
                } else {
                    let rows = self.persist(&parts)?;
                    self.with_ledger(|l| l.commit(parts))?;
                    rows
                };
                let resp = json_response(200, &ack);
                resp.headers().set(ROWS_WRITTEN_HEADER, &rows.to_string())?;
                Ok(resp)
            }
            (Method::Get, "/state") => {
                let state = self.with_ledger(|l| l.state())?;
                Ok(json_response(200, &state))
            }
            _ => Ok(text_response(
                404,
                "unknown telemetry route".into(),
                "text/plain",
            )),
        }
    }
}
