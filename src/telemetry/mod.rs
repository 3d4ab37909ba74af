//! Request counters, aggregated per isolate and sent to the Telemetry Durable Object in batches.
//!
//! Isolates share no memory, so counters cannot live in the Worker alone; but one Durable Object
//! request and one row write per request (what this used to do) costs more than the request it
//! measures and makes one object a throughput ceiling for every cluster. So each isolate folds
//! its requests into a local [`TelemetryState`] and, at most `TELEMETRY_FLUSH_MS` later, a
//! request's `waitUntil` sends everything not yet acknowledged in one request.
//!
//! Delivery is at least once and counted once: every batch carries this isolate's id and a
//! sequence number; the Durable Object applies each sequence number once and acknowledges the
//! highest it applied; a batch stays here until acknowledged, so a failed flush is retried by
//! the next. `/metrics` flushes its own isolate first, so it is exact for that isolate and at
//! most `TELEMETRY_FLUSH_MS` behind for the others.

mod ledger;
mod object;
pub mod state;

pub use object::Telemetry;

use std::cell::{Cell, RefCell};

use serde::{Deserialize, Serialize};
use worker::{Method, Request, RequestInit};

use crate::bindings::Bindings;
use state::TelemetryState;

pub const BINDING: &str = "TELEMETRY";
/// One global instance: it now receives one request per isolate per flush interval.
pub const INSTANCE: &str = "global";
/// Unacknowledged batches kept per isolate; older ones are merged into one (nothing is lost,
/// only the ability to send them separately).
const MAX_PENDING: usize = 32;

/// Request-duration histogram buckets, in seconds.
pub const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Event {
    pub verb: String,
    pub code: u16,
    pub seconds: f64,
    /// Extra counters: (metric name, labels as `k="v",…` text, increment).
    pub counters: Vec<(String, String, f64)>,
    /// The request's cluster, empty for the default one (and for requests counted without a
    /// label); a `cluster` label on every series of a named one.
    #[serde(default)]
    pub cluster: String,
}

impl Event {
    pub fn count(&mut self, name: &str, labels: String, by: f64) {
        if by != 0.0 {
            self.counters.push((name.to_string(), labels, by));
        }
    }
}

/// One isolate's counters since its previous batch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Batch {
    pub seq: u64,
    pub state: TelemetryState,
}

/// What an isolate sends: every batch the Durable Object has not acknowledged, oldest first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Delivery {
    pub isolate: String,
    pub batches: Vec<Batch>,
    pub now_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ack {
    /// Every batch of this isolate up to this sequence number is applied.
    pub applied_through: u64,
}

#[derive(Default)]
struct Local {
    isolate: String,
    current: TelemetryState,
    next_seq: u64,
    pending: Vec<Batch>,
    /// Sends of this isolate's batches that failed, since the isolate started. Kept here, not
    /// sent: a failure to send cannot be counted by sending (see [`isolate_series`]).
    failed_flushes: u64,
}

thread_local! {
    static LOCAL: RefCell<Local> = RefCell::new(Local::default());
    static FLUSH_SCHEDULED: Cell<bool> = const { Cell::new(false) };
}

fn with_local<T>(f: impl FnOnce(&mut Local) -> T) -> T {
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        if l.isolate.is_empty() {
            // Unique per isolate so that the Durable Object can tell sequences apart.
            l.isolate = format!(
                "{:016x}",
                getrandom::u64().unwrap_or_else(|_| worker::Date::now().as_millis())
            );
            l.next_seq = 1;
        }
        f(&mut l)
    })
}

/// Adds a finished request to this isolate's counters.
pub fn record(event: &Event) {
    with_local(|l| l.current.apply(event));
}

/// Adds to a counter outside any request's event (work done after the response).
pub fn count(name: &str, labels: &str, by: f64) {
    if by != 0.0 {
        with_local(|l| l.current.add(name, labels, by));
    }
}

/// Seals the current counters into a numbered batch; returns what is owed to the Durable Object.
fn seal(now_ms: u64) -> Option<Delivery> {
    with_local(|l| {
        if !l.current.is_empty() {
            let state = std::mem::take(&mut l.current);
            l.pending.push(Batch {
                seq: l.next_seq,
                state,
            });
            l.next_seq += 1;
            if l.pending.len() > MAX_PENDING {
                let oldest = l.pending.remove(0);
                l.pending[0].state.merge(&oldest.state);
            }
        }
        (!l.pending.is_empty()).then(|| Delivery {
            isolate: l.isolate.clone(),
            batches: l.pending.clone(),
            now_ms,
        })
    })
}

/// Sends every unacknowledged batch; keeps them on failure (the next flush retries) and counts
/// the failure in this isolate.
pub async fn flush(bindings: &Bindings, now_ms: u64) -> Result<(), String> {
    FLUSH_SCHEDULED.with(|s| s.set(false));
    let Some(delivery) = seal(now_ms) else {
        return Ok(());
    };
    let result = send(bindings, &delivery).await;
    with_local(|l| match &result {
        Ok(ack) => l.pending.retain(|b| b.seq > ack.applied_through),
        Err(_) => l.failed_flushes += 1,
    });
    result.map(|_| ())
}

async fn send(bindings: &Bindings, delivery: &Delivery) -> Result<Ack, String> {
    let body = serde_json::to_string(delivery).map_err(|e| e.to_string())?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(body.into()));
    let req =
        Request::new_with_init("https://telemetry/batches", &init).map_err(|e| e.to_string())?;
    let mut resp = bindings
        .do_fetch(BINDING, "Telemetry", INSTANCE, req)
        .await
        .map_err(|e| e.message)?;
    if resp.status_code() != 200 {
        let text = resp.text().await.unwrap_or_default();
        return Err(format!("telemetry answered {}: {text}", resp.status_code()));
    }
    resp.json()
        .await
        .map_err(|e| format!("telemetry reply: {e}"))
}

/// What the answering isolate knows of its own delivery, computed here and never stored: the
/// one view of telemetry that still works when the Telemetry object does not (Prometheus text,
/// appended to `/metrics`; each scrape shows the isolate that answered it).
pub fn isolate_series() -> String {
    use std::fmt::Write;
    let (failed, pending) = with_local(|l| (l.failed_flushes, l.pending.len()));
    let mut out = String::new();
    let failures = "aco_telemetry_isolate_flush_failures_total";
    let _ = writeln!(out, "# HELP {failures} Failed sends of this isolate's counters to the Telemetry object since the isolate started (computed in the isolate that answered this scrape; not stored).\n# TYPE {failures} counter\n{failures} {failed}");
    let pending_name = "aco_telemetry_isolate_pending_batches";
    let _ = writeln!(out, "# HELP {pending_name} Counter batches of this isolate the Telemetry object has not acknowledged yet (sent again by the next flush).\n# TYPE {pending_name} gauge\n{pending_name} {pending}");
    out
}

/// After a request: if no flush is due yet in this isolate, this request's `waitUntil` sends the
/// counters `flush_ms` from now (immediately with 0). Returns the work to hand to `waitUntil`.
pub fn schedule_flush(
    bindings: Bindings,
    flush_ms: u64,
) -> Option<impl std::future::Future<Output = ()>> {
    if FLUSH_SCHEDULED.with(|s| s.replace(true)) {
        return None;
    }
    Some(async move {
        if flush_ms > 0 {
            worker::Delay::from(std::time::Duration::from_millis(flush_ms)).await;
        }
        if let Err(e) = flush(&bindings, worker::Date::now().as_millis()).await {
            worker::console_error!("telemetry: flushing this isolate's counters failed (kept, sent again by the next flush): {e}");
        }
    })
}
