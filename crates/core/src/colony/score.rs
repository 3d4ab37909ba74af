//! From τ and η to kube-scheduler's integer scores.

use rand::Rng;

use crate::config::Config;

/// `s(n) = τ^α · η^β`.
pub fn desirability(tau: f64, eta: f64, config: &Config) -> f64 {
    tau.powf(config.alpha) * eta.powf(config.beta)
}

/// `τ^α·η^β` of each candidate relative to the best one, from η's unfloored cost totals ($/h):
/// `exp(α·ln τ − β·total/COST_REFERENCE − max)`. Equal to `desirability / max desirability`
/// whenever no η sits at `ETA_FLOOR`, and unlike it still ranks candidates by their total when
/// every total is large (a 4-GPU pod on $24/h nodes: η = exp(−12) would floor them all to one
/// tie). A non-finite total, and anything below `ETA_FLOOR^β`, is that floor (still reachable
/// by exploration).
pub fn relative_desirabilities(taus: &[f64], totals: &[f64], config: &Config) -> Vec<f64> {
    let logs: Vec<f64> = taus
        .iter()
        .zip(totals)
        .map(|(tau, total)| {
            let total = if total.is_nan() {
                f64::INFINITY
            } else {
                total.max(0.0)
            };
            let l = config.alpha * tau.ln() - config.beta * total / config.cost_reference;
            if l.is_nan() {
                f64::NEG_INFINITY
            } else {
                l
            }
        })
        .collect();
    let best = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let floor = config.eta_floor.powf(config.beta);
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
    config: &Config,
    rng: &mut impl Rng,
) -> Option<usize> {
    if config.q0 >= 1.0 || scores.is_empty() || rng.random::<f64>() < config.q0 {
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
    use proptest::prelude::*;
    use rand::{rngs::SmallRng, SeedableRng};

    #[test]
    fn best_gets_ten_and_zero_max_gives_zeros() {
        assert_eq!(to_scores(&[0.5, 1.0, 0.25]), vec![5, 10, 3]);
        assert_eq!(to_scores(&[0.0, 0.0]), vec![0, 0]);
        assert_eq!(to_scores(&[]), Vec::<i64>::new());
    }

    #[test]
    fn relative_desirabilities_rank_large_totals_that_eta_would_floor_to_one_tie() {
        let c = Config {
            alpha: 1.0,
            ..Config::default()
        };
        // Totals of $12–$14/h: η = exp(−total) is below ETA_FLOOR for all three.
        let totals = [12.0, 12.5, 14.0];
        let taus = [1.0, 1.0, 1.0];
        let r = relative_desirabilities(&taus, &totals, &c);
        assert_eq!(r[0], 1.0);
        assert!((r[1] - (-1.0f64).exp()).abs() < 1e-12, "{r:?}");
        assert_eq!(to_scores(&r), vec![10, 4, 0]);
        // Where nothing floors, the same as desirability / max.
        let (totals, taus): ([f64; 2], [f64; 2]) = ([0.5, 1.0], [2.0, 1.0]);
        let d: Vec<f64> = taus
            .iter()
            .zip(&totals)
            .map(|(t, x)| desirability(*t, (-x / c.cost_reference).exp(), &c))
            .collect();
        let max = d.iter().copied().fold(0.0, f64::max);
        let r = relative_desirabilities(&taus, &totals, &c);
        for (a, b) in r.iter().zip(&d) {
            assert!((a - b / max).abs() < 1e-12, "{r:?} vs {d:?}");
        }
        // A non-finite total is the floor, never NaN.
        let r = relative_desirabilities(&[1.0, 1.0], &[0.1, f64::NAN], &c);
        assert_eq!(r, vec![1.0, c.eta_floor.powf(c.beta)]);
    }

    #[test]
    fn exploration_off_by_default_and_picks_a_unique_best_when_on() {
        let mut rng = SmallRng::seed_from_u64(7);
        let d = [1.0, 1.0, 0.5];
        let mut s = to_scores(&d);
        assert_eq!(explore(&mut s, &d, &Config::default(), &mut rng), None);
        let c = Config {
            q0: 0.0,
            ..Config::default()
        };
        let chosen = explore(&mut s, &d, &c, &mut rng).unwrap();
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
