//! Every metric family the Worker exposes, declared once: name, type, HELP and label names.
//! Writers name a family by its constant (never by a string), and the exposition
//! ([`exposition::Exposition`]) writes each family once, with one HELP and one TYPE line,
//! whichever writers fed it — so a family cannot appear twice in a scrape.
//!
//! Label *values* are given in the order of [`Metric::labels`] and escaped here; a named
//! cluster's `cluster="<id>"` is added in front by the exposition, never by a writer.

pub mod exposition;

use std::fmt::Write;

/// The Prometheus metric type of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One metric family.
#[derive(Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    /// The label names every sample of the family carries, in order (`cluster` aside).
    pub labels: &'static [&'static str],
}

impl Metric {
    /// The label text `k1="v1",k2="v2"` of one sample, values escaped. Values beyond the
    /// declared labels are ignored and missing ones are empty, so a writer cannot add a label
    /// the family does not declare (a unit test holds every writer to the declared arity).
    pub fn label_text(&self, values: &[&str]) -> String {
        let mut out = String::new();
        for (i, name) in self.labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{name}=\"{}\"",
                escape(values.get(i).copied().unwrap_or(""))
            );
        }
        out
    }
}

/// Escapes a label value (`\`, `"` and newlines), as the exposition format requires.
pub fn escape(v: &str) -> String {
    if !v.contains(['\\', '"', '\n']) {
        return v.to_string();
    }
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

macro_rules! metrics {
    ($($id:ident = $name:literal $kind:ident [$($label:literal),*] $help:literal;)*) => {
        $(
            #[doc = $help]
            pub const $id: Metric = Metric {
                name: $name,
                kind: Kind::$kind,
                help: $help,
                labels: &[$($label),*],
            };
        )*
        /// Every family, in the order the exposition writes them.
        pub const ALL: &[&Metric] = &[$(&$id),*];
    };
}

metrics! {
    // Requests, per cluster (the Telemetry object gathers every isolate's counts).
    REQUESTS = "aco_requests_total" Counter ["verb", "code"]
        "Requests by verb and HTTP status code.";
    REQUEST_ERRORS = "aco_request_errors_total" Counter ["verb", "code"]
        "Requests answered with a 4xx/5xx status, by verb and code.";
    REQUEST_DURATION = "aco_request_duration_seconds" Histogram ["verb"]
        "Time the Worker spent answering, by verb (Date.now() resolution).";
    EXTENDER_AUTH_FAILURES = "aco_extender_auth_failures_total" Counter ["status"]
        "Extender verb requests refused by EXTENDER_AUTH, by HTTP status (401: no or a wrong credential, 403: a certificate not allowed).";
    FILTER_NODES_PASSED = "aco_filter_nodes_passed_total" Counter []
        "Candidate nodes that passed the filter.";
    FILTER_NODES_REJECTED = "aco_filter_nodes_rejected_total" Counter ["reason"]
        "Candidate nodes rejected by the filter, by reason.";
    STALE_NODE_FACTS = "aco_stale_node_facts_total" Counter ["verb"]
        "Candidate nodes whose facts were older than FACTS_TTL_MS and ignored (fail open), by verb.";
    NODE_FACTS_STORED = "aco_node_facts_stored_total" Counter []
        "Node fact records written by PUT /v1/nodes.";
    NODE_FACTS_FORGOTTEN = "aco_node_facts_forgotten_total" Counter []
        "Node fact records deleted by PUT /v1/nodes (nodes gone from the cluster).";
    PLACEMENTS_RECEIVED = "aco_placements_received_total" Counter ["source"]
        "Placement reports received (placements endpoint and bind verb), by source.";
    TENANTS_REFUSED = "aco_tenants_refused_total" Counter ["verb"]
        "Requests naming a tenant outside TENANTS/TENANT_PATTERN, by verb.";
    TENANT_OVERFLOW = "aco_tenant_overflow_total" Counter ["verb", "tenant"]
        "Requests (placements: items) of tenants beyond MAX_COLONIES, which get no colony (η-only scores, placements unknownPod), all under one tenant=\"other\" series, by verb.";
    CLUSTERS_REFUSED = "aco_clusters_refused_total" Counter []
        "Authenticated requests of a named cluster the Registry did not admit (MAX_CLUSTERS reached, or the Registry unreachable).";
    COLONY_ERRORS = "aco_colony_errors_total" Counter ["reason"]
        "Requests that failed in a tenant's colony, by reason (corrupt_state, error, unreachable).";
    COLONY_FALLBACK = "aco_colony_fallback_total" Counter ["mode", "reason"]
        "Prioritize answers not from an up-to-date colony copy, by mode (stale_copy, eta_only) and reason.";
    COLONY_LOCAL_DECISIONS = "aco_colony_local_decisions_total" Counter ["result"]
        "Prioritize answers scored from the isolate's colony copy (no Durable Object round trip), by result of recording the decision afterwards.";
    COLONY_DECISIONS_DROPPED = "aco_colony_decisions_dropped_total" Counter []
        "Decisions an isolate could not keep for its colony (its queue full): their pods' placements count as unknown.";
    BINDING_OPERATIONS = "aco_binding_operations_total" Counter ["kind"]
        "Binding operations (KV reads/writes/deletes, Durable Object requests) made by the Worker, by kind.";
    DO_ROWS_WRITTEN = "aco_do_rows_written_total" Counter ["class"]
        "SQLite rows written by Durable Objects on the Worker's behalf, by class.";
    TELEMETRY_STATE_RESETS = "aco_telemetry_state_resets_total" Counter []
        "Times a stored telemetry part or colony report did not parse and counting restarted from 0.";
    TELEMETRY_FLUSH_FAILURES = "aco_telemetry_flush_failures_total" Counter []
        "Scrapes whose own isolate's counters could not be delivered with the scrape (retried by the next flush).";
    TELEMETRY_SERIES_DROPPED = "aco_telemetry_series_dropped_total" Counter []
        "Series not made because a cluster's part held MAX_SERIES_PER_CLUSTER series, or their labels were too long.";
    // Computed in the isolate that answers the scrape, never stored.
    TELEMETRY_ISOLATE_FLUSH_FAILURES = "aco_telemetry_isolate_flush_failures_total" Counter []
        "Failed sends of this isolate's counters to the Telemetry object since the isolate started (computed in the isolate that answered this scrape; not stored).";
    TELEMETRY_ISOLATE_PENDING = "aco_telemetry_isolate_pending_batches" Gauge []
        "Counter batches of this isolate the Telemetry object has not acknowledged yet (sent again by the next flush).";
    // Per tenant: the colonies' own reports, carried to the Telemetry object by the isolates
    // they answer (no scrape asks a colony).
    COLONY_REPORTS = "aco_colony_reports" Gauge []
        "Colonies whose latest report the Telemetry object holds (every colony that answered a request since it was created).";
    COLONY_REPORT_TIMESTAMP = "aco_colony_report_timestamp_seconds" Gauge ["tenant"]
        "When the colony made the report its series come from (unix seconds): a colony reports with its reply to a request whenever it changed, so a quiet colony's report is old and still current.";
    COLONY_DECISIONS = "aco_colony_decisions_total" Counter ["tenant"]
        "Pods scored (prioritize) by the tenant's colony.";
    COLONY_CANDIDATES = "aco_colony_candidates_total" Counter ["tenant"]
        "Candidate nodes kube-scheduler sent prioritize, summed over the colony's decisions (÷ aco_colony_decisions_total: nodes seen per pod).";
    COLONY_EXPLORATIONS = "aco_colony_explorations_total" Counter ["tenant"]
        "Decisions where ACS exploration promoted a node (Q0 < 1).";
    COLONY_DEPOSITS = "aco_colony_deposits_total" Counter ["tenant"]
        "Confirmed placements (once per pod): the pods whose outcomes the trail learns from.";
    COLONY_PLACEMENTS_ELSEWHERE = "aco_colony_placements_elsewhere_total" Counter ["tenant"]
        "Confirmed placements bound on a node other than the one prioritize answered alone at 10 (kube-scheduler's own scores, or a failed binding, overruled the answer).";
    COLONY_APPROXIMATE_DEPOSITS = "aco_colony_approximate_deposits_total" Counter ["tenant"]
        "Confirmed placements on a node outside the remembered top candidates.";
    COLONY_UNKNOWN_PLACEMENTS = "aco_colony_unknown_placements_total" Counter ["tenant"]
        "Placement reports for pods the colony never scored or forgot.";
    COLONY_NON_CANDIDATE_PLACEMENTS = "aco_colony_non_candidate_placements_total" Counter ["tenant"]
        "Placement reports naming a node that was not the pod's candidate.";
    COLONY_FAILED_OUTCOMES = "aco_colony_failed_outcomes_total" Counter ["tenant"]
        "Reported outcomes below quality 0.5.";
    COLONY_LATE_OUTCOMES = "aco_colony_late_outcomes_total" Counter ["tenant"]
        "Outcomes reported after their placement was confirmed (reliability updated once).";
    COLONY_DUPLICATE_REPORTS = "aco_colony_duplicate_reports_total" Counter ["tenant"]
        "Replayed placement or outcome reports (nothing changed).";
    COLONY_EVICTED_DECISIONS = "aco_colony_evicted_decisions_total" Counter ["tenant"]
        "Remembered decisions evicted, oldest first, at MAX_DECISIONS_PER_TENANT.";
    COLONY_ITEMS_DROPPED = "aco_colony_items_dropped_total" Counter ["tenant", "reason"]
        "Decisions, placements and shadow reports the colony refused as invalid (dropped; the rest of their batch applied), by reason.";
    COLONY_ROWS_WRITTEN = "aco_colony_rows_written_total" Counter ["tenant"]
        "SQLite rows the tenant's colony object wrote since it started, alarms and setAlarm included.";
    COLONY_PENDING_DECISIONS = "aco_colony_pending_decisions" Gauge ["tenant"]
        "Decisions the colony remembers, waiting for their pod's placement.";
    COLONY_HELD_PLACEMENTS = "aco_colony_held_placements" Gauge ["tenant"]
        "Placements held in memory for a decision still on its way from an isolate.";
    COLONY_REMEMBERED_PODS = "aco_colony_remembered_pods" Gauge ["tenant"]
        "Confirmed and shadow pods the colony remembers (replays and late outcomes count once).";
    PHEROMONE_TRAILS = "aco_pheromone_trails" Gauge ["tenant"]
        "Nodes with a pheromone trail (an outcome learned) in the tenant's colony.";
    PHEROMONE = "aco_pheromone" Gauge ["tenant", "node"]
        "Pheromone level τ per tenant and node, learned from outcomes (1 = nothing against the node; for a batch pod paying COST_REFERENCE $/h there, as of its last outcome), the 16 farthest from 1 per tenant (the whole table: GET /v1/tenants/<t>/pheromones).";
    SHADOW_PODS = "aco_shadow_pods_total" Counter ["tenant"]
        "Pods placed by another scheduler that shadow mode scored (once each).";
    SHADOW_AGREEMENTS = "aco_shadow_agreements_total" Counter ["tenant"]
        "Shadow-scored pods the colony would have placed on the same node.";
    SHADOW_CHOSEN_COST = "aco_shadow_chosen_cost_dollars_per_hour_total" Counter ["tenant"]
        "Sum over shadow-scored pods of their marginal cost ($/h) on the node they were placed on.";
    SHADOW_COLONY_COST = "aco_shadow_colony_cost_dollars_per_hour_total" Counter ["tenant"]
        "Sum over shadow-scored pods of their marginal cost ($/h) on the colony's choice.";
    SHADOW_LATENCY_CRITICAL_ON_HOT = "aco_shadow_latency_critical_on_hot_nodes_total" Counter ["tenant", "choice"]
        "Shadow-scored latency-critical pods on a node without LATENCY_CRITICAL_MIN_HEADROOM, where they went (chosen) and where the colony would have put them (colony).";
}

/// The family of a stored series' name; `None` for a name no family has (a series a Worker
/// of another version stored, left out of the exposition rather than written without HELP).
pub fn by_name(name: &str) -> Option<&'static Metric> {
    ALL.iter().copied().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_declared_once_with_a_valid_name_help_and_labels() {
        let mut names = std::collections::BTreeSet::new();
        for m in ALL {
            assert!(names.insert(m.name), "{} declared twice", m.name);
            assert!(m.name.starts_with("aco_"), "{}", m.name);
            assert!(
                m.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}",
                m.name
            );
            // Prometheus conventions the scrapers' linters check.
            assert_eq!(
                m.kind == Kind::Counter,
                m.name.ends_with("_total"),
                "{}",
                m.name
            );
            assert!(!m.help.is_empty() && !m.help.contains('\n'), "{}", m.name);
            for label in m.labels {
                assert!(
                    !["cluster", "le", "__name__"].contains(label),
                    "{} {label}",
                    m.name
                );
            }
            assert_eq!(by_name(m.name), Some(*m));
        }
        assert_eq!(by_name("aco_no_such_family"), None);
    }

    #[test]
    fn label_text_pairs_names_with_escaped_values_in_order() {
        assert_eq!(
            COLONY_FALLBACK.label_text(&["eta_only", "a\"b\\c\nd"]),
            "mode=\"eta_only\",reason=\"a\\\"b\\\\c\\nd\""
        );
        assert_eq!(FILTER_NODES_PASSED.label_text(&["ignored"]), "");
        assert_eq!(
            TENANT_OVERFLOW.label_text(&["placements"]),
            "verb=\"placements\",tenant=\"\""
        );
    }
}
