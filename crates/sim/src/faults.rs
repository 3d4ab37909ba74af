//! Hidden node faults: what the colony's reliability term is for, and the one thing in the
//! simulator no fact shows. Off by default (`--node-faults`): the default world has no fault η
//! cannot see, and there the colony at `ALPHA=0` places exactly as η alone (docs/simulation.md,
//! "Cost/QoS replay").
//!
//! Model (modelled, not from the trace): a seeded `share` of the nodes are faulty — a GPU that
//! throws Xid errors, a NIC that flaps, a kubelet that loses its devices — and a pod on one fails
//! after an exponential time with `rate_per_hour`; a pod on a healthy node never does. The pod
//! is evicted (a latency-critical pod has broken its QoS), the reporter sends a failed outcome
//! whose cause is the node (`FailureCause::Node`: not ready, a device failing admission, an
//! application failing on this node only), and the pod arrives again at once, as its controller
//! would recreate it. Nothing about the node changes in its facts or labels.

use crate::cluster::World;
use crate::rng;

/// `share` of the nodes fail their pods at `rate_per_hour` each.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NodeFaults {
    pub share: f64,
    pub rate_per_hour: f64,
}

impl std::str::FromStr for NodeFaults {
    type Err = String;

    /// `none`, or `<share>,<rate per hour>` (e.g. `0.03,0.5`: 3% of the nodes, each pod on one
    /// failing after 2 h on average).
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "none" {
            return Ok(Self::default());
        }
        let bad = || format!("node faults {s:?}: expected none or <share 0–1>,<rate per hour ≥ 0>");
        let (share, rate) = s.split_once(',').ok_or_else(bad)?;
        let share: f64 = share.trim().parse().map_err(|_| bad())?;
        let rate_per_hour: f64 = rate.trim().parse().map_err(|_| bad())?;
        let valid =
            (0.0..=1.0).contains(&share) && rate_per_hour.is_finite() && rate_per_hour >= 0.0;
        if !valid {
            return Err(bad());
        }
        Ok(Self {
            share,
            rate_per_hour,
        })
    }
}

impl NodeFaults {
    pub fn any(&self) -> bool {
        self.share > 0.0 && self.rate_per_hour > 0.0
    }

    /// Whether `node` is one of the faulty ones (seeded per node name).
    pub fn is_faulty(&self, world: &World, seed: u64, node: usize) -> bool {
        self.any() && rng::unit(&[seed, rng::key(&world.nodes[node].name), 0xFA17]) < self.share
    }

    /// When a pod bound to a faulty node at `bound_s` fails there (seeded per pod, node and
    /// binding time), or `None` on a healthy node.
    pub fn failure_s(
        &self,
        world: &World,
        seed: u64,
        node: usize,
        pod: &str,
        bound_s: u64,
    ) -> Option<u64> {
        if !self.is_faulty(world, seed, node) {
            return None;
        }
        let pod_key = rng::key(pod);
        let u = rng::unit(&[seed, pod_key, node as u64, bound_s, 0xFA18]);
        // Exponential, 1 − u in (0, 1] so the log is finite; at least one second after binding.
        let hours = -(1.0 - u).ln() / self.rate_per_hour;
        Some(bound_s.saturating_add(((hours * 3600.0) as u64).max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sample_world;

    #[test]
    fn the_faulty_share_and_the_mean_time_to_failure_are_what_was_asked() {
        let w = sample_world(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")),
            1,
        )
        .unwrap();
        let f: NodeFaults = "0.25,0.5".parse().unwrap();
        let faulty: Vec<usize> = (0..w.nodes.len())
            .filter(|n| f.is_faulty(&w, 1, *n))
            .collect();
        let share = faulty.len() as f64 / w.nodes.len() as f64;
        assert!((0.1..0.4).contains(&share), "{share}");
        let healthy = (0..w.nodes.len()).find(|n| !faulty.contains(n)).unwrap();
        assert_eq!(f.failure_s(&w, 1, healthy, "p", 100), None);
        let times: Vec<f64> = (0..2_000u64)
            .map(|i| (f.failure_s(&w, 1, faulty[0], "p", 100 + i).unwrap() - 100 - i) as f64)
            .collect();
        let mean_h = times.iter().sum::<f64>() / times.len() as f64 / 3600.0;
        assert!((1.8..2.2).contains(&mean_h), "mean {mean_h} h, expected 2");
        assert_eq!("none".parse::<NodeFaults>().unwrap(), NodeFaults::default());
        assert!("1.5,1".parse::<NodeFaults>().is_err());
        assert!("0.1".parse::<NodeFaults>().is_err());
    }
}
