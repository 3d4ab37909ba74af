//! What the Telemetry Durable Object keeps: per cluster, the gathered series and the highest
//! batch sequence number of each isolate applied to them, so that a batch delivered twice (a
//! retried flush, or `/metrics` flushing what a scheduled flush is still sending) is counted
//! once. Each cluster's part is one SQLite row: a flush rewrites the rows of the clusters its
//! batches touched (usually one) and no row grows with the number of clusters. Pure, tested
//! natively.

use std::collections::BTreeMap;
#[cfg(test)]
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::state::{ClusterSeries, TelemetryState};
use super::{Ack, Delivery};

/// An isolate silent this long is forgotten (isolates live minutes to hours); a batch it sends
/// later is applied as new, which can only happen after a flush stuck for an hour.
const FORGET_ISOLATE_MS: u64 = 3_600_000;
/// Isolates remembered per cluster at most (the least recently heard from is forgotten first):
/// ~45 bytes each, so with the series bound a row stays below 1 MB.
pub const MAX_ISOLATES_PER_CLUSTER: usize = 5_000;

pub const CREATE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS parts(cluster TEXT PRIMARY KEY, body TEXT NOT NULL) WITHOUT ROWID";
pub const SELECT_ALL: &str = "SELECT cluster, body FROM parts";
pub const UPSERT: &str = "INSERT INTO parts(cluster, body) VALUES(?, ?) ON CONFLICT(cluster) DO UPDATE SET body = excluded.body";

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
}

impl TelemetryLedger {
    /// From the stored rows (cluster, JSON body). A row that does not parse is reported and
    /// that cluster starts again from empty counters: metrics must keep working.
    pub fn from_rows<'a>(
        rows: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> (Self, Vec<String>) {
        let mut ledger = TelemetryLedger::default();
        let mut unreadable = Vec::new();
        for (cluster, body) in rows {
            match serde_json::from_str(body) {
                Ok(part) => {
                    ledger.parts.insert(cluster.to_string(), part);
                }
                Err(e) => unreadable.push(format!("{cluster:?}: {e}")),
            }
        }
        (ledger, unreadable)
    }

    /// What a delivery changes: every batch part not applied before, applied oldest first to
    /// copies of the parts it touches. Returns the acknowledgement and the changed parts (to
    /// write as rows, then [`commit`](Self::commit)); nothing changes here, so a failed write
    /// leaves the ledger as it was and the isolate, not acknowledged, sends the batches again.
    pub fn plan(&self, delivery: &Delivery) -> (Ack, BTreeMap<String, ClusterPart>) {
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
        (
            Ack {
                applied_through: through,
            },
            changed,
        )
    }

    /// After the planned parts' rows are written.
    pub fn commit(&mut self, parts: BTreeMap<String, ClusterPart>) {
        self.parts.extend(parts);
    }

    /// Plan and commit at once (the tests' shorthand).
    #[cfg(test)]
    pub fn receive(&mut self, delivery: &Delivery) -> (Ack, BTreeSet<String>) {
        let (ack, parts) = self.plan(delivery);
        let changed = parts.keys().cloned().collect();
        self.commit(parts);
        (ack, changed)
    }

    /// The row of one cluster's part.
    pub fn row(part: &ClusterPart) -> serde_json::Result<String> {
        serde_json::to_string(part)
    }

    /// Every cluster's series, for `/metrics`.
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
    pub fn add(&mut self, name: &str, labels: &str, by: f64) {
        self.parts
            .entry(String::new())
            .or_default()
            .series
            .add(name, labels, by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            TelemetryLedger::from_rows(rows.iter().map(|(c, b)| (c.as_str(), b.as_str())));
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
        let (l, unreadable) = TelemetryLedger::from_rows([("eu", good.as_str()), ("us", "{")]);
        assert_eq!(l.parts.keys().collect::<Vec<_>>(), vec!["eu"]);
        assert_eq!(unreadable.len(), 1);
    }
}
