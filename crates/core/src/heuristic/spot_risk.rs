//! Spot risk from interruption rates: how likely a spot node is to be reclaimed while the pod
//! runs on it, per **pool** (the unit a cloud reclaims by: instance type × zone by default).
//!
//! The prior is the pool's published interruption band, read from a node label
//! (`crate::node_labels`). The cluster then shows what really happens: the reporter names spot
//! nodes that were reclaimed (`PUT /v1/nodes` `reclaimed`), and the facts' holder counts, per
//! pool, those reclamations and the spot node-hours it has seen ([`SpotPools`]). The rate is the
//! Gamma–Poisson posterior mean: the prior counts as `SPOT_PRIOR_NODE_HOURS` of exposure at the
//! prior rate, so a pool seen for many node-hours is judged by what it did.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Config, NodeKeys, SpotRisk};
use crate::node_labels::{is_spot, pool_of};

/// What the cluster has shown of one spot pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolHistory {
    /// Reclamations reported for nodes of the pool.
    pub reclamations: f64,
    /// Spot node-hours of the pool observed (a node counts from its first report to its
    /// deletion, while reported).
    pub node_hours: f64,
}

/// Every spot pool's history, as the holder of a cluster's facts keeps it: exposure accrues
/// between report rounds for the spot nodes it knows, reclamations as the reporter names them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpotPools {
    #[serde(default)]
    pub pools: BTreeMap<String, PoolHistory>,
}

impl SpotPools {
    /// One node observed again: the time between its previous observation `since_ms` and this
    /// one `now_ms` is exposure of its pool if it is spot and hosted pods then (a reclamation is
    /// only seen when it evicts pods, so only such node-hours count). A gap longer than
    /// `FACTS_TTL_MS` counts as that TTL: a node nobody reported for longer was not observed.
    /// Per node and by observation time, so that how reports are batched changes nothing.
    /// Takes the whole Config: it reads three groups (node keys, facts freshness, spot pools).
    pub fn observed(
        &mut self,
        labels: &BTreeMap<String, String>,
        busy: bool,
        since_ms: u64,
        now_ms: u64,
        config: &Config,
    ) {
        if !busy || now_ms <= since_ms || !is_spot(labels, &config.node_keys) {
            return;
        }
        let dt_h = (now_ms - since_ms).min(config.facts.facts_ttl_ms) as f64 / 3_600_000.0;
        self.pools
            .entry(pool_of(labels, &config.spot))
            .or_default()
            .node_hours += dt_h;
    }

    /// Reclamations and node-hours over every pool.
    pub fn totals(&self) -> (f64, f64) {
        self.pools.values().fold((0.0, 0.0), |(r, h), p| {
            (r + p.reclamations, h + p.node_hours)
        })
    }

    /// A reclamation of a node with these labels (counted only for spot nodes).
    pub fn reclaimed(
        &mut self,
        labels: &BTreeMap<String, String>,
        node_keys: &NodeKeys,
        spot: &SpotRisk,
    ) {
        if is_spot(labels, node_keys) {
            self.pools
                .entry(pool_of(labels, spot))
                .or_default()
                .reclamations += 1.0;
        }
    }
}

/// The posterior rate per node-hour: the prior worth `SPOT_PRIOR_NODE_HOURS` of exposure, plus
/// what the pool showed.
pub fn posterior_rate(prior: f64, history: Option<&PoolHistory>, spot: &SpotRisk) -> f64 {
    let h = history.copied().unwrap_or_default();
    let strength = spot.spot_prior_node_hours;
    let alpha = prior * strength + h.reclamations.max(0.0);
    let beta = strength + h.node_hours.max(0.0);
    if beta > 0.0 {
        alpha / beta
    } else {
        prior
    }
}

/// Probability that a node with reclamation rate `rate` (per hour) is reclaimed within `hours`.
pub fn reclaim_probability(rate: f64, hours: f64) -> f64 {
    1.0 - (-rate.max(0.0) * hours.max(0.0)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_labels::{hourly_rate, HOURS_PER_MONTH};

    #[test]
    fn a_pool_seen_long_enough_is_judged_by_what_it_did() {
        let c = Config::default();
        let prior = hourly_rate(0.025);
        assert_eq!(posterior_rate(prior, None, &c.spot), prior);
        // 10 node-months, 5 reclamations: 0.5 per node-month, far above the 2.5% band.
        let seen = PoolHistory {
            reclamations: 5.0,
            node_hours: 10.0 * HOURS_PER_MONTH,
        };
        let post = posterior_rate(prior, Some(&seen), &c.spot);
        assert!(post > 10.0 * prior, "{post} vs {prior}");
        assert!(post < 5.0 / (10.0 * HOURS_PER_MONTH));
        // A quiet pool drifts below a pessimistic prior.
        let quiet = PoolHistory {
            reclamations: 0.0,
            node_hours: 50.0 * HOURS_PER_MONTH,
        };
        let high = hourly_rate(0.25);
        assert!(posterior_rate(high, Some(&quiet), &c.spot) < 0.1 * high);
    }

    #[test]
    fn exposure_accrues_per_busy_spot_node_between_its_observations() {
        let c = Config::default();
        let spot: BTreeMap<String, String> = [
            ("aco/instance-type", "spot"),
            ("node.kubernetes.io/instance-type", "g4dn"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut p = SpotPools::default();
        p.observed(&spot, true, 0, 60_000, &c);
        p.observed(&spot, true, 0, 60_000, &c);
        p.observed(&spot, false, 0, 60_000, &c);
        p.observed(&BTreeMap::new(), true, 0, 60_000, &c);
        let h = p.pools["g4dn/"];
        assert!((h.node_hours - 2.0 / 60.0).abs() < 1e-12, "{h:?}");
        // A long silence counts as FACTS_TTL_MS only; time going backwards, nothing.
        p.observed(&spot, true, 0, 10 * c.facts.facts_ttl_ms, &c);
        p.observed(&spot, true, 5_000, 4_000, &c);
        let h = p.pools["g4dn/"];
        assert!((h.node_hours - (2.0 / 60.0 + c.facts.facts_ttl_ms as f64 / 3.6e6)).abs() < 1e-9);
        p.reclaimed(&spot, &c.node_keys, &c.spot);
        p.reclaimed(&BTreeMap::new(), &c.node_keys, &c.spot);
        assert_eq!(p.totals().0, 1.0);
        assert_eq!(p.pools.len(), 1);
    }
}
