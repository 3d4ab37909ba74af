//! The reporter's own Prometheus metrics (`/metrics`).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    /// `nodes`, `placements`, `outcomes`, `shadow` (shadow pods' placements) or
    /// `shadow_outcomes`; for `requests`, the endpoint: `nodes`, `placements` or `shadow`.
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

/// A pod's end: the verdict kind (`node_failed`, `succeeded`, `healthy`, `neutral`,
/// `app_error`) and the reason (the table row's words: `EvictionByEvictionAPI`, `Deleted`, …).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndLabel {
    pub verdict: String,
    pub reason: String,
}

/// What the admission webhook did with a review ([`crate::admission::Outcome`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

pub struct Telemetry {
    pub registry: Registry,
    /// Reports the Worker acknowledged (nodes: node reports; placements/outcomes: items).
    pub sent: Family<KindLabel, Counter>,
    /// Failed requests (will be retried), by kind.
    pub failed: Family<KindLabel, Counter>,
    /// Items the Worker refused for good (a 4xx naming them), by kind.
    pub rejected: Family<KindLabel, Counter>,
    pub deleted_nodes: Counter,
    pub queue_depth: Gauge,
    pub bind_to_report_seconds: Histogram,
    pub last_success: Family<KindLabel, Gauge<f64, AtomicU64>>,
    pub metrics_unavailable: Counter,
    pub stale_samples: Counter,
    pub skipped_pods: Family<ReasonLabel, Counter>,
    pub watch_errors: Family<KindLabel, Counter>,
    pub leader: Gauge,
    pub bytes_sent: Family<KindLabel, Counter>,
    /// Requests made to the Worker (answered or not), by endpoint (`nodes`, `placements`, `shadow`).
    pub requests: Family<KindLabel, Counter>,
    /// Pods' ends as attributed ([`crate::outcome`]), by verdict and reason.
    pub ends: Family<EndLabel, Counter>,
    /// Spot nodes found deleted under running pods.
    pub reclaimed_nodes: Counter,
    /// 1 while the Worker refuses our requests as a whole (wrong URL, cluster id or token).
    pub delivery_halted: Gauge,
    /// Requests refused as a whole, by cause (`HTTP 404`, `HTTP 401 …`).
    pub halts: Family<ReasonLabel, Counter>,
    /// Token file re-reads after a 401.
    pub token_reloads: Counter,
    /// 1 while a source (`nodes`, `pods`, `node_metrics`) is healthy.
    pub source_healthy: Family<KindLabel, Gauge>,
    /// Age of the node facts' observation time at the last push (0 while the watches are healthy).
    pub facts_age_seconds: Gauge<f64, AtomicU64>,
    /// Rounds of the node-facts loop, on every replica (leading or not): the loop is alive, and
    /// a standby's rounds are the chances it had to push and did not.
    pub push_ticks: Counter,
    /// Admission reviews answered by the webhook, by outcome.
    pub admission_reviews: Family<OutcomeLabel, Counter>,
}

impl Default for Telemetry {
    fn default() -> Self {
        Self::new()
    }
}

impl Telemetry {
    pub fn new() -> Self {
        let mut t = Telemetry {
            registry: Registry::with_prefix("aco_reporter"),
            sent: Family::default(),
            failed: Family::default(),
            rejected: Family::default(),
            deleted_nodes: Counter::default(),
            queue_depth: Gauge::default(),
            bind_to_report_seconds: Histogram::new([
                0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
            ]),
            last_success: Family::default(),
            metrics_unavailable: Counter::default(),
            stale_samples: Counter::default(),
            skipped_pods: Family::default(),
            watch_errors: Family::default(),
            leader: Gauge::default(),
            bytes_sent: Family::default(),
            requests: Family::default(),
            ends: Family::default(),
            reclaimed_nodes: Counter::default(),
            delivery_halted: Gauge::default(),
            halts: Family::default(),
            token_reloads: Counter::default(),
            source_healthy: Family::default(),
            facts_age_seconds: Gauge::default(),
            push_ticks: Counter::default(),
            admission_reviews: Family::default(),
        };
        let registry = &mut t.registry;
        registry.register(
            "reports_sent",
            "Reports the Worker acknowledged, by kind",
            t.sent.clone(),
        );
        registry.register(
            "reports_failed",
            "Requests to the Worker that failed and will be retried, by kind",
            t.failed.clone(),
        );
        registry.register(
            "reports_rejected",
            "Reports the Worker refused for good (4xx naming them), by kind",
            t.rejected.clone(),
        );
        registry.register(
            "deleted_nodes_reported",
            "Deleted nodes the Worker acknowledged forgetting",
            t.deleted_nodes.clone(),
        );
        registry.register(
            "queue_depth",
            "Placement and outcome reports waiting for delivery",
            t.queue_depth.clone(),
        );
        registry.register(
            "bind_to_report_seconds",
            "Time from a pod's binding (PodScheduled) to the Worker acknowledging its placement",
            t.bind_to_report_seconds.clone(),
        );
        registry.register(
            "last_successful_push_timestamp_seconds",
            "Unix time of the last acknowledged push, by kind",
            t.last_success.clone(),
        );
        registry.register(
            "node_metrics_unavailable",
            "NodeMetrics reads that failed (API absent or erroring)",
            t.metrics_unavailable.clone(),
        );
        registry.register(
            "node_metrics_stale_samples",
            "NodeMetrics samples too old to send",
            t.stale_samples.clone(),
        );
        registry.register(
            "skipped_pods",
            "Pods of our schedulers not reported, by reason",
            t.skipped_pods.clone(),
        );
        registry.register(
            "watch_errors",
            "Watch stream errors (the watch resumes with backoff), by resource",
            t.watch_errors.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the lease and reports",
            t.leader.clone(),
        );
        registry.register(
            "request_bytes",
            "Request body bytes sent to the Worker, by kind",
            t.bytes_sent.clone(),
        );
        registry.register(
            "requests",
            "Requests made to the Worker (answered or not), by endpoint kind",
            t.requests.clone(),
        );
        registry.register(
            "pod_ends",
            "Ends of our pods by attributed verdict and reason (only node_failed is charged to the node)",
            t.ends.clone(),
        );
        registry.register(
            "reclaimed_nodes",
            "Spot nodes deleted while pods that had not been drained were still bound to them",
            t.reclaimed_nodes.clone(),
        );
        registry.register(
            "delivery_halted",
            "1 while the Worker refuses requests as a whole (a 4xx naming no report): reports are kept, not sent",
            t.delivery_halted.clone(),
        );
        registry.register(
            "delivery_halts",
            "Requests the Worker refused as a whole, by cause",
            t.halts.clone(),
        );
        registry.register(
            "token_reloads",
            "Token file re-reads after the Worker answered 401",
            t.token_reloads.clone(),
        );
        registry.register(
            "source_healthy",
            "1 while the source (nodes, pods: watches; node_metrics: the poll) is healthy",
            t.source_healthy.clone(),
        );
        registry.register(
            "facts_age_seconds",
            "How old the pushed node facts' observation time was (the watches' last confirmation)",
            t.facts_age_seconds.clone(),
        );
        registry.register(
            "push_ticks",
            "Rounds of the node-facts loop (every replica; only the leader sends)",
            t.push_ticks.clone(),
        );
        registry.register(
            "admission_reviews",
            "Pod admission reviews answered by the webhook, by outcome (skipped, unchanged, mutated, refused)",
            t.admission_reviews.clone(),
        );
        t
    }

    pub fn admission(&self, outcome: crate::admission::Outcome) {
        self.admission_reviews
            .get_or_create(&OutcomeLabel {
                outcome: outcome.as_str().to_string(),
            })
            .inc();
    }

    pub fn reason(reason: &str) -> ReasonLabel {
        ReasonLabel {
            reason: reason.to_string(),
        }
    }

    pub fn end(verdict: &str, reason: &str) -> EndLabel {
        EndLabel {
            verdict: verdict.to_string(),
            reason: reason.to_string(),
        }
    }

    pub fn kind(kind: &str) -> KindLabel {
        KindLabel {
            kind: kind.to_string(),
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
