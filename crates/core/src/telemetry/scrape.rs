//! The scrape: every cluster's request counters, the scraping isolate's view of its own
//! delivery and every colony's latest report, written as one exposition — each family once,
//! whichever of them fed it ([`crate::metrics::exposition`]).

use crate::cluster::split_colony_name;
use crate::metrics::exposition::{with_cluster, Exposition};
use crate::metrics::{self as m, by_name, Metric};
use crate::shadow::ShadowSummary;

use super::ledger::TelemetryLedger;
use super::{IsolateView, StampedReport, BUCKETS};

/// The Prometheus text of a scrape.
pub fn render(ledger: &TelemetryLedger, isolate: IsolateView) -> String {
    let mut e = Exposition::new();
    for (cluster, part) in &ledger.parts {
        for (name, series) in &part.series.counters {
            // A name of no family: stored by a Worker of another version; left out.
            let Some(metric) = by_name(name) else {
                continue;
            };
            for (labels, value) in series {
                e.sample(metric, &with_cluster(cluster, labels), *value);
            }
        }
        for (verb, h) in &part.series.durations {
            e.histogram(
                &m::REQUEST_DURATION,
                &with_cluster(cluster, verb),
                &BUCKETS,
                &h.buckets,
                h.sum,
                h.count,
            );
        }
    }
    e.sample(
        &m::TELEMETRY_ISOLATE_FLUSH_FAILURES,
        "",
        isolate.failed_flushes as f64,
    );
    e.sample(
        &m::TELEMETRY_ISOLATE_PENDING,
        "",
        isolate.pending_batches as f64,
    );
    e.sample(&m::COLONY_REPORTS, "", ledger.reports.len() as f64);
    for report in ledger.reports.values() {
        colony(&mut e, report);
    }
    e.render()
}

/// The per-tenant counters of a colony's report: (family, value).
type CounterOf = (&'static Metric, fn(&crate::colony::ColonyCounters) -> u64);
const COLONY_COUNTERS: [CounterOf; 12] = [
    (&m::COLONY_DECISIONS, |c| c.decisions),
    (&m::COLONY_CANDIDATES, |c| c.candidates),
    (&m::COLONY_EXPLORATIONS, |c| c.explorations),
    (&m::COLONY_DEPOSITS, |c| c.deposits),
    (&m::COLONY_PLACEMENTS_ELSEWHERE, |c| c.placements_elsewhere),
    (&m::COLONY_APPROXIMATE_DEPOSITS, |c| c.approximate_deposits),
    (&m::COLONY_UNKNOWN_PLACEMENTS, |c| c.unknown_placements),
    (&m::COLONY_NON_CANDIDATE_PLACEMENTS, |c| {
        c.non_candidate_placements
    }),
    (&m::COLONY_FAILED_OUTCOMES, |c| c.failed_outcomes),
    (&m::COLONY_LATE_OUTCOMES, |c| c.late_outcomes),
    (&m::COLONY_DUPLICATE_REPORTS, |c| c.duplicate_reports),
    (&m::COLONY_EVICTED_DECISIONS, |c| c.evicted_decisions),
];

type ShadowOf = (&'static Metric, fn(&ShadowSummary) -> f64);
const SHADOW_COUNTERS: [ShadowOf; 4] = [
    (&m::SHADOW_PODS, |s| s.pods as f64),
    (&m::SHADOW_AGREEMENTS, |s| s.agreements as f64),
    (&m::SHADOW_CHOSEN_COST, |s| s.chosen_cost_per_hour),
    (&m::SHADOW_COLONY_COST, |s| s.colony_cost_per_hour),
];

/// One colony's series, labelled with its cluster (none for the default one) and tenant.
fn colony(e: &mut Exposition, stamped: &StampedReport) {
    let (cluster, named_tenant) = split_colony_name(&stamped.colony);
    let cluster = if cluster == crate::cluster::DEFAULT_CLUSTER {
        ""
    } else {
        cluster
    };
    let r = &stamped.report;
    let tenant = if r.tenant.is_empty() {
        named_tenant
    } else {
        &r.tenant
    };
    let labels = |metric: &'static Metric, more: &[&str]| {
        let values: Vec<&str> = std::iter::once(tenant)
            .chain(more.iter().copied())
            .collect();
        with_cluster(cluster, &metric.label_text(&values))
    };
    let mut gauge = |metric: &'static Metric, value: f64| {
        e.sample(metric, &labels(metric, &[]), value);
    };
    gauge(&m::COLONY_REPORT_TIMESTAMP, stamped.at_ms as f64 / 1000.0);
    for (metric, value) in COLONY_COUNTERS {
        gauge(metric, value(&r.counters) as f64);
    }
    gauge(&m::COLONY_ROWS_WRITTEN, r.rows_written as f64);
    gauge(&m::COLONY_PENDING_DECISIONS, r.pending_decisions as f64);
    gauge(&m::COLONY_HELD_PLACEMENTS, r.held_placements as f64);
    gauge(&m::COLONY_REMEMBERED_PODS, r.confirmed_pods as f64);
    gauge(&m::PHEROMONE_TRAILS, r.trails as f64);
    for (node, tau) in &r.pheromones {
        if tau.is_finite() {
            e.sample(&m::PHEROMONE, &labels(&m::PHEROMONE, &[node]), *tau);
        }
    }
    for (reason, n) in &r.dropped {
        let metric = &m::COLONY_ITEMS_DROPPED;
        e.sample(metric, &labels(metric, &[reason.label()]), *n as f64);
    }
    // Shadow mode's series only for a tenant that has seen a shadow report.
    if r.shadow != ShadowSummary::default() {
        for (metric, value) in SHADOW_COUNTERS {
            e.sample(metric, &labels(metric, &[]), value(&r.shadow));
        }
        let metric = &m::SHADOW_LATENCY_CRITICAL_ON_HOT;
        for (choice, n) in [
            ("chosen", r.shadow.latency_critical_on_hot_chosen),
            ("colony", r.shadow.latency_critical_on_hot_colony),
        ] {
            e.sample(metric, &labels(metric, &[choice]), n as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony::ColonyCounters;
    use crate::colony_store::wire::ColonyReport;
    use crate::telemetry::{Batch, Delivery, Event};

    fn ledger_with(events: &[Event], reports: Vec<StampedReport>) -> TelemetryLedger {
        let mut state = crate::telemetry::state::TelemetryState::default();
        for e in events {
            state.apply(e);
        }
        let mut l = TelemetryLedger::default();
        let plan = l.plan(&Delivery {
            isolate: "i".into(),
            batches: vec![Batch { seq: 1, state }],
            reports,
            now_ms: 1,
        });
        l.commit(plan);
        l
    }

    fn report(colony: &str, deposits: u64) -> StampedReport {
        StampedReport {
            colony: colony.into(),
            at_ms: 1_500,
            report: ColonyReport {
                counters: ColonyCounters {
                    deposits,
                    ..Default::default()
                },
                pheromones: vec![("n\"1".into(), 1.5), ("n2".into(), f64::NAN)],
                dropped: [(crate::api::dropped::DropReason::InvalidDecision, 1)].into(),
                rows_written: 7,
                ..Default::default()
            },
        }
    }

    #[test]
    fn requests_colonies_and_the_isolate_render_each_family_once() {
        let mut filter = Event {
            verb: "filter".into(),
            code: 200,
            seconds: 0.003,
            ..Default::default()
        };
        filter.count(&m::FILTER_NODES_REJECTED, &["gpu_model"], 2.0);
        let named = Event {
            verb: "filter".into(),
            code: 400,
            cluster: "prod".into(),
            ..Default::default()
        };
        let l = ledger_with(
            &[filter, named],
            vec![report("ml", 1), report("prod/web", 2)],
        );
        let text = render(
            &l,
            IsolateView {
                failed_flushes: 3,
                pending_batches: 1,
            },
        );
        for line in [
            "aco_requests_total{verb=\"filter\",code=\"200\"} 1",
            "aco_requests_total{cluster=\"prod\",verb=\"filter\",code=\"400\"} 1",
            "aco_request_errors_total{cluster=\"prod\",verb=\"filter\",code=\"400\"} 1",
            "aco_filter_nodes_rejected_total{reason=\"gpu_model\"} 2",
            "aco_request_duration_seconds_bucket{verb=\"filter\",le=\"0.005\"} 1",
            "aco_request_duration_seconds_count{cluster=\"prod\",verb=\"filter\"} 1",
            "aco_telemetry_isolate_flush_failures_total 3",
            "aco_telemetry_isolate_pending_batches 1",
            "aco_colony_reports 2",
            "aco_colony_deposits_total{tenant=\"ml\"} 1",
            "aco_colony_deposits_total{cluster=\"prod\",tenant=\"web\"} 2",
            "aco_colony_report_timestamp_seconds{tenant=\"ml\"} 1.5",
            "aco_pheromone{tenant=\"ml\",node=\"n\\\"1\"} 1.5",
            "aco_colony_items_dropped_total{cluster=\"prod\",tenant=\"web\",reason=\"invalid_decision\"} 1",
            "aco_colony_rows_written_total{tenant=\"ml\"} 7",
        ] {
            assert!(text.contains(&format!("{line}\n")), "{line} in\n{text}");
        }
        assert!(!text.contains("NaN"), "a non-finite τ is left out:\n{text}");
        assert!(
            !text.contains("aco_shadow"),
            "no shadow series without shadow reports"
        );
        for line in text.lines().filter(|l| l.starts_with("# HELP ")) {
            let name = line.split(' ').nth(2).unwrap();
            assert_eq!(
                text.matches(&format!("# HELP {name} ")).count(),
                1,
                "{name} twice in\n{text}"
            );
        }
    }

    #[test]
    fn shadow_series_appear_for_shadowed_tenants_only() {
        let mut shadowed = report("ml", 0);
        shadowed.report.shadow = ShadowSummary {
            pods: 3,
            agreements: 1,
            chosen_cost_per_hour: 1.5,
            colony_cost_per_hour: 0.25,
            latency_critical: 2,
            latency_critical_on_hot_chosen: 2,
            ..Default::default()
        };
        let text = render(
            &ledger_with(&[], vec![shadowed, report("quiet", 0)]),
            IsolateView::default(),
        );
        for line in [
            "aco_shadow_pods_total{tenant=\"ml\"} 3",
            "aco_shadow_chosen_cost_dollars_per_hour_total{tenant=\"ml\"} 1.5",
            "aco_shadow_latency_critical_on_hot_nodes_total{tenant=\"ml\",choice=\"chosen\"} 2",
            "aco_shadow_latency_critical_on_hot_nodes_total{tenant=\"ml\",choice=\"colony\"} 0",
        ] {
            assert!(text.contains(&format!("{line}\n")), "{line} in\n{text}");
        }
        assert!(!text.contains("tenant=\"quiet\",choice"), "{text}");
    }
}
