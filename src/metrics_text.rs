//! Prometheus text exposition (format 0.0.4) of the counters the Durable Objects keep.
//! Pure functions, tested natively.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::telemetry::{Event, BUCKETS};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// Cumulative counts per bucket of `BUCKETS`.
    pub buckets: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

/// The global counters (requests, errors, latency, filter outcomes, facts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetryState {
    /// metric name → label text → value.
    pub counters: BTreeMap<String, BTreeMap<String, f64>>,
    /// verb → request duration histogram.
    pub durations: BTreeMap<String, Histogram>,
    pub tenants: BTreeSet<String>,
}

const MAX_TENANTS: usize = 1000;

fn help(name: &str) -> &'static str {
    match name {
        "aco_requests_total" => "Requests by verb and HTTP status code.",
        "aco_request_errors_total" => "Requests answered with a 4xx/5xx status, by verb and code.",
        "aco_filter_nodes_passed_total" => "Candidate nodes that passed the filter.",
        "aco_filter_nodes_rejected_total" => "Candidate nodes rejected by the filter, by reason.",
        "aco_stale_node_facts_total" => "Candidate nodes whose facts were older than FACTS_TTL_MS and ignored (fail open), by verb.",
        "aco_node_facts_stored_total" => "Node fact records written by PUT /v1/nodes.",
        "aco_placements_received_total" => "Placement reports received (placements endpoint and bind verb), by source.",
        _ => "aco-edge-extender counter.",
    }
}

impl TelemetryState {
    pub fn apply(&mut self, event: &Event) {
        let labels = format!("verb=\"{}\",code=\"{}\"", event.verb, event.code);
        self.add("aco_requests_total", &labels, 1.0);
        if event.code >= 400 {
            self.add("aco_request_errors_total", &labels, 1.0);
        }
        for (name, labels, by) in &event.counters {
            self.add(name, labels, *by);
        }
        let h = self.durations.entry(event.verb.clone()).or_default();
        h.buckets.resize(BUCKETS.len(), 0);
        for (i, upper) in BUCKETS.iter().enumerate() {
            if event.seconds <= *upper {
                h.buckets[i] += 1;
            }
        }
        h.sum += event.seconds.max(0.0);
        h.count += 1;
        if let Some(t) = &event.tenant {
            if self.tenants.len() < MAX_TENANTS {
                self.tenants.insert(t.clone());
            }
        }
    }

    fn add(&mut self, name: &str, labels: &str, by: f64) {
        *self.counters.entry(name.to_string()).or_default().entry(labels.to_string()).or_default() += by;
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, series) in &self.counters {
            let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} counter", help(name));
            for (labels, value) in series {
                if labels.is_empty() {
                    let _ = writeln!(out, "{name} {value}");
                } else {
                    let _ = writeln!(out, "{name}{{{labels}}} {value}");
                }
            }
        }
        if !self.durations.is_empty() {
            let name = "aco_request_duration_seconds";
            let _ = writeln!(out, "# HELP {name} Time the Worker spent answering, by verb (Date.now() resolution).\n# TYPE {name} histogram");
            for (verb, h) in &self.durations {
                for (upper, count) in BUCKETS.iter().zip(&h.buckets) {
                    let _ = writeln!(out, "{name}_bucket{{verb=\"{verb}\",le=\"{upper}\"}} {count}");
                }
                let _ = writeln!(out, "{name}_bucket{{verb=\"{verb}\",le=\"+Inf\"}} {}", h.count);
                let _ = writeln!(out, "{name}_sum{{verb=\"{verb}\"}} {}", h.sum);
                let _ = writeln!(out, "{name}_count{{verb=\"{verb}\"}} {}", h.count);
            }
        }
        out
    }
}

/// Escapes a label value (`\`, `"` and newlines), as the exposition format requires.
pub fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_errors_and_buckets() {
        let mut s = TelemetryState::default();
        let mut e = Event { verb: "filter".into(), code: 200, seconds: 0.003, ..Default::default() };
        e.count("aco_filter_nodes_rejected_total", "reason=\"gpu_model\"".into(), 2.0);
        s.apply(&e);
        s.apply(&Event { verb: "filter".into(), code: 400, seconds: 0.0, ..Default::default() });
        let text = s.render();
        assert!(text.contains("aco_requests_total{verb=\"filter\",code=\"200\"} 1"));
        assert!(text.contains("aco_request_errors_total{verb=\"filter\",code=\"400\"} 1"));
        assert!(text.contains("aco_filter_nodes_rejected_total{reason=\"gpu_model\"} 2"));
        assert!(text.contains("aco_request_duration_seconds_bucket{verb=\"filter\",le=\"0.0025\"} 1"));
        assert!(text.contains("aco_request_duration_seconds_bucket{verb=\"filter\",le=\"0.005\"} 2"));
        assert!(text.contains("aco_request_duration_seconds_count{verb=\"filter\"} 2"));
        assert!(text.contains("# TYPE aco_requests_total counter"));
        let mut s = TelemetryState::default();
        let mut e = Event { verb: "filter".into(), code: 200, ..Default::default() };
        e.count("aco_filter_nodes_passed_total", String::new(), 3.0);
        s.apply(&e);
        assert!(s.render().contains("\naco_filter_nodes_passed_total 3\n"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
