//! The counters themselves: per cluster, the counter series and request-duration histograms.
//! An isolate folds its requests into one (`TelemetryState::apply`), the Telemetry object
//! merges batches into its own and keeps each cluster's part in its own row
//! (`ledger.rs`), `scrape.rs` renders it. Pure, tested natively.
//!
//! Bounded by construction, so no stored row approaches SQLite's 2 MB: a `cluster` part exists
//! only for an admitted cluster (`MAX_CLUSTERS`, see `aco_core::registry`), and a part holds at
//! most [`MAX_SERIES_PER_CLUSTER`] series with label text of at most [`MAX_LABELS_BYTES`]; a
//! series beyond either is not made, only counted (`aco_telemetry_series_dropped_total`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Event, BUCKETS};
use crate::metrics::{self, Metric};

/// Counter series one cluster's part holds at most (today's code makes ~200: verbs × codes,
/// reasons); with [`MAX_LABELS_BYTES`] a part stays below ~0.7 MB of JSON.
pub const MAX_SERIES_PER_CLUSTER: usize = 1_000;
/// Label text of one series at most, in bytes (`reason="…"` and the like).
pub const MAX_LABELS_BYTES: usize = 512;
/// The series that counts what the bounds above kept out.
pub const SERIES_DROPPED: &str = metrics::TELEMETRY_SERIES_DROPPED.name;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// Cumulative counts per bucket of `BUCKETS`.
    pub buckets: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        self.buckets.resize(BUCKETS.len(), 0);
        for (i, upper) in BUCKETS.iter().enumerate() {
            if seconds <= *upper {
                self.buckets[i] += 1;
            }
        }
        self.sum += seconds.max(0.0);
        self.count += 1;
    }

    fn merge(&mut self, other: &Histogram) {
        self.buckets
            .resize(BUCKETS.len().max(other.buckets.len()), 0);
        for (i, n) in other.buckets.iter().enumerate() {
            self.buckets[i] += n;
        }
        self.sum += other.sum;
        self.count += other.count;
    }
}

/// One cluster's series. Label text never includes the cluster: the renderer adds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterSeries {
    /// metric name → label text (`k="v",…`) → value.
    pub counters: BTreeMap<String, BTreeMap<String, f64>>,
    /// `verb="…"` → request duration histogram.
    pub durations: BTreeMap<String, Histogram>,
}

impl ClusterSeries {
    fn series_count(&self) -> usize {
        self.counters.values().map(BTreeMap::len).sum::<usize>() + self.durations.len()
    }

    /// Adds `by` to the family's series with these label values.
    pub fn count(&mut self, metric: &'static Metric, values: &[&str], by: f64) {
        self.add(metric.name, &metric.label_text(values), by);
    }

    /// Adds to a series by its stored name and label text (what [`Event::count`] recorded).
    fn add(&mut self, name: &str, labels: &str, by: f64) {
        let exists = self
            .counters
            .get(name)
            .is_some_and(|series| series.contains_key(labels));
        let fits = exists
            || (labels.len() <= MAX_LABELS_BYTES && self.series_count() < MAX_SERIES_PER_CLUSTER);
        let (name, labels) = if fits || name == SERIES_DROPPED {
            (name, labels)
        } else {
            (SERIES_DROPPED, "")
        };
        *self
            .counters
            .entry(name.to_string())
            .or_default()
            .entry(labels.to_string())
            .or_default() += by;
    }

    fn observe(&mut self, verb_labels: &str, seconds: f64) {
        if !self.durations.contains_key(verb_labels)
            && self.series_count() >= MAX_SERIES_PER_CLUSTER
        {
            self.add(SERIES_DROPPED, "", 1.0);
            return;
        }
        self.durations
            .entry(verb_labels.to_string())
            .or_default()
            .observe(seconds);
    }

    pub fn merge(&mut self, other: &ClusterSeries) {
        for (name, series) in &other.counters {
            for (labels, by) in series {
                self.add(name, labels, *by);
            }
        }
        for (verb, h) in &other.durations {
            if self.durations.contains_key(verb) || self.series_count() < MAX_SERIES_PER_CLUSTER {
                self.durations.entry(verb.clone()).or_default().merge(h);
            } else {
                self.add(SERIES_DROPPED, "", h.count as f64);
            }
        }
    }
}

/// Every cluster's series: `""` is the default cluster (and requests counted without a
/// cluster label), a named cluster is its id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetryState {
    pub clusters: BTreeMap<String, ClusterSeries>,
}

impl TelemetryState {
    pub fn apply(&mut self, event: &Event) {
        let part = self.clusters.entry(event.cluster.clone()).or_default();
        let code = event.code.to_string();
        let labels = metrics::REQUESTS.label_text(&[&event.verb, &code]);
        part.add(metrics::REQUESTS.name, &labels, 1.0);
        if event.code >= 400 {
            part.add(metrics::REQUEST_ERRORS.name, &labels, 1.0);
        }
        let verb = metrics::REQUEST_DURATION.label_text(&[&event.verb]);
        for (name, labels, by) in &event.counters {
            part.add(name, labels, *by);
        }
        part.observe(&verb, event.seconds);
    }

    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
    }

    /// Adds another state's counts to this one (a batch from an isolate).
    pub fn merge(&mut self, other: &TelemetryState) {
        for (cluster, part) in &other.clusters {
            self.clusters
                .entry(cluster.clone())
                .or_default()
                .merge(part);
        }
    }

    /// A counter outside any request's event, in the default cluster's part.
    pub fn count(&mut self, metric: &'static Metric, values: &[&str], by: f64) {
        self.clusters
            .entry(String::new())
            .or_default()
            .count(metric, values, by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(verb: &str, cluster: &str, seconds: f64) -> Event {
        Event {
            verb: verb.into(),
            code: 200,
            seconds,
            cluster: cluster.into(),
            ..Default::default()
        }
    }

    #[test]
    fn merging_batches_adds_counters_and_histograms_per_cluster() {
        let mut one = TelemetryState::default();
        one.apply(&event("filter", "", 0.001));
        let mut two = TelemetryState::default();
        two.apply(&event("filter", "prod", 0.02));
        two.apply(&event("prioritize", "", 0.002));
        let mut both = TelemetryState::default();
        for e in [
            event("filter", "", 0.001),
            event("filter", "prod", 0.02),
            event("prioritize", "", 0.002),
        ] {
            both.apply(&e);
        }
        one.merge(&two);
        assert_eq!(one, both);
        assert_eq!(
            one.clusters.keys().collect::<Vec<_>>(),
            vec!["", "prod"],
            "one part per cluster"
        );
        assert!(!one.is_empty() && TelemetryState::default().is_empty());
    }

    #[test]
    fn a_part_never_holds_more_than_its_bound_and_counts_what_it_kept_out() {
        let mut s = TelemetryState::default();
        let mut e = event("filter", "prod", 0.001);
        // The worst case: every series with the longest label text allowed.
        let widest = MAX_LABELS_BYTES - "reason=\"\"".len();
        for i in 0..3 * MAX_SERIES_PER_CLUSTER {
            let reason = format!("{i:0>widest$}");
            e.count(&metrics::FILTER_NODES_REJECTED, &[&reason], 1.0);
        }
        let too_wide = "x".repeat(MAX_LABELS_BYTES);
        e.count(&metrics::FILTER_NODES_REJECTED, &[&too_wide], 1.0);
        s.apply(&e);
        // Merging more of the same into a full part adds nothing new either.
        let copy = s.clone();
        s.merge(&copy);
        let part = &s.clusters["prod"];
        assert!(
            part.series_count() <= MAX_SERIES_PER_CLUSTER + 1,
            "{}",
            part.series_count()
        );
        let dropped = part.counters[SERIES_DROPPED][""];
        assert!(
            dropped >= 2.0 * (2 * MAX_SERIES_PER_CLUSTER) as f64,
            "{dropped}"
        );
        // Series that exist keep counting.
        let first = format!("reason=\"{:0>widest$}\"", 0);
        assert_eq!(
            part.counters[metrics::FILTER_NODES_REJECTED.name][&first],
            2.0
        );
        let bytes = serde_json::to_string(part).unwrap().len();
        assert!(bytes < 1 << 20, "a full part is {bytes} bytes of JSON");
    }
}
