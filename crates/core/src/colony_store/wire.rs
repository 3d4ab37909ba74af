//! The bodies exchanged between the Worker and a Colony object (its internal API; the paths and
//! the pairing of request and reply types are the Worker's `src/colony/api.rs`). The tenant is
//! not in any of them: the object is one cluster × tenant's colony, named once by the caller.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::explained::ConfirmedExplanation;
use crate::api::dropped::DropReason;
use crate::colony::{ColonyCounters, Decision, FilterRejections, Outcome, TenantColony};
use crate::names::{NodeName, PodKey};
use crate::shadow::{ShadowScore, ShadowSummary};

/// A decision an isolate scored from its copy of the colony, to remember for the pod.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    pub key: PodKey,
    pub decision: Decision,
    pub explored: bool,
}

/// What an isolate needs to score like the colony: the colony (τ, per-node history; counters
/// ride along) at `version`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColonySnapshot {
    pub version: u64,
    pub colony: TenantColony,
}

/// Where the colony's writes stand, in every reply that can carry decisions: a decision accepted
/// in commit `accepted_seq` is durable once a reply of the same `incarnation` says
/// `durable_seq ≥ accepted_seq`. A new incarnation (the object restarted or reloaded) may have
/// lost what it had not committed: the caller sends it again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Durability {
    pub incarnation: u64,
    pub durable_seq: u64,
    /// The commit that holds this request's changes (≤ `durable_seq` when already durable).
    pub accepted_seq: u64,
}

impl Durability {
    pub fn is_durable(&self) -> bool {
        self.accepted_seq <= self.durable_seq
    }
}

/// `Copy`: the colony for an isolate's copy.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CopyRequest {}

/// `Decisions`: decisions scored from a copy.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionBatch {
    pub decisions: Vec<DecisionRecord>,
    /// The version of the caller's copy (0: none).
    pub known_version: u64,
    pub now_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionsReply {
    pub version: u64,
    /// Present when `known_version` is not the colony's version.
    pub snapshot: Option<ColonySnapshot>,
    pub durability: Durability,
    /// Decisions refused as invalid (dropped, counted by reason; never sent again).
    #[serde(default)]
    pub dropped: BTreeMap<DropReason, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementItem {
    pub key: PodKey,
    pub node: NodeName,
    pub outcome: Option<Outcome>,
}

/// `Placements`: one tenant's reports, one commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementsRequest {
    /// Decisions the sending isolate has not seen durable: applied (once) first, so that no
    /// placement overtakes its decision.
    #[serde(default)]
    pub decisions: Vec<DecisionRecord>,
    pub items: Vec<PlacementItem>,
    pub now_ms: u64,
    /// The version of the caller's copy, if it holds one: the reply then refreshes it.
    #[serde(default)]
    pub known_version: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementsReply {
    /// Placements confirmed (each pod once; an outcome with it deposited on the trail).
    pub deposited: u64,
    /// Later outcomes of confirmed placements, deposited on the trail.
    pub outcomes: u64,
    /// Reports already counted (replays): nothing changed.
    pub duplicates: u64,
    pub unknown_pod: u64,
    pub not_a_candidate: u64,
    /// Reports for pods whose decision has not reached the colony yet: held for it (at most
    /// `HOLD_MS`), then applied, or counted as unknown if it never comes.
    #[serde(default)]
    pub held: u64,
    /// Items refused as invalid by the colony, by reason: dropped, the rest applied.
    #[serde(default)]
    pub dropped: BTreeMap<DropReason, u64>,
    /// The colony's version after this batch (isolates holding an older copy drop it).
    pub version: u64,
    #[serde(default)]
    pub snapshot: Option<ColonySnapshot>,
    #[serde(default)]
    pub durability: Durability,
}

/// One scored shadow report.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowItem {
    pub key: PodKey,
    pub node: NodeName,
    pub outcome: Option<Outcome>,
    pub score: ShadowScore,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowRequest {
    pub items: Vec<ShadowItem>,
    pub now_ms: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowReply {
    pub scored: u64,
    pub outcomes: u64,
    pub duplicates: u64,
    pub unknown_pod: u64,
    pub not_feasible: u64,
    #[serde(default)]
    pub dropped: BTreeMap<DropReason, u64>,
    pub version: u64,
}

/// `Lookup`: what the colony remembers of a pod.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LookupRequest {
    pub key: PodKey,
    pub now_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionLookup {
    pub decision: Option<Decision>,
    /// Present when the pod's placement was confirmed (its decision was deleted then).
    pub confirmed: Option<ConfirmedView>,
    /// The confirmed pod's decision and bound node, while it is kept (`explained.rs`).
    #[serde(default)]
    pub explained: Option<ConfirmedExplanation>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmedView {
    pub node: String,
    pub confirmed_ms: u64,
}

/// What the filter verb rejected, attached by the Worker to a decision's explanation.
pub type FilterReasons = Option<FilterRejections>;

/// Trails per colony a scrape shows, τ farthest from 1 first (the whole table: `GET …/pheromones`).
/// With [`REPORT_NODE_BYTES`] this bounds a report to a few KB, so the Telemetry object keeps
/// every colony's (at most `MAX_COLONIES_LIMIT`) in tens of MB and a scrape of a thousand
/// colonies is tens of thousands of lines, not a cardinality problem for Prometheus.
pub const TRAILS_SCRAPED: usize = 16;
/// Bytes of node names a report's trails carry at most (node names may be 253 bytes).
pub const REPORT_NODE_BYTES: usize = 2_048;

/// What one colony reports about itself, attached to its replies (`telemetry` carries it to
/// the scrape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ColonyReport {
    pub tenant: String,
    pub counters: ColonyCounters,
    /// (node, reference τ as of the report, `colony::reference_tau`): the [`TRAILS_SCRAPED`]
    /// farthest from 1, so that a scrape of every colony stays bounded however many nodes the
    /// clusters have.
    pub pheromones: Vec<(String, f64)>,
    /// Nodes with a trail in this colony (all of them, not only those above).
    #[serde(default)]
    pub trails: u64,
    #[serde(default)]
    pub shadow: ShadowSummary,
    /// Items refused as invalid, by reason.
    #[serde(default)]
    pub dropped: BTreeMap<DropReason, u64>,
    /// SQLite rows this object wrote since it started, alarms and `setAlarm` included.
    #[serde(default)]
    pub rows_written: u64,
    #[serde(default)]
    pub pending_decisions: u64,
    /// Placements held for a decision that has not arrived (memory only).
    #[serde(default)]
    pub held_placements: u64,
    #[serde(default)]
    pub confirmed_pods: u64,
}

/// Why a request failed in a tenant's colony: the label of `aco_colony_errors_total{reason}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColonyFailure {
    /// Its stored state does not parse (the operator's reset is the way out).
    CorruptState,
    /// It answered with any other failure.
    Error,
    /// It could not be reached.
    Unreachable,
}

impl ColonyFailure {
    pub fn label(self) -> &'static str {
        match self {
            ColonyFailure::CorruptState => "corrupt_state",
            ColonyFailure::Error => "error",
            ColonyFailure::Unreachable => "unreachable",
        }
    }
}

/// The body of a colony's failed reply (HTTP 503).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureBody {
    pub error: String,
    pub reason: ColonyFailure,
}

#[cfg(test)]
mod failure_tests {
    use super::*;

    #[test]
    fn a_failure_body_names_its_reason_as_the_metric_label() {
        for reason in [
            ColonyFailure::CorruptState,
            ColonyFailure::Error,
            ColonyFailure::Unreachable,
        ] {
            let body = FailureBody {
                error: "x".into(),
                reason,
            };
            let json = serde_json::to_value(&body).unwrap();
            assert_eq!(json["reason"], reason.label());
            assert_eq!(serde_json::from_value::<FailureBody>(json).unwrap(), body);
        }
    }
}
