//! Node performance that no label shows. Identical GPUs differ: Sinha et al.,
//! "Not All GPUs Are Created Equal: Characterizing Variability in Large-Scale, Accelerator-Rich
//! Systems" (SC '22) measured on four clusters an **8% average performance variation (max 22%)**
//! among GPUs of the same SKU, with **outliers up to 1.5× slower than the median**, varying in
//! size by application. Their artifact has the benchmarks, not the per-GPU data, so this models
//! the summary figures, seeded:
//!
//! - a node's slowdown against the median node is `1 + 0.22 · u^1.75`, `u` uniform: at least 1,
//!   at most 1.22, mean 1.08 (`E[u^k] = 1/(k+1)`); 2% of nodes are outliers at 1.5;
//! - [`PerformanceModel::Shared`]: every workload sees its node's one slowdown;
//!   [`PerformanceModel::PerClass`]: each workload class draws its own (the variation "differs by
//!   application"). A pod's class is its tenant's: each team runs one kind of workload, so a
//!   tenant's trail could learn what a cluster-wide per-node signal averages away;
//! - a pod's run time stretches by its node's slowdown — except for services, the pods still
//!   running when the trace ends (their lifetime is set by whoever deletes them, not by work);
//! - the outcome the simulated reporter sends carries the observed slowdown, the stretch times a
//!   seeded lognormal noise of σ = 0.1: what "run time ÷ the median run time of the same
//!   workload" measures when the workload's own runs vary by ~10%.

use crate::rng;

/// Slowdown of an outlier node (the paper's "up to 1.5× slower than the median").
pub const OUTLIER_SLOWDOWN: f64 = 1.5;
/// Share of nodes that are outliers.
pub const OUTLIER_SHARE: f64 = 0.02;
/// Largest slowdown of a non-outlier node (the paper's maximum variation, 22%).
pub const MAX_VARIATION: f64 = 0.22;
/// Exponent that makes the mean variation 8%: `0.22 / (k + 1) = 0.08`.
pub const SHAPE: f64 = 1.75;
/// Run-to-run variation of a workload's run time (σ of the lognormal noise on observations).
pub const OBSERVATION_SIGMA: f64 = 0.1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PerformanceModel {
    /// Every node as fast as the median (no variation; the replay before item 3).
    #[default]
    None,
    /// One slowdown per node, the same for every workload.
    Shared,
    /// One slowdown per node and workload class.
    PerClass,
}

impl std::str::FromStr for PerformanceModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Self::None),
            "shared" => Ok(Self::Shared),
            "per-class" => Ok(Self::PerClass),
            _ => Err(format!(
                "unknown performance model {s:?}: expected none, shared or per-class"
            )),
        }
    }
}

impl PerformanceModel {
    /// The slowdown of `node` (its name) for a pod of workload `class`, seeded.
    pub fn slowdown(self, seed: u64, node: &str, class: &str) -> f64 {
        let class_key = match self {
            Self::None => return 1.0,
            Self::Shared => 0,
            Self::PerClass => rng::key(class),
        };
        let keys = [seed, rng::key(node), class_key, 0x5104];
        if rng::unit(&[keys[0], keys[1], keys[2], keys[3], 1]) < OUTLIER_SHARE {
            return OUTLIER_SLOWDOWN;
        }
        1.0 + MAX_VARIATION * rng::unit(&keys).powf(SHAPE)
    }

    /// What the reporter observes for one pod: the slowdown times lognormal noise (σ =
    /// [`OBSERVATION_SIGMA`]), seeded by the pod.
    pub fn observed(slowdown: f64, seed: u64, pod: &str) -> f64 {
        // Box–Muller from two seeded uniforms; 1 − u is in (0, 1], so the log is finite.
        let u1 = 1.0 - rng::unit(&[seed, rng::key(pod), 0x0B5E, 1]);
        let u2 = rng::unit(&[seed, rng::key(pod), 0x0B5E, 2]);
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        slowdown * (OBSERVATION_SIGMA * z).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slowdowns_follow_the_papers_summary_figures() {
        let m = PerformanceModel::Shared;
        let s: Vec<f64> = (0..20_000)
            .map(|i| m.slowdown(7, &format!("node-{i}"), "any"))
            .collect();
        let outliers = s.iter().filter(|x| **x == OUTLIER_SLOWDOWN).count() as f64 / s.len() as f64;
        assert!((outliers - OUTLIER_SHARE).abs() < 0.005, "{outliers}");
        let normal: Vec<f64> = s
            .iter()
            .copied()
            .filter(|x| *x < OUTLIER_SLOWDOWN)
            .collect();
        let mean = normal.iter().sum::<f64>() / normal.len() as f64 - 1.0;
        assert!((mean - 0.08).abs() < 0.005, "mean variation {mean}");
        assert!(normal
            .iter()
            .all(|x| (1.0..=1.0 + MAX_VARIATION).contains(x)));
        assert_eq!(PerformanceModel::None.slowdown(7, "n", "c"), 1.0);
    }

    #[test]
    fn shared_slowdowns_ignore_the_class_and_per_class_ones_do_not() {
        let (s, p) = (PerformanceModel::Shared, PerformanceModel::PerClass);
        assert_eq!(s.slowdown(1, "n", "team-a"), s.slowdown(1, "n", "team-b"));
        let differ = (0..100)
            .filter(|i| {
                let n = format!("n{i}");
                p.slowdown(1, &n, "team-a") != p.slowdown(1, &n, "team-b")
            })
            .count();
        assert!(differ > 90, "{differ}");
        assert_eq!(
            p.slowdown(1, "n", "team-a"),
            p.slowdown(1, "n", "team-a"),
            "seeded"
        );
    }

    #[test]
    fn observations_are_noisy_around_the_slowdown() {
        let obs: Vec<f64> = (0..10_000)
            .map(|i| PerformanceModel::observed(1.2, 3, &format!("pod-{i}")))
            .collect();
        let log_mean = obs.iter().map(|o| (o / 1.2).ln()).sum::<f64>() / obs.len() as f64;
        let log_var = obs
            .iter()
            .map(|o| ((o / 1.2).ln() - log_mean).powi(2))
            .sum::<f64>()
            / obs.len() as f64;
        assert!(log_mean.abs() < 0.005, "{log_mean}");
        assert!(
            (log_var.sqrt() - OBSERVATION_SIGMA).abs() < 0.005,
            "{}",
            log_var.sqrt()
        );
    }
}
