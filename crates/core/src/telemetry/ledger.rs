//! What the Telemetry Durable Object keeps: per cluster, the gathered series and the highest
//! batch sequence number of each isolate applied to them, so that a batch delivered twice (a
//! retried flush, or `/metrics` flushing what a scheduled flush is still sending) is counted
//! once. Each cluster's part is one SQLite row: a flush rewrites the rows of the clusters its
//! batches touched (usually one) and no row grows with the number of clusters.
//!
//! Beside them, the newest report of each colony, one row per colony, rewritten when a delivery
//! brings a newer one: at most one row per colony per isolate per flush interval, since an
//! isolate delivers only the newest report of each colony it heard from. (A row written less
//! often would save little and make a restarted object serve a colony's older counters: a
//! counter that goes down is a reset to Prometheus, and `increase()` would spike.) A report is
//! absolute: applying one twice or late changes nothing. Pure, tested natively.

use std::collections::BTreeMap;
#[cfg(test)]
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::state::{ClusterSeries, TelemetryState};
use super::{Ack, Delivery, StampedReport};
use crate::config::MAX_COLONIES_LIMIT;
use crate::metrics::{self, Metric};

/// An isolate silent this long is forgotten (isolates live minutes to hours); a batch it sends
/// later is applied as new, which can only happen after a flush stuck for an hour.
const FORGET_ISOLATE_MS: u64 = 3_600_000;
/// Isolates remembered per cluster at most (the least recently heard from is forgotten first):
/// ~45 bytes each, so with the series bound a row stays below 1 MB.
pub const MAX_ISOLATES_PER_CLUSTER: usize = 5_000;

pub const CREATE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS parts(cluster TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID";
/// Both tables are read as `(key, body)`.
pub const SELECT_ALL: &str = "SELECT cluster AS key, body FROM parts";
pub const UPSERT: &str = "INSERT INTO parts(cluster, body) VALUES(?, ?) ON CONFLICT(cluster) DO UPDATE SET body = excluded.body";
pub const CREATE_REPORTS_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS colony_reports(colony TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID";
pub const SELECT_REPORTS: &str = "SELECT colony AS key, body FROM colony_reports";
pub const UPSERT_REPORT: &str = "INSERT INTO colony_reports(colony, body) VALUES(?, ?) ON CONFLICT(colony) DO UPDATE SET body = excluded.body";

/// Colonies whose report is kept at most: the Registry admits no more (`MAX_COLONIES` is at
/// most this), so only a colony of a Worker with a larger bound in the past is left out.
pub const MAX_REPORTS: usize = MAX_COLONIES_LIMIT as usize;

/// One cluster's row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterPart {
    pub series: ClusterSeries,
    /// isolate id → (highest sequence number applied to this part, when last heard from).
    #[serde(default)]
    pub applied: BTreeMap<String, (u64, u64)>,
}

impl ClusterPart {
    fn forget_old_isolates(&mut self, now_ms: u64) {
        let cutoff = now_ms.saturating_sub(FORGET_ISOLATE_MS);
        self.applied.retain(|_, (_, seen)| *seen >= cutoff);
        while self.applied.len() > MAX_ISOLATES_PER_CLUSTER {
            let oldest = self
                .applied
                .iter()
                .min_by_key(|(_, (_, seen))| *seen)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.applied.remove(&k),
                None => break,
            };
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TelemetryLedger {
    pub parts: BTreeMap<String, ClusterPart>,
    /// Colony object name → its newest report.
    pub reports: BTreeMap<String, StampedReport>,
}

/// What a delivery changes: the rows to write, then [`TelemetryLedger::commit`].
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub ack: Ack,
    pub parts: BTreeMap<String, ClusterPart>,
    /// Every report newer than the one kept.
    pub reports: BTreeMap<String, StampedReport>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty() && self.reports.is_empty()
    }
}

impl TelemetryLedger {
    /// From the stored rows (key, JSON body) of both tables. A row that does not parse is
    /// reported and that cluster (or colony) starts again from empty: metrics must keep working.
    pub fn from_rows<'a>(
        parts: impl IntoIterator<Item = (&'a str, &'a str)>,
        reports: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> (Self, Vec<String>) {
        let mut ledger = TelemetryLedger::default();
        let mut unreadable = Vec::new();
        for (cluster, body) in parts {
            match serde_json::from_str(body) {
                Ok(part) => {
                    ledger.parts.insert(cluster.to_string(), part);
                }
                Err(e) => unreadable.push(format!("part {cluster:?}: {e}")),
            }
        }
        for (colony, body) in reports {
            match serde_json::from_str::<StampedReport>(body) {
                Ok(report) => {
                    ledger.reports.insert(colony.to_string(), report);
                }
                Err(e) => unreadable.push(format!("colony report {colony:?}: {e}")),
            }
        }
        (ledger, unreadable)
    }

    /// What a delivery changes: every batch part not applied before, applied oldest first to
    /// copies of the parts it touches, and every report newer than the one kept. Nothing
    /// changes here, so a failed write leaves the ledger as it was and the isolate, not
    /// acknowledged, sends the batches again.
    pub fn plan(&self, delivery: &Delivery) -> Plan {
        let mut changed: BTreeMap<String, ClusterPart> = BTreeMap::new();
        let mut through = 0;
        for batch in &delivery.batches {
            through = through.max(batch.seq);
            for (cluster, series) in &batch.state.clusters {
                let part = changed
                    .entry(cluster.clone())
                    .or_insert_with(|| self.parts.get(cluster).cloned().unwrap_or_default());
                let entry = part
                    .applied
                    .entry(delivery.isolate.clone())
                    .or_insert((0, delivery.now_ms));
                entry.1 = entry.1.max(delivery.now_ms);
                if batch.seq > entry.0 {
                    entry.0 = batch.seq;
                    part.series.merge(series);
                }
            }
        }
        // A part none of whose batches was new is not rewritten (a redelivery writes nothing;
        // the isolate's last-heard time there is refreshed by its next new batch).
        changed.retain(|cluster, part| {
            self.parts.get(cluster).map(|p| &p.series) != Some(&part.series)
        });
        for part in changed.values_mut() {
            part.forget_old_isolates(delivery.now_ms);
        }
        let mut reports: BTreeMap<String, StampedReport> = BTreeMap::new();
        for r in &delivery.reports {
            let newest_so_far = reports
                .get(&r.colony)
                .or_else(|| self.reports.get(&r.colony))
                .map(|kept| kept.at_ms);
            let room = self.reports.contains_key(&r.colony)
                || reports.contains_key(&r.colony)
                || self.reports.len() + reports.len() < MAX_REPORTS;
            if room && newest_so_far.is_none_or(|at| r.at_ms > at) {
                reports.insert(r.colony.clone(), r.clone());
            }
        }
        Plan {
            ack: Ack {
                applied_through: through,
            },
            parts: changed,
            reports,
        }
    }

    /// After the planned rows are written.
    pub fn commit(&mut self, plan: Plan) {
        self.parts.extend(plan.parts);
        self.reports.extend(plan.reports);
    }

    /// Plan and commit at once (the tests' shorthand).
    #[cfg(test)]
    pub fn receive(&mut self, delivery: &Delivery) -> (Ack, BTreeSet<String>) {
        let plan = self.plan(delivery);
        let (ack, changed) = (plan.ack, plan.parts.keys().cloned().collect());
        self.commit(plan);
        (ack, changed)
    }

    /// The row of one cluster's part.
    pub fn row(part: &ClusterPart) -> serde_json::Result<String> {
        serde_json::to_string(part)
    }

    /// The row of one colony's report.
    pub fn report_row(report: &StampedReport) -> serde_json::Result<String> {
        serde_json::to_string(report)
    }

    /// Every cluster's series.
    pub fn state(&self) -> TelemetryState {
        TelemetryState {
            clusters: self
                .parts
                .iter()
                .map(|(c, p)| (c.clone(), p.series.clone()))
                .collect(),
        }
    }

    /// A counter of the object's own, in the default cluster's part (row `""`).
    pub fn count(&mut self, metric: &'static Metric, by: f64) {
        self.parts
            .entry(String::new())
            .or_default()
            .series
            .count(metric, &[], by);
    }

    /// The object's own counter of unreadable rows (see [`TelemetryLedger::from_rows`]).
    pub fn count_reset(&mut self) {
        self.count(&metrics::TELEMETRY_STATE_RESETS, 1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony_store::wire::ColonyReport;
    use crate::telemetry::{Batch, Event};

    fn batch(seq: u64, verb: &str, cluster: &str) -> Batch {
        let mut state = TelemetryState::default();
        state.apply(&Event {
            verb: verb.into(),
            code: 200,
            seconds: 0.001,
            cluster: cluster.into(),
            ..Default::default()
        });
        Batch { seq, state }
    }

    fn delivery(isolate: &str, batches: Vec<Batch>, now_ms: u64) -> Delivery {
        Delivery {
            isolate: isolate.into(),
            batches,
            now_ms,
            ..Default::default()
        }
    }

    fn requests(l: &TelemetryLedger, cluster: &str, verb: &str) -> f64 {
        l.parts[cluster].series.counters["aco_requests_total"]
            [&format!("verb=\"{verb}\",code=\"200\"")]
    }

    #[test]
    fn a_batch_delivered_twice_or_out_of_order_counts_once() {
        let mut l = TelemetryLedger::default();
        let (ack, changed) = l.receive(&delivery(
            "a",
            vec![batch(1, "filter", ""), batch(2, "filter", "")],
            10,
        ));
        assert_eq!((ack.applied_through, changed.len()), (2, 1));
        // /metrics flushed 1..3 first; the scheduled flush of 1..2 arrives afterwards.
        let (ack, _) = l.receive(&delivery(
            "a",
            vec![
                batch(1, "filter", ""),
                batch(2, "filter", ""),
                batch(3, "filter", ""),
            ],
            20,
        ));
        assert_eq!(ack.applied_through, 3);
        let (ack, changed) = l.receive(&delivery(
            "a",
            vec![batch(1, "filter", ""), batch(2, "filter", "")],
            30,
        ));
        assert_eq!((ack.applied_through, changed.len()), (2, 0));
        assert_eq!(requests(&l, "", "filter"), 3.0);
        // Another isolate's sequence numbers are its own.
        l.receive(&delivery("b", vec![batch(1, "filter", "")], 40));
        assert_eq!(requests(&l, "", "filter"), 4.0);
    }

    #[test]
    fn each_cluster_is_its_own_row_and_counts_each_batch_once() {
        let mut l = TelemetryLedger::default();
        let (_, changed) = l.receive(&delivery(
            "a",
            vec![batch(1, "filter", "eu"), batch(2, "filter", "us")],
            10,
        ));
        assert_eq!(changed, ["eu".to_string(), "us".to_string()].into());
        // Redelivered with a new batch of one cluster: only that row changes.
        let (ack, changed) = l.receive(&delivery(
            "a",
            vec![
                batch(1, "filter", "eu"),
                batch(2, "filter", "us"),
                batch(3, "prioritize", "eu"),
            ],
            20,
        ));
        assert_eq!(
            (ack.applied_through, changed),
            (3, ["eu".to_string()].into())
        );
        assert_eq!(requests(&l, "eu", "filter"), 1.0);
        assert_eq!(requests(&l, "us", "filter"), 1.0);
        assert_eq!(requests(&l, "eu", "prioritize"), 1.0);
        // Rows round-trip.
        let rows: Vec<(String, String)> = l
            .parts
            .keys()
            .map(|c| (c.clone(), TelemetryLedger::row(&l.parts[c]).unwrap()))
            .collect();
        let (back, unreadable) =
            TelemetryLedger::from_rows(rows.iter().map(|(c, b)| (c.as_str(), b.as_str())), []);
        assert_eq!((back, unreadable.len()), (l, 0));
    }

    #[test]
    fn isolates_silent_for_an_hour_or_beyond_the_bound_are_forgotten() {
        let mut l = TelemetryLedger::default();
        l.receive(&delivery("old", vec![batch(1, "prioritize", "")], 0));
        l.receive(&delivery(
            "new",
            vec![batch(1, "prioritize", "")],
            FORGET_ISOLATE_MS + 1,
        ));
        assert_eq!(l.parts[""].applied.keys().collect::<Vec<_>>(), vec!["new"]);
        assert_eq!(requests(&l, "", "prioritize"), 2.0);
        for i in 0..MAX_ISOLATES_PER_CLUSTER + 10 {
            l.receive(&delivery(
                &format!("i{i}"),
                vec![batch(1, "filter", "")],
                FORGET_ISOLATE_MS + 2 + i as u64,
            ));
        }
        assert_eq!(l.parts[""].applied.len(), MAX_ISOLATES_PER_CLUSTER);
        assert!(
            !l.parts[""].applied.contains_key("new"),
            "the least recently heard went first"
        );
    }

    #[test]
    fn an_unreadable_row_is_reported_and_only_its_cluster_restarts() {
        let good = serde_json::to_string(&ClusterPart::default()).unwrap();
        let report = TelemetryLedger::report_row(&stamped("ml", 5, 1)).unwrap();
        let (l, unreadable) = TelemetryLedger::from_rows(
            [("eu", good.as_str()), ("us", "{")],
            [("ml", report.as_str()), ("web", "[")],
        );
        assert_eq!(l.parts.keys().collect::<Vec<_>>(), vec!["eu"]);
        assert_eq!(l.reports.keys().collect::<Vec<_>>(), vec!["ml"]);
        assert_eq!(unreadable.len(), 2);
    }

    fn stamped(colony: &str, at_ms: u64, decisions: u64) -> StampedReport {
        let mut report = ColonyReport {
            tenant: colony.into(),
            ..Default::default()
        };
        report.counters.decisions = decisions;
        StampedReport {
            colony: colony.into(),
            at_ms,
            report,
        }
    }

    fn with_reports(isolate: &str, reports: Vec<StampedReport>, now_ms: u64) -> Delivery {
        Delivery {
            isolate: isolate.into(),
            reports,
            now_ms,
            ..Default::default()
        }
    }

    #[test]
    fn the_newest_report_of_a_colony_wins_whatever_order_or_repetition_it_arrives_in() {
        let mut l = TelemetryLedger::default();
        l.receive(&with_reports(
            "a",
            vec![stamped("ml", 20, 2), stamped("ml", 10, 1)],
            1,
        ));
        assert_eq!(l.reports["ml"].report.counters.decisions, 2);
        // An older one through another isolate, and the same one again: nothing to write.
        let plan = l.plan(&with_reports(
            "b",
            vec![stamped("ml", 15, 9), stamped("ml", 20, 2)],
            2,
        ));
        assert!(plan.is_empty(), "{plan:?}");
        let plan = l.plan(&with_reports(
            "b",
            vec![stamped("ml", 30, 3), stamped("web", 1, 1)],
            3,
        ));
        assert_eq!(plan.reports.keys().collect::<Vec<_>>(), vec!["ml", "web"]);
        l.commit(plan);
        assert_eq!(l.reports["ml"].report.counters.decisions, 3);
    }

    #[test]
    fn reports_beyond_the_bound_are_not_kept_but_known_colonies_keep_reporting() {
        let mut l = TelemetryLedger::default();
        let many: Vec<StampedReport> = (0..MAX_REPORTS + 5)
            .map(|i| stamped(&format!("t{i}"), 1, 1))
            .collect();
        l.receive(&with_reports("a", many, 1));
        assert_eq!(l.reports.len(), MAX_REPORTS);
        l.receive(&with_reports("a", vec![stamped("t0", 2, 7)], 2));
        assert_eq!(l.reports["t0"].report.counters.decisions, 7);
    }
}
