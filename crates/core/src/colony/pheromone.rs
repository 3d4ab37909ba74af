//! The per-tenant pheromone table of a MAX–MIN ant system with *lazy* evaporation.
//!
//! Every confirmed placement is one epoch. Instead of touching every entry each epoch, an entry
//! stores τ as of the epoch it was last written; reading it applies `(1 − ρ)^(now − then)`.
//! A node never written reads as `τ_initial` evaporated since epoch 0, exactly as if it had
//! been in the table from the start. Every value read or written is clamped to `[τ_min, τ_max]`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::Config;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trail {
    pub tau: f64,
    pub epoch: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PheromoneTable {
    pub epoch: u64,
    pub trails: BTreeMap<String, Trail>,
}

fn evaporate(trail: Trail, epoch: u64, config: &Config) -> f64 {
    let steps = epoch.saturating_sub(trail.epoch).min(i32::MAX as u64) as i32;
    (trail.tau * (1.0 - config.rho).powi(steps)).clamp(config.tau_min, config.tau_max)
}

impl PheromoneTable {
    /// τ(node) now.
    pub fn tau(&self, node: &str, config: &Config) -> f64 {
        let trail = self.trails.get(node).copied().unwrap_or(Trail {
            tau: config.tau_initial,
            epoch: 0,
        });
        evaporate(trail, self.epoch, config)
    }

    /// One confirmed placement: advance the epoch (every trail evaporates once), then add
    /// `amount` to the node's trail. Returns the node's new trail, for the caller to persist
    /// together with the new epoch.
    pub fn deposit(&mut self, node: &str, amount: f64, config: &Config) -> Trail {
        self.epoch += 1;
        let amount = if amount.is_finite() {
            amount.max(0.0)
        } else {
            0.0
        };
        let tau = (self.tau(node, config) + amount).clamp(config.tau_min, config.tau_max);
        let trail = Trail {
            tau,
            epoch: self.epoch,
        };
        self.trails.insert(node.to_string(), trail);
        trail
    }

    /// Revises a deposit made at epoch `deposit_epoch` by `delta` (its quality turned out
    /// different): `delta` is added as it would stand now had it been part of the deposit, i.e.
    /// evaporated by `(1 − ρ)^(now − then)`. No epoch passes. Returns the node's new trail.
    pub fn revise(&mut self, node: &str, delta: f64, deposit_epoch: u64, config: &Config) -> Trail {
        let delta = if delta.is_finite() { delta } else { 0.0 };
        let steps = self
            .epoch
            .saturating_sub(deposit_epoch)
            .min(i32::MAX as u64) as i32;
        let tau = (self.tau(node, config) + delta * (1.0 - config.rho).powi(steps))
            .clamp(config.tau_min, config.tau_max);
        let trail = Trail {
            tau,
            epoch: self.epoch,
        };
        self.trails.insert(node.to_string(), trail);
        trail
    }

    /// Every node that has a trail, with τ now, highest first (ties by name).
    pub fn snapshot(&self, config: &Config) -> Vec<(String, f64)> {
        let mut rows: Vec<_> = self
            .trails
            .keys()
            .map(|n| (n.clone(), self.tau(n, config)))
            .collect();
        rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_revision_lands_where_the_right_deposit_would_have() {
        let c = Config::default();
        let mut revised = PheromoneTable::default();
        let mut right = PheromoneTable::default();
        revised.deposit("a", 0.8, &c);
        let then = revised.epoch;
        right.deposit("a", 0.0, &c);
        for _ in 0..5 {
            revised.deposit("b", 0.3, &c);
            right.deposit("b", 0.3, &c);
        }
        revised.revise("a", -0.8, then, &c);
        assert!((revised.tau("a", &c) - right.tau("a", &c)).abs() < 1e-12);
        assert_eq!(revised.epoch, right.epoch, "a revision is no epoch");
        // Bounds hold: a revision can never take τ below τ_min.
        revised.revise("a", -100.0, then, &c);
        assert_eq!(revised.tau("a", &c), c.tau_min);
    }

    #[test]
    fn untouched_nodes_evaporate_like_touched_ones() {
        let c = Config::default();
        let mut t = PheromoneTable::default();
        assert_eq!(t.tau("a", &c), c.tau_initial);
        t.deposit("b", 0.0, &c);
        t.deposit("b", 0.0, &c);
        let expected = c.tau_initial * (1.0 - c.rho).powi(2);
        assert!((t.tau("a", &c) - expected).abs() < 1e-12);
        assert!((t.tau("b", &c) - expected).abs() < 1e-12);
    }

    #[test]
    fn deposits_raise_the_chosen_trail_only() {
        let c = Config::default();
        let mut t = PheromoneTable::default();
        t.deposit("a", 1.0, &c);
        assert!(t.tau("a", &c) > t.tau("b", &c));
        assert_eq!(t.snapshot(&c)[0].0, "a");
    }

    proptest! {
        /// MMAS bounds hold for any sequence of deposits and reads.
        #[test]
        fn trails_stay_within_bounds(ops in proptest::collection::vec((0u8..4, 0.0f64..50.0), 1..300)) {
            let c = Config::default();
            let mut t = PheromoneTable::default();
            for (node, amount) in ops {
                let node = format!("n{node}");
                let trail = t.deposit(&node, amount, &c);
                prop_assert!(trail.tau >= c.tau_min && trail.tau <= c.tau_max);
                for n in ["n0", "n1", "n2", "n3", "other"] {
                    let tau = t.tau(n, &c);
                    prop_assert!(tau >= c.tau_min && tau <= c.tau_max);
                }
            }
        }
    }
}
