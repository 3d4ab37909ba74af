//! What each request reports to the Telemetry Durable Object. Isolates share no memory, so
//! counters cannot live in the Worker; they are sent after the response (`waitUntil`) and
//! gathered by `/metrics`.

use serde::{Deserialize, Serialize};
use worker::{Method, Request, RequestInit};

use crate::bindings::Bindings;

pub const BINDING: &str = "TELEMETRY";
/// One global instance: a few counter increments per scheduling decision is well within what a
/// single Durable Object serves.
pub const INSTANCE: &str = "global";

/// Request-duration histogram buckets, in seconds.
pub const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Event {
    pub verb: String,
    pub code: u16,
    pub seconds: f64,
    /// Extra counters: (metric name, labels as `k="v",…` text, increment).
    pub counters: Vec<(String, String, f64)>,
    /// Tenants whose colony this request wrote to (so `/metrics` knows which colonies to ask).
    pub tenants: Vec<String>,
}

impl Event {
    pub fn count(&mut self, name: &str, labels: String, by: f64) {
        if by != 0.0 {
            self.counters.push((name.to_string(), labels, by));
        }
    }
}

/// Sends the event; failures are logged, never surfaced (metrics must not break scheduling).
pub async fn record(bindings: Bindings, event: Event) {
    let result = async {
        let mut init = RequestInit::new();
        let body = serde_json::to_string(&event).map_err(|e| e.to_string())?;
        init.with_method(Method::Post).with_body(Some(body.into()));
        let req = Request::new_with_init("https://telemetry/event", &init).map_err(|e| e.to_string())?;
        bindings.do_fetch(BINDING, "Telemetry", INSTANCE, req).await.map_err(|e| e.message)
    }
    .await;
    if let Err(e) = result {
        worker::console_error!("telemetry: {e}");
    }
}
