//! The per-tenant pheromone table: the colony's learned memory. Each node's trail is what the
//! tenant's outcomes there taught ([`OutcomeStats`]: successes and failures by quality and cause,
//! observed slowdowns). An outcome is the deposit; the half-life fading (`OUTCOME_HALF_LIFE_MS`)
//! is the evaporation, applied lazily when a trail is read or written, so a node untouched for a
//! few half-lives reads as one never visited.
//!
//! τ is what the trail is worth to one pod: `exp(−learned $/h / COST_REFERENCE)`, the learned
//! terms of its cost (`failureRisk`, `slowdown`: `heuristic::learned_terms`) — 1 where nothing
//! was learned, below where pods failed or ran slow. Those dollars depend on the pod (what a
//! failure loses it, its share of the bill), so the table holds the counts and not one τ per
//! node: a multiplicative τ per node could not rank as the learned dollars do. The view per node
//! ([`PheromoneTable::snapshot`], `/v1/pheromones`, `aco_pheromone`, the demo's chart) is τ for
//! a reference pod: a batch pod whose share of the node's bill is `COST_REFERENCE` $/h.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::CostModel;
use crate::heuristic::{learned_terms, OutcomeStats};

/// One tenant's trails by node name. Stored as a map of node → counts: the shape the outcome
/// history always had, so a colony stored before the trail and the history were one table keeps
/// what it learned (its old deposit table, a field this type no longer has, is dropped on load).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PheromoneTable {
    pub trails: BTreeMap<String, OutcomeStats>,
}

impl PheromoneTable {
    /// `node`'s trail as it stands at `now_ms` (evaporated), if the node has one.
    pub fn at(&self, node: &str, now_ms: u64, cost: &CostModel) -> Option<OutcomeStats> {
        self.trails.get(node).map(|s| s.at(now_ms, cost))
    }

    /// The trail of `node`, made on its first deposit.
    pub fn entry(&mut self, node: &str) -> &mut OutcomeStats {
        self.trails.entry(node.to_string()).or_default()
    }

    /// Every node that has a trail, with the reference τ at `now_ms`, the farthest from 1 first
    /// (what the trail says most strongly: a node failing pods, or one running them fast), ties
    /// by name.
    pub fn snapshot(&self, now_ms: u64, cost: &CostModel) -> Vec<(String, f64)> {
        let mut rows: Vec<_> = self
            .trails
            .iter()
            .map(|(n, s)| (n.clone(), reference_tau(Some(&s.at(now_ms, cost)), cost)))
            .collect();
        let strength = |tau: f64| tau.ln().abs();
        rows.sort_by(|a, b| {
            strength(b.1)
                .total_cmp(&strength(a.1))
                .then_with(|| a.0.cmp(&b.0))
        });
        rows
    }
}

/// τ of a node whose trail is `stats` (already evaporated to the time of interest) for the
/// reference pod: batch, `COST_REFERENCE` $/h of the node's bill, so that τ =
/// `exp(−(failure probability above the prior / 2 + slowdown − 1))` with every factor on.
pub fn reference_tau(stats: Option<&OutcomeStats>, cost: &CostModel) -> f64 {
    let resources = cost.cost_reference;
    // A batch pod's failure loses half its stay's resources on average (`cost_terms`).
    let loss = resources * cost.expected_stay_hours.max(1e-6) / 2.0;
    let (failure_risk, slowdown) = learned_terms(stats, resources, loss, cost);
    (-(failure_risk + slowdown) / cost.cost_reference).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn a_node_without_a_trail_reads_one_and_failures_lower_it() {
        let c = Config::default();
        assert_eq!(reference_tau(None, &c.cost), 1.0);
        let mut t = PheromoneTable::default();
        t.entry("bad").record(0.0, 0, &c.cost);
        t.entry("good").record(1.0, 0, &c.cost);
        t.entry("fast").record_slowdown(0.5, 0, &c.cost);
        let rows = t.snapshot(0, &c.cost);
        let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["fast", "bad", "good"],
            "the strongest signal first: {rows:?}"
        );
        assert_eq!(rows[2].1, 1.0, "successes above the prior cost nothing");
        // One failure: reliability 9/11 against the prior's 0.9, half of it priced per $.
        let expected = (-(0.9 - 9.0 / 11.0) / 2.0f64).exp();
        assert!((rows[1].1 - expected).abs() < 1e-12, "{rows:?}");
        // One run at half the usual time: slowdown (3 + 0.5)/4, τ = exp(1 − 0.875) > 1.
        assert!((rows[0].1 - 0.125f64.exp()).abs() < 1e-12, "{rows:?}");
    }

    /// The trail of a node that failed pods evaporates with the half-life: a failure's weight
    /// halves every `OUTCOME_HALF_LIFE_MS`, and τ climbs back to 1.
    #[test]
    fn a_failed_nodes_tau_recovers_with_the_half_life() {
        let c = Config::default();
        let h = c.cost.outcome_half_life_ms;
        let mut t = PheromoneTable::default();
        for _ in 0..4 {
            t.entry("n").record(0.0, 1_000, &c.cost);
        }
        let tau = |ms: u64| t.snapshot(ms, &c.cost)[0].1;
        let taus: Vec<f64> = (0..8).map(|k| tau(1_000 + k * h)).collect();
        assert!(taus[0] < 0.9, "{taus:?}");
        assert!(taus.windows(2).all(|w| w[0] < w[1]), "{taus:?}");
        // A half-life on, four failures weigh two: τ is that of two fresh failures.
        let mut two = PheromoneTable::default();
        two.entry("n").record(0.0, 0, &c.cost);
        two.entry("n").record(0.0, 0, &c.cost);
        assert!((taus[1] - two.snapshot(0, &c.cost)[0].1).abs() < 1e-12);
        assert!((tau(1_000 + 40 * h) - 1.0).abs() < 1e-9);
        assert_eq!(
            t.trails["n"].failures, 4.0,
            "reading evaporates nothing stored"
        );
    }

    #[test]
    fn stored_as_the_outcome_history_was() {
        let c = Config::default();
        let mut t = PheromoneTable::default();
        t.entry("a").record(1.0, 5, &c.cost);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, r#"{"a":{"successes":1.0,"failures":0.0,"asOfMs":5}}"#);
        assert_eq!(serde_json::from_str::<PheromoneTable>(&json).unwrap(), t);
    }
}
