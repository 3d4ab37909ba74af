//! The Worker's telemetry as a protocol, without I/O: what an isolate counts ([`Event`],
//! [`state::TelemetryState`]), what it delivers to the Telemetry Durable Object ([`Delivery`]:
//! numbered counter batches and the latest report of each colony it heard from), what the
//! object keeps ([`ledger::TelemetryLedger`]) and the scrape it renders ([`scrape::render`]).
//!
//! Isolates share no memory and one Durable Object request per request would cost more than the
//! request it measures, so each isolate folds its requests into a local state and sends it at
//! most every `TELEMETRY_FLUSH_MS`. Delivery is at least once and counted once: every batch
//! carries its isolate's id and a sequence number, and the ledger applies each number once.
//!
//! Colonies report themselves: a colony attaches its report to a reply whenever it changed
//! since the report it last attached, the isolate that got it carries it with its next
//! delivery, and the ledger keeps the newest per colony. So a scrape is one request to one
//! object, however many colonies exist, and never asks a colony anything. A colony's series are
//! as fresh as its last change's delivery (`TELEMETRY_FLUSH_MS`); a report is lost only with an
//! isolate that dies before delivering it, and the colony's next change brings the series back.

pub mod ledger;
pub mod outbox;
pub mod scrape;
pub mod state;

use serde::{Deserialize, Serialize};

use crate::colony_store::wire::ColonyReport;
use crate::metrics::Metric;
use state::TelemetryState;

/// Request-duration histogram buckets, in seconds.
pub const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// One request as telemetry sees it.
#[derive(Debug, Clone, Default)]
pub struct Event {
    pub verb: String,
    pub code: u16,
    pub seconds: f64,
    /// Extra counters: (family name, label text, increment).
    pub counters: Vec<(&'static str, String, f64)>,
    /// The request's cluster, empty for the default one (and for requests counted without a
    /// label); a `cluster` label on every series of a named one.
    pub cluster: String,
}

impl Event {
    /// Adds `by` to the family's series with these label values (in the family's label order).
    pub fn count(&mut self, metric: &'static Metric, values: &[&str], by: f64) {
        if by != 0.0 {
            self.counters
                .push((metric.name, metric.label_text(values), by));
        }
    }
}

/// One isolate's counters since its previous batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    pub seq: u64,
    pub state: TelemetryState,
}

/// A colony's report as the colony made it: its object name and its clock then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StampedReport {
    /// The colony's Durable Object name (`<cluster>/<tenant>`, or the bare tenant of the
    /// default cluster).
    pub colony: String,
    pub at_ms: u64,
    pub report: ColonyReport,
}

/// What the isolate that answers a scrape knows of its own delivery, computed there and never
/// stored (the one view of telemetry that still works when deliveries do not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IsolateView {
    pub failed_flushes: u64,
    pub pending_batches: u64,
}

/// What an isolate sends: every batch the Durable Object has not acknowledged, oldest first,
/// and the newest report of each colony it heard from since its last acknowledged delivery.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub isolate: String,
    pub batches: Vec<Batch>,
    #[serde(default)]
    pub reports: Vec<StampedReport>,
    pub now_ms: u64,
}

impl Delivery {
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty() && self.reports.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ack {
    /// Every batch of this isolate up to this sequence number is applied.
    pub applied_through: u64,
}

/// `GET /metrics`: the scraping isolate's own delivery (if it had anything to send) and its view.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScrapeRequest {
    pub delivery: Option<Delivery>,
    pub isolate: IsolateView,
}

/// The answer to a [`ScrapeRequest`]: the Prometheus text, and the acknowledgement of the
/// delivery it carried (none without one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScrapeReply {
    pub ack: Option<Ack>,
    pub exposition: String,
}
