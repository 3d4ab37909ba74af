//! The Prometheus text exposition (format 0.0.4) of a scrape. Every writer adds samples to one
//! [`Exposition`]; [`Exposition::render`] writes each family once — HELP, TYPE, then all its
//! samples, whatever order they were added in — so two writers of one family (the requests'
//! counters and the colonies' reports, say) cannot produce a second HELP line.

use std::collections::HashMap;
use std::fmt::Write;

use super::{escape, Kind, Metric, ALL};

/// The samples of a scrape, by family.
#[derive(Debug, Default)]
pub struct Exposition {
    /// Sample lines per family name, written in [`ALL`]'s order.
    families: HashMap<&'static str, Vec<String>>,
}

/// `value` as the exposition writes it (`+Inf`, `-Inf`, `NaN`; integers without a fraction).
pub fn value_text(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        value.to_string()
    }
}

/// `cluster="<id>"` before the sample's own labels, for a named cluster (empty: none).
pub fn with_cluster(cluster: &str, labels: &str) -> String {
    match (cluster.is_empty(), labels.is_empty()) {
        (true, _) => labels.to_string(),
        (false, true) => format!("cluster=\"{}\"", escape(cluster)),
        (false, false) => format!("cluster=\"{}\",{labels}", escape(cluster)),
    }
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    fn lines(&mut self, metric: &'static Metric) -> &mut Vec<String> {
        self.families.entry(metric.name).or_default()
    }

    /// One sample; `labels` is label text (`k="v",…`, escaped: [`Metric::label_text`]) with the
    /// cluster's label in front when it has one ([`with_cluster`]).
    pub fn sample(&mut self, metric: &'static Metric, labels: &str, value: f64) {
        self.sample_of(metric, "", labels, value);
    }

    /// A sample of a histogram's `_bucket`, `_sum` or `_count` series.
    pub fn sample_of(&mut self, metric: &'static Metric, suffix: &str, labels: &str, value: f64) {
        let line = if labels.is_empty() {
            format!("{}{suffix} {}", metric.name, value_text(value))
        } else {
            format!("{}{suffix}{{{labels}}} {}", metric.name, value_text(value))
        };
        self.lines(metric).push(line);
    }

    /// A histogram's series for one label set: cumulative `buckets` per upper bound, `+Inf`.
    pub fn histogram(
        &mut self,
        metric: &'static Metric,
        labels: &str,
        bounds: &[f64],
        buckets: &[u64],
        sum: f64,
        count: u64,
    ) {
        debug_assert_eq!(metric.kind, Kind::Histogram);
        let sep = if labels.is_empty() { "" } else { "," };
        for (upper, n) in bounds.iter().zip(buckets) {
            let le = format!("{labels}{sep}le=\"{}\"", value_text(*upper));
            self.sample_of(metric, "_bucket", &le, *n as f64);
        }
        self.sample_of(
            metric,
            "_bucket",
            &format!("{labels}{sep}le=\"+Inf\""),
            count as f64,
        );
        self.sample_of(metric, "_sum", labels, sum);
        self.sample_of(metric, "_count", labels, count as f64);
    }

    /// The text: each family that has samples once, in [`ALL`]'s order.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for metric in ALL {
            let Some(lines) = self.families.get(metric.name) else {
                continue;
            };
            let _ = writeln!(out, "# HELP {} {}", metric.name, metric.help);
            let _ = writeln!(out, "# TYPE {} {}", metric.name, metric.kind.as_str());
            for line in lines {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

    #[test]
    fn a_family_fed_by_two_writers_is_written_once_with_all_its_samples_together() {
        let mut e = Exposition::new();
        e.sample(
            &COLONY_ITEMS_DROPPED,
            &COLONY_ITEMS_DROPPED.label_text(&["a", "invalid"]),
            1.0,
        );
        e.sample(&REQUESTS, &REQUESTS.label_text(&["filter", "200"]), 3.0);
        e.sample(
            &COLONY_ITEMS_DROPPED,
            &with_cluster("prod", &COLONY_ITEMS_DROPPED.label_text(&["b", "invalid"])),
            2.0,
        );
        let text = e.render();
        assert_eq!(
            text.matches("# HELP aco_colony_items_dropped_total ")
                .count(),
            1
        );
        assert_eq!(
            text.matches("# TYPE aco_colony_items_dropped_total counter")
                .count(),
            1
        );
        let a = text
            .find("aco_colony_items_dropped_total{tenant=\"a\"")
            .unwrap();
        let b = text
            .find("aco_colony_items_dropped_total{cluster=\"prod\",tenant=\"b\"")
            .unwrap();
        assert!(a < b, "{text}");
        // Families in the table's order, whatever order they were fed in.
        assert!(text.find("aco_requests_total").unwrap() < a, "{text}");
    }

    #[test]
    fn histograms_write_cumulative_buckets_inf_sum_and_count() {
        let mut e = Exposition::new();
        let labels = REQUEST_DURATION.label_text(&["filter"]);
        e.histogram(&REQUEST_DURATION, &labels, &[0.001, 0.01], &[1, 2], 0.5, 3);
        let text = e.render();
        for line in [
            "aco_request_duration_seconds_bucket{verb=\"filter\",le=\"0.001\"} 1",
            "aco_request_duration_seconds_bucket{verb=\"filter\",le=\"0.01\"} 2",
            "aco_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 3",
            "aco_request_duration_seconds_sum{verb=\"filter\"} 0.5",
            "aco_request_duration_seconds_count{verb=\"filter\"} 3",
        ] {
            assert!(text.contains(&format!("{line}\n")), "{line} in\n{text}");
        }
        assert!(text.contains("# TYPE aco_request_duration_seconds histogram\n"));
    }

    #[test]
    fn values_and_cluster_labels_are_written_as_the_format_wants() {
        assert_eq!(value_text(1.0), "1");
        assert_eq!(value_text(0.25), "0.25");
        assert_eq!(value_text(f64::INFINITY), "+Inf");
        assert_eq!(value_text(f64::NEG_INFINITY), "-Inf");
        assert_eq!(value_text(f64::NAN), "NaN");
        assert_eq!(with_cluster("", "a=\"1\""), "a=\"1\"");
        assert_eq!(with_cluster("k", ""), "cluster=\"k\"");
        assert_eq!(with_cluster("k", "a=\"1\""), "cluster=\"k\",a=\"1\"");
        assert_eq!(Exposition::new().render(), "");
    }
}
