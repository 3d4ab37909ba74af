//! An isolate's side of telemetry delivery: what it counted since its last batch, the batches
//! the Telemetry object has not acknowledged, and the newest report of each colony that
//! answered it. The Worker keeps one per isolate and sends what [`Outbox::seal`] gives.

use std::collections::BTreeMap;

use super::state::TelemetryState;
use super::{Ack, Batch, Delivery, Event, IsolateView, StampedReport};
use crate::metrics::Metric;

/// Unacknowledged batches kept at most. Beyond it nothing new is sealed: counts wait in the
/// current state (bounded like any part) until acknowledgements make room. Merging an old
/// batch into a newer one instead would count it twice whenever the object had applied the old
/// one and its acknowledgement was still on its way.
pub const MAX_PENDING: usize = 32;

#[derive(Debug, Clone, PartialEq)]
pub struct Outbox {
    isolate: String,
    current: TelemetryState,
    next_seq: u64,
    pending: Vec<Batch>,
    /// Failed sends since the isolate started. Kept here, not sent: a failure to send cannot be
    /// counted by sending.
    failed_flushes: u64,
    /// Colony object name → the newest report a colony's reply carried, until delivered.
    reports: BTreeMap<String, StampedReport>,
}

impl Outbox {
    /// `isolate`: unique per isolate, so the object tells sequences apart.
    pub fn new(isolate: String) -> Self {
        Self {
            isolate,
            current: TelemetryState::default(),
            next_seq: 1,
            pending: Vec::new(),
            failed_flushes: 0,
            reports: BTreeMap::new(),
        }
    }

    /// A finished request.
    pub fn record(&mut self, event: &Event) {
        self.current.apply(event);
    }

    /// A counter outside any request's event (work done after the response).
    pub fn count(&mut self, metric: &'static Metric, values: &[&str], by: f64) {
        if by != 0.0 {
            self.current.count(metric, values, by);
        }
    }

    /// A colony's report, kept until delivered (the newest of each colony).
    pub fn colony_report(&mut self, report: StampedReport) {
        let newer = self
            .reports
            .get(&report.colony)
            .is_none_or(|kept| report.at_ms >= kept.at_ms);
        if newer {
            self.reports.insert(report.colony.clone(), report);
        }
    }

    /// Seals the current counts into a numbered batch (unless [`MAX_PENDING`] wait already);
    /// returns everything owed to the object.
    pub fn seal(&mut self, now_ms: u64) -> Option<Delivery> {
        if !self.current.is_empty() && self.pending.len() < MAX_PENDING {
            self.pending.push(Batch {
                seq: self.next_seq,
                state: std::mem::take(&mut self.current),
            });
            self.next_seq += 1;
        }
        let delivery = Delivery {
            isolate: self.isolate.clone(),
            batches: self.pending.clone(),
            reports: self.reports.values().cloned().collect(),
            now_ms,
        };
        (!delivery.is_empty()).then_some(delivery)
    }

    /// What a delivery's answer means: acknowledged batches and the reports it carried are done
    /// (a newer report that arrived since stays); a failure keeps everything for the next.
    pub fn delivered(&mut self, delivery: &Delivery, result: Result<Ack, ()>) {
        match result {
            Ok(ack) => {
                self.pending.retain(|b| b.seq > ack.applied_through);
                for sent in &delivery.reports {
                    if self.reports.get(&sent.colony).map(|r| r.at_ms) == Some(sent.at_ms) {
                        self.reports.remove(&sent.colony);
                    }
                }
            }
            Err(()) => self.failed_flushes += 1,
        }
    }

    /// What this isolate knows of its own delivery (shown by the scrape it answers).
    pub fn view(&self) -> IsolateView {
        IsolateView {
            failed_flushes: self.failed_flushes,
            pending_batches: self.pending.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony_store::wire::ColonyReport;
    use crate::metrics;
    use crate::telemetry::ledger::TelemetryLedger;

    fn filter_request() -> Event {
        Event {
            verb: "filter".into(),
            code: 200,
            ..Default::default()
        }
    }

    fn requests(ledger: &TelemetryLedger) -> f64 {
        ledger.parts[""].series.counters[metrics::REQUESTS.name]["verb=\"filter\",code=\"200\""]
    }

    #[test]
    fn a_backlog_of_unacknowledged_batches_is_counted_once_whatever_the_acks_do() {
        let mut outbox = Outbox::new("i".into());
        let mut ledger = TelemetryLedger::default();
        // The first batch reaches the object, but its acknowledgement is lost.
        outbox.record(&filter_request());
        let first = outbox.seal(1).unwrap();
        let plan = ledger.plan(&first);
        ledger.commit(plan);
        // Many more requests, each sealed while nothing is acknowledged.
        for now in 2..(3 * MAX_PENDING as u64) {
            outbox.record(&filter_request());
            let d = outbox.seal(now).unwrap();
            assert!(d.batches.len() <= MAX_PENDING);
        }
        assert_eq!(outbox.view().pending_batches, MAX_PENDING as u64);
        // The late acknowledgement of the first, then deliveries until nothing is owed.
        outbox.delivered(&first, Ok(Ack { applied_through: 1 }));
        let mut now = 1_000;
        while let Some(d) = outbox.seal(now) {
            let plan = ledger.plan(&d);
            let ack = plan.ack;
            ledger.commit(plan);
            outbox.delivered(&d, Ok(ack));
            now += 1;
        }
        assert_eq!(requests(&ledger), (3 * MAX_PENDING - 1) as f64);
    }

    #[test]
    fn a_failed_delivery_keeps_everything_and_only_what_was_delivered_is_dropped() {
        let mut outbox = Outbox::new("i".into());
        let report = |at_ms| StampedReport {
            colony: "ml".into(),
            at_ms,
            report: ColonyReport::default(),
        };
        outbox.record(&filter_request());
        outbox.colony_report(report(5));
        let d = outbox.seal(1).unwrap();
        outbox.delivered(&d, Err(()));
        assert_eq!(outbox.view().failed_flushes, 1);
        let again = outbox.seal(2).unwrap();
        assert_eq!((again.batches.len(), again.reports.len()), (1, 1));
        // A newer report arrives while the delivery is on its way: it stays for the next.
        outbox.colony_report(report(9));
        outbox.colony_report(report(7));
        outbox.delivered(&again, Ok(Ack { applied_through: 1 }));
        let next = outbox.seal(3).unwrap();
        assert!(next.batches.is_empty());
        assert_eq!(
            next.reports.iter().map(|r| r.at_ms).collect::<Vec<_>>(),
            vec![9]
        );
        outbox.delivered(&next, Ok(Ack { applied_through: 1 }));
        assert_eq!(outbox.seal(4), None);
    }
}
