use serde::{Deserialize, Serialize};

use crate::config::CostModel;

/// Observed placement outcomes of one node for one tenant, as of `as_of_ms`: how often pods
/// ended well there (reliability) and how much slower than usual they ran (the reporter's
/// `slowdown`: run time ÷ the workload's median, what η's performance term reads). Every count
/// fades with a half-life of `OUTCOME_HALF_LIFE_MS`: a node is judged by what it has shown
/// lately, so a hot spell or a bad week does not keep a tenant's pods off it for good (as the
/// trail evaporates, and for the same reason).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomeStats {
    pub successes: f64,
    pub failures: f64,
    /// When the counts were last brought up to date; records written before outcomes faded read
    /// as 0 (their counts then fade from the epoch, i.e. are forgotten).
    #[serde(default, rename = "asOfMs")]
    pub as_of_ms: u64,
    /// The observed slowdowns, summed (absent from records of nodes that reported none).
    #[serde(default, rename = "slowdownSum", skip_serializing_if = "is_zero")]
    pub slowdown_sum: f64,
    /// How many slowdowns `slowdown_sum` holds.
    #[serde(default, rename = "slowdownRuns", skip_serializing_if = "is_zero")]
    pub slowdown_runs: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The learned slowdown's prior: as if the node had run this many pods at the usual speed, so
/// that one slow run moves it a quarter of the way, not all of it.
pub const SLOWDOWN_PRIOR_RUNS: f64 = 3.0;

impl OutcomeStats {
    /// The counts as they stand at `now_ms` (never earlier than `as_of_ms`: a clock that steps
    /// back does not bring outcomes back).
    pub fn at(&self, now_ms: u64, cost: &CostModel) -> OutcomeStats {
        let keep = fade(now_ms.saturating_sub(self.as_of_ms), cost);
        OutcomeStats {
            successes: self.successes * keep,
            failures: self.failures * keep,
            as_of_ms: self.as_of_ms.max(now_ms),
            slowdown_sum: self.slowdown_sum * keep,
            slowdown_runs: self.slowdown_runs * keep,
        }
    }

    /// One run that took `slowdown` × the workload's usual time on this node, at `now_ms`.
    pub fn record_slowdown(&mut self, slowdown: f64, now_ms: u64, cost: &CostModel) {
        *self = self.at(now_ms, cost);
        self.slowdown_sum += slowdown;
        self.slowdown_runs += 1.0;
    }

    /// The node's learned slowdown (1 = as fast as usual): the posterior mean of its observed
    /// slowdowns, the prior [`SLOWDOWN_PRIOR_RUNS`] runs at 1; `None` before any was observed.
    pub fn slowdown(&self) -> Option<f64> {
        (self.slowdown_runs > 0.0).then(|| {
            (SLOWDOWN_PRIOR_RUNS + self.slowdown_sum) / (SLOWDOWN_PRIOR_RUNS + self.slowdown_runs)
        })
    }

    /// One outcome of quality `q` at `now_ms`: `q` successes and `1 − q` failures.
    pub fn record(&mut self, q: f64, now_ms: u64, cost: &CostModel) {
        *self = self.at(now_ms, cost);
        self.successes += q;
        self.failures += 1.0 - q;
    }
}

/// Share of an outcome's weight left after `elapsed_ms` (1 when `OUTCOME_HALF_LIFE_MS` is 0:
/// outcomes never fade).
fn fade(elapsed_ms: u64, cost: &CostModel) -> f64 {
    match cost.outcome_half_life_ms {
        0 => 1.0,
        half_life => 0.5f64.powf(elapsed_ms as f64 / half_life as f64),
    }
}

/// Reliability: the posterior mean of a Beta(prior_successes, prior_failures) over the node's
/// outcome history — the probability that a placement there ends well. The `failureRisk` term of
/// η's cost prices how far a node's falls below the prior's. (Spot capacity is priced by its
/// pool's interruption rate, `spot_risk.rs`, not here.)
pub fn reliability(stats: Option<&OutcomeStats>, cost: &CostModel) -> f64 {
    let s = stats.copied().unwrap_or_default();
    let a = cost.reliability_prior_successes + s.successes.max(0.0);
    let b = cost.reliability_prior_failures + s.failures.max(0.0);
    a / (a + b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn prior_and_history() {
        let c = Config::default();
        assert!((reliability(None, &c.cost) - 0.9).abs() < 1e-12);
        let bad = OutcomeStats {
            successes: 0.0,
            failures: 10.0,
            ..OutcomeStats::default()
        };
        assert!(reliability(Some(&bad), &c.cost) < 0.5);
        let good = OutcomeStats {
            successes: 90.0,
            ..OutcomeStats::default()
        };
        assert!(reliability(Some(&good), &c.cost) > 0.98);
    }

    #[test]
    fn outcomes_halve_every_half_life_and_a_new_one_counts_whole() {
        let c = Config::default();
        let h = c.cost.outcome_half_life_ms;
        let mut s = OutcomeStats::default();
        s.record(0.0, 1_000, &c.cost);
        s.record(0.0, 1_000, &c.cost);
        let later = s.at(1_000 + h, &c.cost);
        assert!((later.failures - 1.0).abs() < 1e-12, "{later:?}");
        assert_eq!(later.as_of_ms, 1_000 + h);
        s.record(1.0, 1_000 + 2 * h, &c.cost);
        assert!((s.failures - 0.5).abs() < 1e-12 && (s.successes - 1.0).abs() < 1e-12);
        // A clock that steps back changes nothing.
        assert_eq!(s.at(0, &c.cost), s);
        // Faded history moves reliability back towards the prior.
        let fresh = reliability(Some(&s), &c.cost);
        let old = reliability(Some(&s.at(1_000 + 40 * h, &c.cost)), &c.cost);
        assert!(fresh < old && (old - reliability(None, &c.cost)).abs() < 1e-6);
    }

    #[test]
    fn slowdowns_are_learned_from_a_prior_at_one_and_fade_with_the_counts() {
        let c = Config::default();
        let mut s = OutcomeStats::default();
        assert_eq!(s.slowdown(), None);
        s.record_slowdown(2.0, 1_000, &c.cost);
        assert!((s.slowdown().unwrap() - 5.0 / 4.0).abs() < 1e-12);
        s.record_slowdown(2.0, 1_000, &c.cost);
        assert!((s.slowdown().unwrap() - 7.0 / 5.0).abs() < 1e-12);
        // A half-life later the two runs weigh one: the estimate moves back towards 1.
        let later = s.at(1_000 + c.cost.outcome_half_life_ms, &c.cost);
        assert!((later.slowdown().unwrap() - 5.0 / 4.0).abs() < 1e-12);
        // Reliability is not moved by it, nor it by reliability.
        assert_eq!((s.successes, s.failures), (0.0, 0.0));
        s.record(0.0, 1_000, &c.cost);
        assert!((s.slowdown().unwrap() - 7.0 / 5.0).abs() < 1e-12);
        // A node without slowdowns keeps its stored shape.
        let json = serde_json::to_string(&OutcomeStats::default()).unwrap();
        assert_eq!(json, r#"{"successes":0.0,"failures":0.0,"asOfMs":0}"#);
        let back: OutcomeStats = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn a_half_life_of_zero_never_forgets() {
        let c = Config::default().with(|c| c.cost.outcome_half_life_ms = 0);
        let mut s = OutcomeStats::default();
        s.record(0.0, 0, &c.cost);
        assert_eq!(s.at(u64::MAX, &c.cost).failures, 1.0);
    }
}
