use serde::{Deserialize, Serialize};

use crate::config::Config;

/// Observed placement outcomes of one node for one tenant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomeStats {
    pub successes: f64,
    pub failures: f64,
}

/// Reliability: the posterior mean of a Beta(prior_successes, prior_failures) over the node's
/// outcome history — the probability that a placement there ends well. The `failureRisk` term of
/// η's cost prices how far a node's falls below the prior's. (Spot capacity is priced by its
/// pool's interruption rate, `spot_risk.rs`, not here.)
pub fn reliability(stats: Option<&OutcomeStats>, config: &Config) -> f64 {
    let s = stats.copied().unwrap_or_default();
    let a = config.reliability_prior_successes + s.successes.max(0.0);
    let b = config.reliability_prior_failures + s.failures.max(0.0);
    a / (a + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prior_and_history() {
        let c = Config::default();
        assert!((reliability(None, &c) - 0.9).abs() < 1e-12);
        let bad = OutcomeStats {
            successes: 0.0,
            failures: 10.0,
        };
        assert!(reliability(Some(&bad), &c) < 0.5);
        let good = OutcomeStats {
            successes: 90.0,
            failures: 0.0,
        };
        assert!(reliability(Some(&good), &c) > 0.98);
    }
}
