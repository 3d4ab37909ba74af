use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::demand::WorkloadClass;

/// Observed placement outcomes of one node for one tenant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomeStats {
    pub successes: f64,
    pub failures: f64,
}

/// Reliability: the posterior mean of a Beta(prior_successes, prior_failures) over the node's
/// outcome history, times `1 − spot_penalty` when a latency-critical pod would land on spot
/// capacity (it can be reclaimed at short notice).
pub fn reliability(
    stats: Option<&OutcomeStats>,
    spot: bool,
    workload: WorkloadClass,
    config: &Config,
) -> f64 {
    let s = stats.copied().unwrap_or_default();
    let a = config.reliability_prior_successes + s.successes.max(0.0);
    let b = config.reliability_prior_failures + s.failures.max(0.0);
    let mean = a / (a + b);
    if spot && workload.is_latency_critical() {
        mean * (1.0 - config.spot_penalty)
    } else {
        mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prior_history_and_spot_penalty() {
        let c = Config::default();
        assert!((reliability(None, false, WorkloadClass::Batch, &c) - 0.9).abs() < 1e-12);
        let bad = OutcomeStats {
            successes: 0.0,
            failures: 10.0,
        };
        assert!(reliability(Some(&bad), false, WorkloadClass::Batch, &c) < 0.5);
        assert_eq!(
            reliability(None, true, WorkloadClass::Batch, &c),
            reliability(None, false, WorkloadClass::Batch, &c)
        );
        assert!((reliability(None, true, WorkloadClass::LatencyCritical, &c) - 0.45).abs() < 1e-12);
    }
}
