//! Request counters, aggregated per isolate and sent to the Telemetry Durable Object in batches
//! (the protocol — counting, batches, the ledger, the scrape — is `aco_core::telemetry`; this
//! file is the isolate's side of it).
//!
//! Each isolate folds its requests into a local state and, at most `TELEMETRY_FLUSH_MS` later,
//! a request's `waitUntil` sends everything not yet acknowledged in one request, with the
//! newest report of every colony that answered this isolate since. A batch stays here until
//! acknowledged, so a failed flush is retried by the next. `/metrics` delivers its own isolate's
//! counters with the scrape, so it is exact for that isolate and at most `TELEMETRY_FLUSH_MS`
//! behind for the others.

pub mod api;
mod object;

pub use api::BINDING;
pub use object::Telemetry;

use aco_core::metrics::Metric;
use aco_core::telemetry::outbox::Outbox;
pub use aco_core::telemetry::Event;
use aco_core::telemetry::{Ack, Delivery, IsolateView, StampedReport};

use crate::bindings::Bindings;
use crate::isolate;
use crate::object_call;

fn with_outbox<T>(f: impl FnOnce(&mut Outbox) -> T) -> T {
    isolate::with(|i| {
        let mut o = i.telemetry.borrow_mut();
        let outbox = o.get_or_insert_with(|| {
            // Unique per isolate so that the Durable Object can tell sequences apart.
            Outbox::new(format!(
                "{:016x}",
                getrandom::u64().unwrap_or_else(|_| worker::Date::now().as_millis())
            ))
        });
        f(outbox)
    })
}

/// Adds a finished request to this isolate's counters.
pub fn record(event: &Event) {
    with_outbox(|o| o.record(event));
}

/// Adds to a counter outside any request's event (work done after the response).
pub fn count(metric: &'static Metric, values: &[&str], by: f64) {
    with_outbox(|o| o.count(metric, values, by));
}

/// Keeps a colony's report for the next delivery (the newest of each colony).
pub fn colony_report(report: StampedReport) {
    with_outbox(|o| o.colony_report(report));
}

/// Seals the current counters into a numbered batch; returns what is owed to the Durable Object.
pub fn seal(now_ms: u64) -> Option<Delivery> {
    with_outbox(|o| o.seal(now_ms))
}

/// What a delivery's answer means for this isolate's outbox.
pub fn delivered(delivery: &Delivery, result: Result<Ack, ()>) {
    with_outbox(|o| o.delivered(delivery, result));
}

/// What this isolate knows of its own delivery (shown by the scrape it answers).
pub fn isolate_view() -> IsolateView {
    with_outbox(|o| o.view())
}

/// Sends every unacknowledged batch; keeps them on failure (the next flush retries) and counts
/// the failure in this isolate.
pub async fn flush(bindings: &Bindings, now_ms: u64) -> Result<(), String> {
    isolate::with(|i| i.telemetry_flush_scheduled.set(false));
    let Some(delivery) = seal(now_ms) else {
        return Ok(());
    };
    let result = send(bindings, &delivery).await;
    delivered(&delivery, result.as_ref().copied().map_err(|_| ()));
    result.map(|_| ())
}

async fn send(bindings: &Bindings, delivery: &Delivery) -> Result<Ack, String> {
    object_call::call(bindings, api::INSTANCE, delivery)
        .await
        .map_err(|e| e.message)
}

/// After a request: if no flush is due yet in this isolate, this request's `waitUntil` sends the
/// counters `flush_ms` from now (immediately with 0). Returns the work to hand to `waitUntil`.
pub fn schedule_flush(
    bindings: Bindings,
    flush_ms: u64,
) -> Option<impl std::future::Future<Output = ()>> {
    if isolate::with(|i| i.telemetry_flush_scheduled.replace(true)) {
        return None;
    }
    Some(async move {
        if flush_ms > 0 {
            worker::Delay::from(std::time::Duration::from_millis(flush_ms)).await;
        }
        if let Err(e) = flush(&bindings, worker::Date::now().as_millis()).await {
            let message = format!(
                "flushing this isolate's counters failed (kept, sent again by the next flush): {e}"
            );
            crate::log::error("telemetry", Some(&bindings.request_id), &message);
        }
    })
}
