//! Spot reclamation: without it a spot node in the simulator is simply 60% cheaper, and η's
//! reclamation risk (`heuristic::spot_risk`) could only cost money. Each spot node carries its
//! pool's band as the extender reads it (`SPOT_INTERRUPTION_BAND_LABEL`, the prior) and every
//! reclamation reaches the extender as the reporter would send it (`Scheduler::reclaimed`).
//!
//! Model (documented in docs/simulation.md): each spot node belongs to a pool (its instance
//! shape: GPU model, GPUs, vCPU, memory — the unit a cloud reclaims by); each pool gets, seeded,
//! one of the five "frequency of interruption" bands of AWS's Spot Instance Advisor (the share of
//! a pool's instances reclaimed in a month: <5%, 5–10%, 10–15%, 15–20%, >20%), taken at the band's
//! midpoint (2.5%, 7.5%, 12.5%, 17.5%, 25%/month). A node is then reclaimed at the times of a
//! seeded Poisson process with rate `−ln(1 − p) / 720 h`. A reclaimed node loses every pod on it
//! (the engine evicts them and they re-arrive at once, as a controller would recreate them); the
//! node's capacity comes back at once (a replacement instance under the same name).
//!
//! Not modelled: the two-minute notice, correlated reclamation across a pool, price changes.

use crate::cluster::{SimNode, World};
use crate::rng;
use crate::spot_pool::pool_frequency;

const MONTH_S: f64 = 720.0 * 3600.0;

/// The monthly interruption frequency of a spot node's pool (0 for on-demand nodes).
pub fn monthly_frequency(seed: u64, n: &SimNode) -> f64 {
    if !n.spot {
        return 0.0;
    }
    pool_frequency(seed, n.model.as_deref(), n.gpus, n.cpu_milli, n.memory_mib)
}

/// Every reclamation in `[start_s, end_s)`, sorted by time (then node): `(time, node index)`.
pub fn reclamations(world: &World, seed: u64, start_s: u64, end_s: u64) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    for n in world.nodes.iter().filter(|n| n.spot) {
        let rate_per_s = -(1.0 - monthly_frequency(seed, n)).ln() / MONTH_S;
        let node_key = rng::key(&n.name);
        let mut t = start_s as f64;
        for k in 0u64.. {
            // Exponential gaps; 1 − u is in (0, 1], so the log is finite.
            t += -(1.0 - rng::unit(&[seed, node_key, k, 0x5907])).ln() / rate_per_s;
            if t >= end_s as f64 {
                break;
            }
            out.push((t as u64, n.idx));
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sample_world;
    use crate::spot_pool::{pool_key, ADVISOR_BAND_MIDPOINTS};

    fn world() -> World {
        sample_world(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")),
            1,
        )
        .unwrap()
    }

    #[test]
    fn only_spot_nodes_are_reclaimed_at_about_their_pools_rate() {
        let w = world();
        assert!(w.nodes.iter().any(|n| n.spot) && w.nodes.iter().any(|n| !n.spot));
        let years = 20 * 365 * 86_400;
        let events = reclamations(&w, 3, 1_000, 1_000 + years);
        assert!(events.windows(2).all(|e| e[0] <= e[1]), "sorted");
        for n in &w.nodes {
            let count = events.iter().filter(|(_, i)| *i == n.idx).count() as f64;
            if !n.spot {
                assert_eq!(count, 0.0, "{} is on-demand", n.name);
                continue;
            }
            let expected = -(1.0 - monthly_frequency(3, n)).ln() * years as f64 / MONTH_S;
            // Poisson: within 5 standard deviations.
            assert!(
                (count - expected).abs() < 5.0 * expected.sqrt(),
                "{}: {count} vs {expected:.1}",
                n.name
            );
        }
        assert_eq!(events, reclamations(&w, 3, 1_000, 1_000 + years), "seeded");
        assert_ne!(events, reclamations(&w, 4, 1_000, 1_000 + years));
    }

    #[test]
    fn a_pools_nodes_share_one_advisor_band() {
        let w = world();
        for a in w.nodes.iter().filter(|n| n.spot) {
            assert!(ADVISOR_BAND_MIDPOINTS.contains(&monthly_frequency(1, a)));
            for b in w.nodes.iter().filter(|b| b.spot && shape(b) == shape(a)) {
                assert_eq!(monthly_frequency(1, a), monthly_frequency(1, b));
            }
        }
    }

    fn shape(n: &SimNode) -> u64 {
        pool_key(n.model.as_deref(), n.gpus, n.cpu_milli, n.memory_mib)
    }

    #[test]
    fn spot_nodes_carry_their_pools_band_for_the_extender_to_read() {
        let w = world();
        for n in w.nodes.iter().filter(|n| n.spot) {
            let label = &n.labels["aco/spot-interruption-band"];
            let read = aco_core::node_labels::band_monthly_fraction(label).unwrap();
            assert_eq!(read, monthly_frequency(1, n), "{}: {label}", n.name);
        }
        assert!(w
            .nodes
            .iter()
            .filter(|n| !n.spot)
            .all(|n| !n.labels.contains_key("aco/spot-interruption-band")));
    }
}
