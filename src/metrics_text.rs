//! Prometheus text exposition (format 0.0.4) of the counters the Durable Objects keep.
//! Pure functions, tested natively.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use aco_core::colony::ColonyCounters;
use aco_core::colony_store::wire::ColonyReport;
use aco_core::shadow::ShadowSummary;
use serde::{Deserialize, Serialize};

use crate::telemetry::state::TelemetryState;
use crate::telemetry::BUCKETS;

fn help(name: &str) -> &'static str {
    match name {
        "aco_requests_total" => "Requests by verb and HTTP status code.",
        "aco_request_errors_total" => "Requests answered with a 4xx/5xx status, by verb and code.",
        "aco_filter_nodes_passed_total" => "Candidate nodes that passed the filter.",
        "aco_filter_nodes_rejected_total" => "Candidate nodes rejected by the filter, by reason.",
        "aco_stale_node_facts_total" => "Candidate nodes whose facts were older than FACTS_TTL_MS and ignored (fail open), by verb.",
        "aco_node_facts_stored_total" => "Node fact records written by PUT /v1/nodes.",
        "aco_placements_received_total" => "Placement reports received (placements endpoint and bind verb), by source.",
        "aco_node_facts_forgotten_total" => "Node fact records deleted by PUT /v1/nodes (nodes gone from the cluster).",
        "aco_colony_errors_total" => "Requests that failed in a tenant's colony, by reason (corrupt_state, error, unreachable).",
        "aco_metrics_colony_errors_total" => "Colonies skipped by a /metrics scrape because they did not answer.",
        "aco_extender_auth_failures_total" => "Extender verb requests refused by EXTENDER_AUTH, by mode.",
        "aco_tenants_refused_total" => "Requests naming a tenant outside TENANTS/TENANT_PATTERN, by verb.",
        "aco_tenant_overflow_total" => "Requests (placements: items) of tenants beyond MAX_COLONIES, which get no colony (η-only scores, placements unknownPod), all under one tenant=\"other\" series, by verb.",
        "aco_clusters_refused_total" => "Authenticated requests of a named cluster the Registry did not admit (MAX_CLUSTERS reached, or the Registry unreachable).",
        "aco_telemetry_state_resets_total" => "Times the stored telemetry state did not parse and counting restarted from 0.",
        "aco_telemetry_flush_failures_total" => "Scrapes whose own isolate's counters could not be sent first (retried by the next flush).",
        "aco_binding_operations_total" => "Binding operations (KV reads/writes/deletes, Durable Object requests) made by the Worker, by kind.",
        "aco_do_rows_written_total" => "SQLite rows written by Durable Objects on the Worker's behalf, by class.",
        "aco_colony_fallback_total" => "Prioritize answers not from an up-to-date colony copy, by mode (stale_copy, eta_only) and reason.",
        "aco_colony_local_decisions_total" => "Prioritize answers scored from the isolate's colony copy (no Durable Object round trip), by result of recording the decision afterwards.",
        _ => "aco-edge-extender counter.",
    }
}

/// Renders every cluster's series, each family once with HELP and TYPE and all clusters'
/// samples together (the exposition format wants a family's samples in one group); a named
/// cluster's samples carry `cluster="<id>"` first.
pub fn render_state(state: &TelemetryState) -> String {
    let mut out = String::new();
    let names: BTreeSet<&String> = state
        .clusters
        .values()
        .flat_map(|part| part.counters.keys())
        .collect();
    let labelled = |cluster: &str, labels: &str| match (cluster.is_empty(), labels.is_empty()) {
        (true, _) => labels.to_string(),
        (false, true) => format!("cluster=\"{}\"", label_value(cluster)),
        (false, false) => format!("cluster=\"{}\",{labels}", label_value(cluster)),
    };
    for name in names {
        let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} counter", help(name));
        for (cluster, part) in &state.clusters {
            for (labels, value) in part.counters.get(name).into_iter().flatten() {
                let labels = labelled(cluster, labels);
                if labels.is_empty() {
                    let _ = writeln!(out, "{name} {value}");
                } else {
                    let _ = writeln!(out, "{name}{{{labels}}} {value}");
                }
            }
        }
    }
    if state.clusters.values().any(|p| !p.durations.is_empty()) {
        let name = "aco_request_duration_seconds";
        let _ = writeln!(out, "# HELP {name} Time the Worker spent answering, by verb (Date.now() resolution).\n# TYPE {name} histogram");
        for (cluster, part) in &state.clusters {
            for (verb, h) in &part.durations {
                let labels = labelled(cluster, verb);
                for (upper, count) in BUCKETS.iter().zip(&h.buckets) {
                    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{upper}\"}} {count}");
                }
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
                let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum);
                let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
            }
        }
    }
    out
}

/// What one tenant's colony reports to a scrape (`GET /metrics` of the Colony DO).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ColonyMetrics {
    /// Filled in by the Worker from the colony's name; empty for the default cluster.
    #[serde(default)]
    pub cluster: String,
    pub tenant: String,
    pub counters: ColonyCounters,
    pub epoch: u64,
    /// (node, τ with evaporation applied), the highest `TRAILS_SCRAPED`.
    pub pheromones: Vec<(String, f64)>,
    /// Nodes with a trail (all of them).
    #[serde(default)]
    pub trails: u64,
    /// Shadow mode's summary (zero when the tenant has none).
    #[serde(default)]
    pub shadow: ShadowSummary,
    /// Items the colony refused as invalid, by reason.
    #[serde(default)]
    pub dropped: BTreeMap<String, u64>,
    /// SQLite rows the colony object wrote since it started (alarms and `setAlarm` included).
    #[serde(default)]
    pub rows_written: u64,
}

impl ColonyMetrics {
    /// A colony's report, labelled with its cluster (empty for the default one).
    pub fn new(cluster: &str, r: ColonyReport) -> Self {
        Self {
            cluster: cluster.to_string(),
            tenant: r.tenant,
            counters: r.counters,
            epoch: r.epoch,
            pheromones: r.pheromones,
            trails: r.trails,
            shadow: r.shadow,
            dropped: r.dropped,
            rows_written: r.rows_written,
        }
    }
}

/// The per-tenant counter families: (name, help, value).
type CounterFamily = (&'static str, &'static str, fn(&ColonyCounters) -> u64);
const COLONY_COUNTERS: [CounterFamily; 10] = [
    (
        "aco_colony_decisions_total",
        "Pods scored (prioritize) by the tenant's colony.",
        |c| c.decisions,
    ),
    (
        "aco_colony_explorations_total",
        "Decisions where ACS exploration promoted a node (Q0 < 1).",
        |c| c.explorations,
    ),
    (
        "aco_colony_deposits_total",
        "Confirmed placements that deposited pheromone (once per pod).",
        |c| c.deposits,
    ),
    (
        "aco_colony_approximate_deposits_total",
        "Deposits on a node outside the remembered top candidates (floor quality).",
        |c| c.approximate_deposits,
    ),
    (
        "aco_colony_unknown_placements_total",
        "Placement reports for pods the colony never scored or forgot.",
        |c| c.unknown_placements,
    ),
    (
        "aco_colony_non_candidate_placements_total",
        "Placement reports naming a node that was not the pod's candidate.",
        |c| c.non_candidate_placements,
    ),
    (
        "aco_colony_failed_outcomes_total",
        "Reported outcomes below quality 0.5.",
        |c| c.failed_outcomes,
    ),
    (
        "aco_colony_late_outcomes_total",
        "Outcomes reported after their placement was confirmed (reliability updated once).",
        |c| c.late_outcomes,
    ),
    (
        "aco_colony_duplicate_reports_total",
        "Replayed placement or outcome reports (nothing changed).",
        |c| c.duplicate_reports,
    ),
    (
        "aco_colony_evicted_decisions_total",
        "Remembered decisions evicted, oldest first, at MAX_DECISIONS_PER_TENANT.",
        |c| c.evicted_decisions,
    ),
];

/// Renders the colonies' families, each family once with HELP and TYPE and all its tenants'
/// samples together; `failed` colonies (skipped) are reported as a gauge of this scrape.
pub fn render_colonies(colonies: &[ColonyMetrics], failed: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# HELP aco_metrics_colonies Colonies asked by this scrape, by result.\n# TYPE aco_metrics_colonies gauge");
    let _ = writeln!(
        out,
        "aco_metrics_colonies{{result=\"ok\"}} {}",
        colonies.len()
    );
    let _ = writeln!(out, "aco_metrics_colonies{{result=\"failed\"}} {failed}");
    if colonies.is_empty() {
        return out;
    }
    let mut sorted: Vec<&ColonyMetrics> = colonies.iter().collect();
    sorted.sort_by(|a, b| (&a.cluster, &a.tenant).cmp(&(&b.cluster, &b.tenant)));
    for (name, help, value) in COLONY_COUNTERS {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for c in &sorted {
            let _ = writeln!(out, "{name}{{{}}} {}", colony_labels(c), value(&c.counters));
        }
    }
    let _ = writeln!(out, "# HELP aco_colony_epoch Confirmed placements so far (one evaporation epoch each).\n# TYPE aco_colony_epoch gauge");
    for c in &sorted {
        let _ = writeln!(out, "aco_colony_epoch{{{}}} {}", colony_labels(c), c.epoch);
    }
    let _ = writeln!(out, "# HELP aco_pheromone_trails Nodes with a pheromone trail in the tenant's colony.\n# TYPE aco_pheromone_trails gauge");
    for c in &sorted {
        let _ = writeln!(
            out,
            "aco_pheromone_trails{{{}}} {}",
            colony_labels(c),
            c.trails
        );
    }
    let _ = writeln!(out, "# HELP aco_pheromone Pheromone level τ per tenant and node (evaporation applied), the 64 highest per tenant (the whole table: GET /v1/tenants/<t>/pheromones).\n# TYPE aco_pheromone gauge");
    for c in &sorted {
        for (node, tau) in &c.pheromones {
            if tau.is_finite() {
                let _ = writeln!(
                    out,
                    "aco_pheromone{{{},node=\"{}\"}} {tau}",
                    colony_labels(c),
                    label_value(node)
                );
            }
        }
    }
    let _ = writeln!(out, "# HELP aco_colony_items_dropped_total Decisions, placements and shadow reports the colony refused as invalid (dropped; the rest of their batch applied), by reason.\n# TYPE aco_colony_items_dropped_total counter");
    for c in &sorted {
        for (reason, n) in &c.dropped {
            let _ = writeln!(
                out,
                "aco_colony_items_dropped_total{{{},reason=\"{}\"}} {n}",
                colony_labels(c),
                label_value(reason)
            );
        }
    }
    let _ = writeln!(out, "# HELP aco_colony_rows_written_total SQLite rows the tenant's colony object wrote since it started, alarms and setAlarm included.\n# TYPE aco_colony_rows_written_total counter");
    for c in &sorted {
        let _ = writeln!(
            out,
            "aco_colony_rows_written_total{{{}}} {}",
            colony_labels(c),
            c.rows_written
        );
    }
    render_shadow(&mut out, &sorted);
    out
}

/// Shadow mode's families (only colonies that have seen a shadow report; none at all without).
/// The two cost sums are counters of $/h added per pod: `rate()` of their difference is the
/// saving per hour of pods reported.
fn render_shadow(out: &mut String, colonies: &[&ColonyMetrics]) {
    let shadowed: Vec<&&ColonyMetrics> = colonies
        .iter()
        .filter(|c| c.shadow != ShadowSummary::default())
        .collect();
    if shadowed.is_empty() {
        return;
    }
    type ShadowFamily = (&'static str, &'static str, fn(&ShadowSummary) -> f64);
    const FAMILIES: [ShadowFamily; 4] = [
        ("aco_shadow_pods_total", "Pods placed by another scheduler that shadow mode scored (once each).", |s| s.pods as f64),
        ("aco_shadow_agreements_total", "Shadow-scored pods the colony would have placed on the same node.", |s| s.agreements as f64),
        (
            "aco_shadow_chosen_cost_dollars_per_hour_sum",
            "Sum over shadow-scored pods of their marginal cost ($/h) on the node they were placed on.",
            |s| s.chosen_cost_per_hour,
        ),
        (
            "aco_shadow_colony_cost_dollars_per_hour_sum",
            "Sum over shadow-scored pods of their marginal cost ($/h) on the colony's choice.",
            |s| s.colony_cost_per_hour,
        ),
    ];
    for (name, help, value) in FAMILIES {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for c in &shadowed {
            let _ = writeln!(out, "{name}{{{}}} {}", colony_labels(c), value(&c.shadow));
        }
    }
    let name = "aco_shadow_latency_critical_on_hot_nodes_total";
    let _ = writeln!(out, "# HELP {name} Shadow-scored latency-critical pods on a node without LATENCY_CRITICAL_MIN_HEADROOM, where they went (chosen) and where the colony would have put them (colony).\n# TYPE {name} counter");
    for c in &shadowed {
        for (choice, n) in [
            ("chosen", c.shadow.latency_critical_on_hot_chosen),
            ("colony", c.shadow.latency_critical_on_hot_colony),
        ] {
            let _ = writeln!(
                out,
                "{name}{{{},choice=\"{choice}\"}} {n}",
                colony_labels(c)
            );
        }
    }
}

/// `tenant="…"`, after `cluster="…",` for a named cluster.
fn colony_labels(c: &ColonyMetrics) -> String {
    if c.cluster.is_empty() {
        format!("tenant=\"{}\"", label_value(&c.tenant))
    } else {
        format!(
            "cluster=\"{}\",tenant=\"{}\"",
            label_value(&c.cluster),
            label_value(&c.tenant)
        )
    }
}

/// Escapes a label value (`\`, `"` and newlines), as the exposition format requires.
pub fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::Event;

    #[test]
    fn counts_requests_errors_and_buckets() {
        let mut s = TelemetryState::default();
        let mut e = Event {
            verb: "filter".into(),
            code: 200,
            seconds: 0.003,
            ..Default::default()
        };
        e.count(
            "aco_filter_nodes_rejected_total",
            "reason=\"gpu_model\"".into(),
            2.0,
        );
        s.apply(&e);
        s.apply(&Event {
            verb: "filter".into(),
            code: 400,
            seconds: 0.0,
            ..Default::default()
        });
        let text = render_state(&s);
        assert!(text.contains("aco_requests_total{verb=\"filter\",code=\"200\"} 1"));
        assert!(text.contains("aco_request_errors_total{verb=\"filter\",code=\"400\"} 1"));
        assert!(text.contains("aco_filter_nodes_rejected_total{reason=\"gpu_model\"} 2"));
        assert!(
            text.contains("aco_request_duration_seconds_bucket{verb=\"filter\",le=\"0.0025\"} 1")
        );
        assert!(
            text.contains("aco_request_duration_seconds_bucket{verb=\"filter\",le=\"0.005\"} 2")
        );
        assert!(text.contains("aco_request_duration_seconds_count{verb=\"filter\"} 2"));
        assert!(text.contains("# TYPE aco_requests_total counter"));
        let mut s = TelemetryState::default();
        let mut e = Event {
            verb: "filter".into(),
            code: 200,
            ..Default::default()
        };
        e.count("aco_filter_nodes_passed_total", String::new(), 3.0);
        s.apply(&e);
        assert!(render_state(&s).contains("\naco_filter_nodes_passed_total 3\n"));
    }

    #[test]
    fn a_named_clusters_series_carry_its_label_and_the_default_clusters_keep_theirs() {
        let mut s = TelemetryState::default();
        let mut e = Event {
            verb: "filter".into(),
            code: 200,
            seconds: 0.001,
            cluster: "prod".into(),
            ..Default::default()
        };
        e.count(
            "aco_filter_nodes_rejected_total",
            "reason=\"gpu_model\"".into(),
            1.0,
        );
        e.count("aco_node_facts_stored_total", String::new(), 2.0);
        s.apply(&e);
        s.apply(&Event {
            verb: "filter".into(),
            code: 200,
            seconds: 0.001,
            ..Default::default()
        });
        let text = render_state(&s);
        for line in [
            "aco_requests_total{cluster=\"prod\",verb=\"filter\",code=\"200\"} 1",
            "aco_requests_total{verb=\"filter\",code=\"200\"} 1",
            "aco_filter_nodes_rejected_total{cluster=\"prod\",reason=\"gpu_model\"} 1",
            "aco_node_facts_stored_total{cluster=\"prod\"} 2",
            "aco_request_duration_seconds_count{cluster=\"prod\",verb=\"filter\"} 1",
            "aco_request_duration_seconds_count{verb=\"filter\"} 1",
        ] {
            assert!(text.contains(&format!("{line}\n")), "{line} in\n{text}");
        }
        let c = ColonyMetrics {
            cluster: "prod".into(),
            tenant: "ml".into(),
            ..Default::default()
        };
        assert!(render_colonies(&[c], 0)
            .contains("aco_colony_deposits_total{cluster=\"prod\",tenant=\"ml\"} 0\n"));
    }

    #[test]
    fn colony_families_are_grouped_once_each_with_help_and_type() {
        let colony = |t: &str, deposits| ColonyMetrics {
            cluster: String::new(),
            tenant: t.into(),
            counters: ColonyCounters {
                deposits,
                ..Default::default()
            },
            epoch: deposits,
            pheromones: vec![("n1".into(), 1.5)],
            dropped: [("invalid_decision".to_string(), 1)].into(),
            rows_written: 7,
            ..Default::default()
        };
        let text = render_colonies(&[colony("b", 2), colony("a", 1)], 1);
        assert!(text.contains(
            "aco_colony_items_dropped_total{tenant=\"a\",reason=\"invalid_decision\"} 1\n"
        ));
        assert!(text.contains("aco_colony_rows_written_total{tenant=\"b\"} 7\n"));
        for name in [
            "aco_colony_deposits_total",
            "aco_pheromone",
            "aco_colony_epoch",
        ] {
            assert_eq!(
                text.matches(&format!("# TYPE {name} ")).count(),
                1,
                "{text}"
            );
            assert_eq!(
                text.matches(&format!("# HELP {name} ")).count(),
                1,
                "{text}"
            );
        }
        let a = text
            .find("aco_colony_deposits_total{tenant=\"a\"} 1")
            .unwrap();
        let b = text
            .find("aco_colony_deposits_total{tenant=\"b\"} 2")
            .unwrap();
        let next_family = text
            .find("# HELP aco_colony_failed_outcomes_total")
            .unwrap();
        assert!(a < b && b < next_family, "{text}");
        assert!(text.contains("aco_metrics_colonies{result=\"failed\"} 1"));
    }

    #[test]
    fn shadow_families_appear_once_for_shadowed_colonies_only() {
        let shadow = ShadowSummary {
            pods: 3,
            agreements: 1,
            chosen_cost_per_hour: 1.5,
            colony_cost_per_hour: 0.25,
            latency_critical: 2,
            latency_critical_on_hot_chosen: 2,
            ..Default::default()
        };
        let quiet = ColonyMetrics {
            tenant: "quiet".into(),
            ..Default::default()
        };
        assert!(!render_colonies(std::slice::from_ref(&quiet), 0).contains("aco_shadow"));
        let ml = ColonyMetrics {
            cluster: "prod".into(),
            tenant: "ml".into(),
            shadow,
            ..Default::default()
        };
        let text = render_colonies(&[ml, quiet], 0);
        for line in [
            "aco_shadow_pods_total{cluster=\"prod\",tenant=\"ml\"} 3",
            "aco_shadow_agreements_total{cluster=\"prod\",tenant=\"ml\"} 1",
            "aco_shadow_chosen_cost_dollars_per_hour_sum{cluster=\"prod\",tenant=\"ml\"} 1.5",
            "aco_shadow_colony_cost_dollars_per_hour_sum{cluster=\"prod\",tenant=\"ml\"} 0.25",
            "aco_shadow_latency_critical_on_hot_nodes_total{cluster=\"prod\",tenant=\"ml\",choice=\"chosen\"} 2",
            "aco_shadow_latency_critical_on_hot_nodes_total{cluster=\"prod\",tenant=\"ml\",choice=\"colony\"} 0",
        ] {
            assert!(text.contains(&format!("{line}\n")), "{line} in\n{text}");
        }
        assert_eq!(
            text.matches("# TYPE aco_shadow_pods_total counter").count(),
            1
        );
        assert!(!text.contains("tenant=\"quiet\",choice"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
