//! From τ and η to kube-scheduler's integer scores.

use rand::Rng;

use crate::config::{ColonyWeights, CostModel, EtaBounds};
use crate::heuristic::CostTerms;

/// `s(n) = τ^α · η^β`.
pub fn desirability(tau: f64, eta: f64, weights: &ColonyWeights) -> f64 {
    tau.powf(weights.alpha) * eta.powf(weights.beta)
}

/// `ln(τ^α·η^β) = −(α·learned + β·facts)/COST_REFERENCE` of one candidate, from its cost terms
/// (τ = `exp(−learned/COST_REFERENCE)`, η = `exp(−facts/COST_REFERENCE)`, both unfloored);
/// `−∞` for a non-finite cost. At `α = β` it is computed as `−β·total/COST_REFERENCE`, the same
/// number in the same rounding as the whole expected $/h, so that the default ranks exactly by
/// it; at `α = 0` as `−β·facts/COST_REFERENCE`, exactly η alone.
pub fn log_desirability(terms: &CostTerms, weights: &ColonyWeights, cost: &CostModel) -> f64 {
    let dollars = |d: f64| if d.is_nan() { f64::INFINITY } else { d };
    let l = if weights.alpha == weights.beta {
        -weights.beta * dollars(terms.total()).max(0.0) / cost.cost_reference
    } else {
        let facts = dollars(terms.facts_total()).max(0.0);
        let learned = dollars(terms.learned_total());
        let learned = if weights.alpha == 0.0 { 0.0 } else { learned };
        -(weights.beta * facts + weights.alpha * learned) / cost.cost_reference
    };
    if l.is_nan() {
        f64::NEG_INFINITY
    } else {
        l
    }
}

/// `τ^α·η^β` of each candidate relative to the best one, from its cost terms in $/h
/// ([`log_desirability`]): equal to `desirability / max desirability` whenever no η sits at
/// `ETA_FLOOR`, and unlike it still ranks candidates by their dollars when every total is large
/// (a 4-GPU pod on $24/h nodes: η = exp(−12) would floor them all to one tie). A non-finite
/// cost, and anything below `ETA_FLOOR^β`, is that floor (still reachable by exploration).
pub fn relative_desirabilities(
    terms: &[CostTerms],
    weights: &ColonyWeights,
    cost: &CostModel,
    bounds: &EtaBounds,
) -> Vec<f64> {
    let logs: Vec<f64> = terms
        .iter()
        .map(|t| log_desirability(t, weights, cost))
        .collect();
    let best = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let floor = bounds.eta_floor.powf(weights.beta);
    logs.iter()
        .map(|l| {
            if best.is_finite() {
                (l - best).exp().clamp(floor, 1.0)
            } else {
                floor
            }
        })
        .collect()
}

/// Maps desirabilities to integer scores 0–10 relative to the best (`round(10·s/s_max)`, as
/// kube-scheduler's own score normalisation does): the best node gets 10, equal nodes get
/// equal scores, and nothing depends on input order.
pub fn to_scores(desirabilities: &[f64]) -> Vec<i64> {
    let max = desirabilities
        .iter()
        .copied()
        .filter(|s| s.is_finite())
        .fold(0.0_f64, f64::max);
    desirabilities
        .iter()
        .map(|s| {
            if max > 0.0 && s.is_finite() {
                (10.0 * (s / max)).round().clamp(0.0, 10.0) as i64
            } else {
                0
            }
        })
        .collect()
}

/// The ACS exploration rule: with probability `1 − q0`, pick a node at random in proportion to
/// its desirability and give it the top score (every other 10 becomes 9, so the explored node
/// is the unique best). Returns the explored index, if any. Off when `q0 = 1` (default).
pub fn explore(
    scores: &mut [i64],
    desirabilities: &[f64],
    weights: &ColonyWeights,
    rng: &mut impl Rng,
) -> Option<usize> {
    if weights.q0 >= 1.0 || scores.is_empty() || rng.random::<f64>() < weights.q0 {
        return None;
    }
    let total: f64 = desirabilities.iter().filter(|s| s.is_finite()).sum();
    if total <= 0.0 {
        return None;
    }
    let mut ticket = rng.random::<f64>() * total;
    let mut chosen = desirabilities.len() - 1;
    for (i, s) in desirabilities.iter().enumerate() {
        ticket -= if s.is_finite() { *s } else { 0.0 };
        if ticket <= 0.0 {
            chosen = i;
            break;
        }
    }
    for s in scores.iter_mut() {
        if *s == 10 {
            *s = 9;
        }
    }
    scores[chosen] = 10;
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use proptest::prelude::*;
    use rand::{rngs::SmallRng, SeedableRng};

    #[test]
    fn best_gets_ten_and_zero_max_gives_zeros() {
        assert_eq!(to_scores(&[0.5, 1.0, 0.25]), vec![5, 10, 3]);
        assert_eq!(to_scores(&[0.0, 0.0]), vec![0, 0]);
        assert_eq!(to_scores(&[]), Vec::<i64>::new());
    }

    fn cost(resources: f64, failure_risk: f64, slowdown: f64) -> CostTerms {
        CostTerms {
            resources,
            failure_risk,
            slowdown,
            ..CostTerms::default()
        }
    }

    #[test]
    fn relative_desirabilities_rank_large_totals_that_eta_would_floor_to_one_tie() {
        let c = Config::default();
        // Totals of $12–$14/h: η = exp(−total) is below ETA_FLOOR for all three.
        let terms = [
            cost(12.0, 0.0, 0.0),
            cost(12.5, 0.0, 0.0),
            cost(14.0, 0.0, 0.0),
        ];
        let r = relative_desirabilities(&terms, &c.colony, &c.cost, &c.eta);
        assert_eq!(r[0], 1.0);
        assert!((r[1] - (-1.0f64).exp()).abs() < 1e-12, "{r:?}");
        assert_eq!(to_scores(&r), vec![10, 4, 0]);
        // Where nothing floors, the same as desirability / max, τ from the learned dollars.
        for c in [c.clone(), c.clone().with(|c| c.colony.alpha = 0.5)] {
            let terms = [cost(0.5, 0.3, 0.0), cost(1.0, 0.0, -0.2)];
            let d: Vec<f64> = terms
                .iter()
                .map(|t| desirability(t.tau(&c.cost, &c.eta), t.eta(&c.cost, &c.eta), &c.colony))
                .collect();
            let max = d.iter().copied().fold(0.0, f64::max);
            let r = relative_desirabilities(&terms, &c.colony, &c.cost, &c.eta);
            for (a, b) in r.iter().zip(&d) {
                assert!((a - b / max).abs() < 1e-12, "{r:?} vs {d:?}");
            }
        }
        // A non-finite cost is the floor, never NaN.
        let r = relative_desirabilities(
            &[cost(0.1, 0.0, 0.0), cost(f64::NAN, 0.0, 0.0)],
            &c.colony,
            &c.cost,
            &c.eta,
        );
        assert_eq!(r, vec![1.0, c.eta.eta_floor.powf(c.colony.beta)]);
    }

    /// `τ^α·η^β` at `α = β` ranks exactly as the whole expected $/h did when the learned terms
    /// were part of η (`exp(−β·total/COST_REFERENCE)`), bit for bit, whatever the mix of terms;
    /// at `α = 0` exactly as η alone, whatever was learned.
    #[test]
    fn alpha_equal_to_beta_ranks_as_the_combined_cost_and_alpha_zero_as_eta_alone() {
        let cases = [
            // (resources, stranded, qos, reclamation, failure, slowdown)
            (0.45, None, 0.0, 0.0, 0.0, 0.0),
            (0.45, Some(0.8), 0.1, 0.0, 0.9, 0.0),
            (3.2, None, 0.0, 0.3, 0.0, 0.64),
            (1.0, Some(0.0), 2.5, 0.0, 4.1, -0.1),
            (0.1 + 0.2, Some(0.3), 1e-9, 7.0, 0.1, 0.2),
            (24.0, Some(79.2), 12.5, 0.0, 25.0, 6.0),
            (0.0, None, 0.0, 0.0, 0.0, -0.05),
        ];
        let terms: Vec<CostTerms> = cases
            .iter()
            .map(|&(r, s, q, rc, f, sl)| CostTerms {
                resources: r,
                stranded_gpu: s,
                qos_risk: q,
                reclamation_risk: rc,
                failure_risk: f,
                slowdown: sl,
            })
            .collect();
        for beta in [1.0, 2.0, 3.5] {
            let c = Config::default().with(|c| {
                c.colony.alpha = beta;
                c.colony.beta = beta;
            });
            // What prioritize computed when η held every term.
            let combined: Vec<f64> = terms
                .iter()
                .map(|t| -beta * t.total().max(0.0) / c.cost.cost_reference)
                .collect();
            let ours: Vec<f64> = terms
                .iter()
                .map(|t| log_desirability(t, &c.colony, &c.cost))
                .collect();
            assert_eq!(ours, combined, "β = {beta}");
            let eta_alone = c.clone().with(|c| c.colony.alpha = 0.0);
            let facts: Vec<f64> = terms
                .iter()
                .map(|t| -beta * t.facts_total().max(0.0) / c.cost.cost_reference)
                .collect();
            let ours: Vec<f64> = terms
                .iter()
                .map(|t| log_desirability(t, &eta_alone.colony, &eta_alone.cost))
                .collect();
            assert_eq!(ours, facts, "β = {beta}, α = 0");
        }
    }

    #[test]
    fn exploration_off_by_default_and_picks_a_unique_best_when_on() {
        let mut rng = SmallRng::seed_from_u64(7);
        let d = [1.0, 1.0, 0.5];
        let mut s = to_scores(&d);
        assert_eq!(
            explore(&mut s, &d, &Config::default().colony, &mut rng),
            None
        );
        let c = Config::default().with(|c| c.colony.q0 = 0.0);
        let chosen = explore(&mut s, &d, &c.colony, &mut rng).unwrap();
        assert_eq!(s.iter().filter(|x| **x == 10).count(), 1);
        assert_eq!(s[chosen], 10);
    }

    proptest! {
        #[test]
        fn scores_are_in_range_best_is_ten_and_order_free(d in proptest::collection::vec(0.001f64..100.0, 1..40), rot in 0usize..40) {
            let s = to_scores(&d);
            prop_assert!(s.iter().all(|x| (0..=10).contains(x)));
            let best = d.iter().copied().fold(0.0, f64::max);
            for (x, score) in d.iter().zip(&s) {
                if *x == best { prop_assert_eq!(*score, 10); }
            }
            let mut rotated = d.clone();
            rotated.rotate_left(rot % d.len());
            let mut expected = s.clone();
            expected.rotate_left(rot % d.len());
            prop_assert_eq!(to_scores(&rotated), expected);
        }
    }
}
