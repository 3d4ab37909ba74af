//! Which load predictor feeds η, and how well a predictor forecasts a load series on its own
//! (the figures `aco-sim ablate predictors-real` puts beside the colony's routing).

use aco_core::predict::{Ema, Holt, LinReg, NoForecast, Persistence, Predictor, Sma};

use crate::load::{node_utilisation, LoadModel, LoadShare};
use crate::rng;

/// Which load predictor feeds η (the ablation). `Ema` runs through `NodeFacts` exactly as the
/// Worker does (with `EMA_ALPHA` = α); the others replace the node state's load outlook.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PredictorKind {
    Ema(f64),
    Sma(usize),
    Persistence,
    Holt(f64, f64),
    LinReg(usize),
    None,
}

impl PredictorKind {
    pub fn label(&self) -> String {
        match self {
            Self::Ema(a) => format!("EMA α={a}"),
            Self::Sma(n) => format!("SMA n={n}"),
            Self::Persistence => "persistence".into(),
            Self::Holt(a, b) => format!("Holt α={a} β={b}"),
            Self::LinReg(n) => format!("linear regression n={n}"),
            Self::None => "none".into(),
        }
    }
    pub fn ablation_set() -> Vec<Self> {
        vec![
            Self::Ema(0.3),
            Self::Ema(0.5),
            Self::Ema(0.7),
            Self::Sma(8),
            Self::Persistence,
            Self::Holt(0.5, 0.3),
            Self::LinReg(8),
            Self::None,
        ]
    }
    pub fn make(&self) -> Option<Box<dyn Predictor>> {
        match *self {
            Self::Ema(_) => None,
            Self::Sma(n) => Some(Box::new(Sma::new(n))),
            Self::Persistence => Some(Box::new(Persistence::new())),
            Self::Holt(a, b) => Some(Box::new(Holt::new(a, b))),
            Self::LinReg(n) => Some(Box::new(LinReg::new(n))),
            Self::None => Some(Box::new(NoForecast)),
        }
    }
}

impl PredictorKind {
    /// The predictor as a free-standing learner, EMA included (the core's [`Ema`], which is what
    /// `NodeFacts` folds on write), for measuring forecast error outside a run.
    pub fn standalone(&self) -> Box<dyn Predictor> {
        match *self {
            Self::Ema(a) => Box::new(Ema::new(a)),
            _ => self.make().expect("only EMA runs through NodeFacts"),
        }
    }
}

/// Absolute errors of `p`'s forecasts on `series` (one value per simulator step), as the
/// scheduler uses them: the reporter delivers `per_report` new samples at a time, the predictor
/// observes them, and its forecast stands until the next report — so it is compared with the
/// value `horizon` steps after the newest observed sample (the reporting horizon: with 60 s
/// reports of 4 samples on a 15 s grid, `per_report = horizon = 4`). Reports after which the
/// predictor has no forecast (the `none` baseline) contribute nothing.
pub fn forecast_abs_errors(
    p: &mut dyn Predictor,
    series: &[f64],
    per_report: usize,
    horizon: usize,
) -> Vec<f64> {
    let per_report = per_report.max(1);
    let mut errors = Vec::new();
    let mut seen = 0;
    while seen + per_report <= series.len() {
        for &x in &series[seen..seen + per_report] {
            p.observe(x);
        }
        seen += per_report;
        let target = seen - 1 + horizon;
        let (Some(f), Some(actual)) = (p.forecast(), series.get(target)) else {
            continue;
        };
        errors.push((f - actual).abs());
    }
    errors
}

/// Mean and 95th percentile (nearest rank) of absolute errors; `None` when there are none.
pub fn mae_p95(errors: &[f64]) -> Option<(f64, f64)> {
    if errors.is_empty() {
        return None;
    }
    let mut sorted = errors.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((0.95 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some((
        errors.iter().sum::<f64>() / errors.len() as f64,
        sorted[rank - 1],
    ))
}

/// Probe nodes for the forecast error: `count` nodes each holding one pod whose request is the
/// node's whole allocatable CPU (so the node's utilisation is the pod's, clamped to 1 — the
/// load model's shape with nothing averaged away), alternately LS and not, keyed by
/// `(seed, i)`; utilisation on the load model's grid over `span_s`.
pub fn probe_series(model: &LoadModel, count: u64, span_s: u64) -> Vec<Vec<f64>> {
    let step = model.bucket_s.max(1);
    (0..count)
        .map(|i| {
            let key = rng::hash(&[model.seed, i, 0x9E0B]);
            let share = LoadShare {
                pod_key: key,
                load: model.pod(key, i % 2 == 0),
                cpu_milli: 8000.0,
                gpu_milli: 0.0,
            };
            (0..span_s / step)
                .map(|b| node_utilisation(model, &[share], 8000.0, 0.0, b * step))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forecast_error_on_a_hand_made_series() {
        // Persistence on 0,1,2,…,9 with 2 samples per report and a horizon of 2: after each
        // report the forecast is the last value v, the target is v + 2 → error 2, five reports,
        // the last one without a target.
        let s: Vec<f64> = (0..10).map(|i| i as f64 / 10.0).collect();
        let e = forecast_abs_errors(&mut Persistence::new(), &s, 2, 2);
        assert_eq!(e.len(), 4);
        assert!(e.iter().all(|x| (x - 0.2).abs() < 1e-12), "{e:?}");
        // EMA α = 0.5 on a step 0,0,1,1 (1 sample per report, horizon 1): forecasts 0, 0, 0.5
        // against 0, 1, 1.
        let e = forecast_abs_errors(&mut Ema::new(0.5), &[0.0, 0.0, 1.0, 1.0], 1, 1);
        assert_eq!(e, vec![0.0, 1.0, 0.5]);
        // No forecast, no error.
        assert!(forecast_abs_errors(&mut NoForecast, &s, 2, 2).is_empty());
    }

    #[test]
    fn mae_and_nearest_rank_p95() {
        let errors: Vec<f64> = (1..=20).map(|i| i as f64).collect();
        let (mae, p95) = mae_p95(&errors).unwrap();
        assert_eq!(mae, 10.5);
        assert_eq!(p95, 19.0);
        assert_eq!(mae_p95(&[0.3]), Some((0.3, 0.3)));
        assert_eq!(mae_p95(&[]), None);
    }

    #[test]
    fn every_predictor_stands_alone_and_learns() {
        for k in PredictorKind::ablation_set() {
            let mut p = k.standalone();
            p.observe(0.4);
            assert_eq!(
                p.forecast().is_some(),
                k != PredictorKind::None,
                "{}",
                k.label()
            );
        }
    }

    #[test]
    fn probes_are_seeded_and_bounded() {
        let m = LoadModel::default();
        let a = probe_series(&m, 3, 3600);
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].len(), 240);
        assert_eq!(a, probe_series(&m, 3, 3600));
        assert_ne!(a, probe_series(&LoadModel { seed: 9, ..m }, 3, 3600));
        assert!(a.iter().flatten().all(|u| (0.0..=1.0).contains(u)));
    }
}
