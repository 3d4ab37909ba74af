//! `GET [/c/<cluster>]/v1/tenants/{tenant}/pheromones` (a tenant's trails and what the colony
//! remembers: [`PheromoneTableReply`]) and `DELETE` of the same path (a reset: [`ResetReply`]).
//! Read by `acoctl trails` and the tests; built by `colony_store::ColonyStore::table`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::dropped::DropReason;
use crate::colony::ColonyCounters;

/// One node's trail in a tenant's colony: what the tenant's outcomes there taught.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeTrail {
    pub node: String,
    /// τ now (evaporation applied) for the reference pod (`colony::reference_tau`: batch,
    /// `COST_REFERENCE` $/h of the node's bill): 1 = nothing learned against the node.
    pub tau: f64,
    /// Outcomes as stored, faded as of `outcomesAsOfMs` (`OUTCOME_HALF_LIFE_MS`, the trail's
    /// evaporation).
    pub successes: f64,
    pub failures: f64,
    pub outcomes_as_of_ms: u64,
    /// The learned slowdown on the node (runtime over the pod's expected one), `null` before
    /// any run ended there.
    #[serde(default)]
    pub slowdown: Option<f64>,
    /// The probability that a placement there ends well, as τ's `failureRisk` reads it now: the
    /// posterior mean of the prior (`RELIABILITY_PRIOR_*`) and the faded outcomes.
    #[serde(default)]
    pub reliability: Option<f64>,
}

/// A tenant's colony as an operator reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PheromoneTableReply {
    pub tenant: String,
    /// Every node with a trail, τ farthest from 1 first (a node without a trail reads 1).
    pub nodes: Vec<NodeTrail>,
    pub counters: ColonyCounters,
    /// Items refused as invalid, by reason.
    pub dropped: BTreeMap<DropReason, u64>,
    pub pending_decisions: u64,
    pub held_placements: u64,
    pub confirmed_pods: u64,
    /// Confirmed pods whose explanation is kept (`CONFIRMED_EXPLANATIONS_*`).
    #[serde(default)]
    pub explained_pods: u64,
    /// Bumped by every change isolates score with (and by a reset or an import).
    pub version: u64,
    /// Something accepted is not committed yet.
    pub uncommitted: bool,
    pub durable_seq: u64,
}

/// `DELETE …/pheromones`: the colony was forgotten; its new version.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetReply {
    pub reset: bool,
    pub version: u64,
}
