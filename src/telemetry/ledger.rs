//! What the Telemetry Durable Object keeps: the gathered counters and, per isolate, the highest
//! batch sequence number applied, so that a batch delivered twice (a retried flush, or
//! `/metrics` flushing what a scheduled flush is still sending) is counted once. Pure, tested
//! natively.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Ack, Delivery};
use crate::metrics_text::TelemetryState;

/// An isolate silent this long is forgotten (isolates live minutes to hours); a batch it sends
/// later is applied as new, which can only happen after a flush stuck for an hour.
const FORGET_ISOLATE_MS: u64 = 3_600_000;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetryLedger {
    pub state: TelemetryState,
    /// isolate id → (highest sequence number applied, when it was last heard from).
    #[serde(default)]
    pub applied: BTreeMap<String, (u64, u64)>,
}

impl TelemetryLedger {
    /// Applies every batch not applied before, oldest first. Returns the acknowledgement and
    /// whether anything changed (nothing to persist otherwise).
    pub fn receive(&mut self, delivery: &Delivery) -> (Ack, bool) {
        let entry = self
            .applied
            .entry(delivery.isolate.clone())
            .or_insert((0, delivery.now_ms));
        let mut changed = false;
        for batch in &delivery.batches {
            if batch.seq > entry.0 {
                self.state.merge(&batch.state);
                entry.0 = batch.seq;
                changed = true;
            }
        }
        entry.1 = entry.1.max(delivery.now_ms);
        let ack = Ack {
            applied_through: entry.0,
        };
        let cutoff = delivery.now_ms.saturating_sub(FORGET_ISOLATE_MS);
        self.applied.retain(|_, (_, seen)| *seen >= cutoff);
        (ack, changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::{Batch, Event};

    fn batch(seq: u64, verb: &str) -> Batch {
        let mut state = TelemetryState::default();
        state.apply(&Event {
            verb: verb.into(),
            code: 200,
            seconds: 0.001,
            ..Default::default()
        });
        Batch { seq, state }
    }

    fn delivery(isolate: &str, batches: Vec<Batch>, now_ms: u64) -> Delivery {
        Delivery {
            isolate: isolate.into(),
            batches,
            now_ms,
        }
    }

    fn requests(l: &TelemetryLedger, verb: &str) -> f64 {
        l.state.counters["aco_requests_total"][&format!("verb=\"{verb}\",code=\"200\"")]
    }

    #[test]
    fn a_batch_delivered_twice_or_out_of_order_counts_once() {
        let mut l = TelemetryLedger::default();
        let (ack, changed) = l.receive(&delivery(
            "a",
            vec![batch(1, "filter"), batch(2, "filter")],
            10,
        ));
        assert_eq!((ack.applied_through, changed), (2, true));
        // /metrics flushed 1..3 first; the scheduled flush of 1..2 arrives afterwards.
        let (ack, _) = l.receive(&delivery(
            "a",
            vec![batch(1, "filter"), batch(2, "filter"), batch(3, "filter")],
            20,
        ));
        assert_eq!(ack.applied_through, 3);
        let (ack, changed) = l.receive(&delivery(
            "a",
            vec![batch(1, "filter"), batch(2, "filter")],
            30,
        ));
        assert_eq!((ack.applied_through, changed), (3, false));
        assert_eq!(requests(&l, "filter"), 3.0);
        // Another isolate's sequence numbers are its own.
        l.receive(&delivery("b", vec![batch(1, "filter")], 40));
        assert_eq!(requests(&l, "filter"), 4.0);
    }

    #[test]
    fn isolates_silent_for_an_hour_are_forgotten() {
        let mut l = TelemetryLedger::default();
        l.receive(&delivery("old", vec![batch(1, "prioritize")], 0));
        l.receive(&delivery(
            "new",
            vec![batch(1, "prioritize")],
            FORGET_ISOLATE_MS + 1,
        ));
        assert_eq!(l.applied.keys().collect::<Vec<_>>(), vec!["new"]);
        assert_eq!(requests(&l, "prioritize"), 2.0);
    }
}
