//! The Telemetry Durable Object: one global instance gathering every isolate's counter batches
//! (see `telemetry.rs`), request-duration histograms and the set of tenants seen (so `/metrics`
//! knows which colonies to ask). State is one JSON row in the object's SQLite storage, written
//! once per batch delivery that changed something — one row per isolate per flush interval,
//! not one per request.

use std::cell::RefCell;

use worker::{
    durable_object, DurableObject, Env, Method, Request, Response, Result, SqlStorage, State,
};

use super::ledger::TelemetryLedger;
use super::Delivery;
use crate::bindings::ROWS_WRITTEN_HEADER;
use crate::http::{json_response, text_response};

#[durable_object]
pub struct Telemetry {
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

    /// The stored state. A row that does not parse is logged and replaced by an empty state
    /// that counts the loss (`aco_telemetry_state_resets_total`): metrics must keep working.
    fn load(&self) -> Result<TelemetryLedger> {
        self.sql.exec(
            "CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL)",
            None,
        )?;
        #[derive(serde::Deserialize)]
        struct Row {
            value: String,
        }
        let rows: Vec<Row> = self
            .sql
            .exec("SELECT value FROM meta WHERE name = 'ledger'", None)?
            .to_array()?;
        let Some(row) = rows.first() else {
            return Ok(TelemetryLedger::default());
        };
        match serde_json::from_str(&row.value) {
            Ok(ledger) => Ok(ledger),
            Err(e) => {
                worker::console_error!(
                    "telemetry: stored state does not parse ({e}); starting from empty counters"
                );
                let mut ledger = TelemetryLedger::default();
                ledger
                    .state
                    .add("aco_telemetry_state_resets_total", "", 1.0);
                Ok(ledger)
            }
        }
    }

    /// Writes the ledger; returns the SQLite rows written.
    fn persist(&self) -> Result<usize> {
        let text = self.with_ledger(|s| serde_json::to_string(s))??;
        let cursor = self.sql.exec(
            "INSERT OR REPLACE INTO meta(name, value) VALUES('ledger', ?)",
            Some(vec![text.into()]),
        )?;
        Ok(cursor.rows_written())
    }
}

impl DurableObject for Telemetry {
    fn new(state: State, _env: Env) -> Self {
        Self {
            sql: state.storage().sql(),
            ledger: RefCell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        match (req.method(), req.path().as_str()) {
            (Method::Post, "/batches") => {
                let delivery: Delivery = req.json().await?;
                let (ack, changed) = self.with_ledger(|l| l.receive(&delivery))?;
                let rows = if changed { self.persist()? } else { 0 };
                let resp = json_response(200, &ack);
                resp.headers().set(ROWS_WRITTEN_HEADER, &rows.to_string())?;
                Ok(resp)
            }
            (Method::Get, "/metrics") => {
                let (text, tenants) = self.with_ledger(|l| {
                    (
                        l.state.render(),
                        l.state.tenants.iter().cloned().collect::<Vec<_>>(),
                    )
                })?;
                Ok(json_response(
                    200,
                    &serde_json::json!({"text": text, "tenants": tenants}),
                ))
            }
            _ => Ok(text_response(
                404,
                "unknown telemetry route".into(),
                "text/plain",
            )),
        }
    }
}
