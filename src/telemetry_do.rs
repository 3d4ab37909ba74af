//! The Telemetry Durable Object: one global instance holding request counters, latency
//! histograms and the set of tenants seen (so `/metrics` knows which colonies to ask).
//! State is one JSON row in the object's SQLite storage, written on every event.

use std::cell::RefCell;

use worker::{durable_object, DurableObject, Env, Method, Request, Response, Result, SqlStorage, State};

use crate::http::{json_response, text_response};
use crate::metrics_text::TelemetryState;
use crate::telemetry::Event;

#[durable_object]
pub struct Telemetry {
    sql: SqlStorage,
    state: RefCell<Option<TelemetryState>>,
}

impl Telemetry {
    fn with_state<T>(&self, f: impl FnOnce(&mut TelemetryState) -> T) -> Result<T> {
        let mut slot = self.state.borrow_mut();
        let state = match slot.take() {
            Some(s) => s,
            None => self.load()?,
        };
        Ok(f(slot.insert(state)))
    }

    /// The stored state. A row that does not parse is logged and replaced by an empty state
    /// that counts the loss (`aco_telemetry_state_resets_total`): metrics must keep working.
    fn load(&self) -> Result<TelemetryState> {
        self.sql.exec("CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL)", None)?;
        #[derive(serde::Deserialize)]
        struct Row {
            value: String,
        }
        let rows: Vec<Row> = self.sql.exec("SELECT value FROM meta WHERE name = 'state'", None)?.to_array()?;
        let Some(row) = rows.first() else { return Ok(TelemetryState::default()) };
        match serde_json::from_str(&row.value) {
            Ok(state) => Ok(state),
            Err(e) => {
                worker::console_error!("telemetry: stored state does not parse ({e}); starting from empty counters");
                let mut state = TelemetryState::default();
                state.add("aco_telemetry_state_resets_total", "", 1.0);
                Ok(state)
            }
        }
    }

    fn persist(&self) -> Result<()> {
        let text = self.with_state(|s| serde_json::to_string(s))??;
        self.sql.exec("INSERT OR REPLACE INTO meta(name, value) VALUES('state', ?)", Some(vec![text.into()]))?;
        Ok(())
    }
}

impl DurableObject for Telemetry {
    fn new(state: State, _env: Env) -> Self {
        Self { sql: state.storage().sql(), state: RefCell::new(None) }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        match (req.method(), req.path().as_str()) {
            (Method::Post, "/event") => {
                let event: Event = req.json().await?;
                self.with_state(|s| s.apply(&event))?;
                self.persist()?;
                Ok(json_response(200, &serde_json::json!({"ok": true})))
            }
            (Method::Get, "/metrics") => {
                let (text, tenants) = self.with_state(|s| (s.render(), s.tenants.iter().cloned().collect::<Vec<_>>()))?;
                Ok(json_response(200, &serde_json::json!({"text": text, "tenants": tenants})))
            }
            _ => Ok(text_response(404, "unknown telemetry route".into(), "text/plain")),
        }
    }
}
