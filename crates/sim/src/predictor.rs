//! Which load predictor feeds η (the ablation).

use aco_core::predict::{Ema, Holt, LinReg, NoForecast, Persistence, Predictor, Sma};

use crate::cluster::World;
use crate::engine::{run, SimParams};
use crate::load::{node_utilisation, LoadModel, LoadShare};
use crate::native::NativeScheduler;
use crate::trace::Error;
use crate::{policy, report, rng};

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

/// One line of the predictor ablation on one load model: the forecast error on the probes
/// beside the colony's routing figures (the existing ablation row, flattened in JSON).
#[derive(Debug, Clone, serde::Serialize)]
pub struct DynamicsRow {
    pub load_model: String,
    /// Forecast error at the reporting horizon over every probe and seed (`None`: no forecast).
    pub mae: Option<f64>,
    pub p95_abs_error: Option<f64>,
    /// Share of probe time at or above the spike threshold (the same for every predictor).
    pub probe_time_hot: f64,
    #[serde(flatten)]
    pub routing: report::AblationRow,
}

pub fn dynamics_table(rows: &[DynamicsRow]) -> String {
    let pct = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{:.2}", 100.0 * v));
    let mut s = String::from(
        "| load model | predictor | MAE (points) | p95 abs error (points) | probe time ≥ 0.9 | safe-node routing mean ± sd | min – max | LS QoS (mean) |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        s += &format!(
            "| {} | {} | {} | {} | {:.2}% | {:.2}% ± {:.2} | {:.2}% – {:.2}% | {:.2}% |\n",
            r.load_model,
            r.routing.predictor,
            pct(r.mae),
            pct(r.p95_abs_error),
            100.0 * r.probe_time_hot,
            100.0 * r.routing.safe_routing_mean,
            100.0 * r.routing.safe_routing_sd,
            100.0 * r.routing.safe_routing_min,
            100.0 * r.routing.safe_routing_max,
            100.0 * r.routing.ls_compliance_mean
        );
    }
    s
}

/// What the ablation on real dynamics needs from the command line.
pub struct DynamicsPlan<'a> {
    /// (label, model template; its seed is replaced per run).
    pub models: Vec<(String, LoadModel)>,
    pub seeds: u64,
    pub jobs: usize,
    pub probes: u64,
    pub probe_span_s: u64,
    pub world_of: &'a (dyn Fn(u64) -> Result<World, Error> + Sync),
    pub sim_of: &'a (dyn Fn(u64) -> SimParams + Sync),
}

/// What one (load model, predictor, seed) run of [`ablation_on_dynamics`] measured.
#[derive(Debug, Clone)]
struct SeedOutput {
    /// Absolute forecast errors on the probe series.
    errors: Vec<f64>,
    /// Probe samples at or above the spike threshold, and all probe samples.
    hot: usize,
    total: usize,
    safe_routing: f64,
    ls_compliance: f64,
    cost_usd: f64,
}

/// Every predictor of [`PredictorKind::ablation_set`] on every load model: forecast error on the
/// probes and the colony's safe-node routing over `seeds` runs of the trace, in one call (runs
/// spread over `jobs` threads).
pub fn ablation_on_dynamics(plan: &DynamicsPlan) -> Result<Vec<DynamicsRow>, Error> {
    let kinds = PredictorKind::ablation_set();
    let mut jobs_list = Vec::new();
    for (mi, _) in plan.models.iter().enumerate() {
        for (ki, _) in kinds.iter().enumerate() {
            for seed in 1..=plan.seeds {
                jobs_list.push((mi, ki, seed));
            }
        }
    }
    // In task order, so each (model, predictor) row collects its seeds in order.
    let outputs = crate::parallel::map(&jobs_list, plan.jobs, |&(mi, ki, seed)| {
        (|| -> Result<SeedOutput, Error> {
            let model = LoadModel {
                seed,
                ..plan.models[mi].1.clone()
            };
            let params = SimParams {
                progress: false,
                pheromone_samples: 1,
                ..(plan.sim_of)(seed)
            };
            let per_report = (params.report_interval_s / model.bucket_s.max(1)).max(1) as usize;
            let mut errors = Vec::new();
            let (mut hot, mut total) = (0, 0);
            for s in probe_series(&model, plan.probes, plan.probe_span_s) {
                hot += s.iter().filter(|u| **u >= params.spike_threshold).count();
                total += s.len();
                errors.extend(forecast_abs_errors(
                    kinds[ki].standalone().as_mut(),
                    &s,
                    per_report,
                    per_report,
                ));
            }
            let world = (plan.world_of)(seed)?;
            let mut sched = NativeScheduler::new(
                policy::by_name("colony", seed).ok_or("no colony policy")?,
                world.config.clone(),
                kinds[ki],
            );
            let m = run(&world, &model, &params, &mut sched)?.metrics;
            Ok(SeedOutput {
                errors,
                hot,
                total,
                safe_routing: m.safe_routing_rate,
                ls_compliance: m.ls_compliance,
                cost_usd: m.cost_busy_usd,
            })
        })()
        .map_err(|e| e.to_string())
    });
    let results: Vec<_> = jobs_list.iter().copied().zip(outputs).collect();
    let mut rows = Vec::new();
    for (mi, (label, _)) in plan.models.iter().enumerate() {
        for (ki, kind) in kinds.iter().enumerate() {
            let (mut errors, mut hot, mut total) = (Vec::new(), 0, 0);
            let (mut safe, mut qos, mut cost) = (Vec::new(), Vec::new(), Vec::new());
            for (_, r) in results.iter().filter(|((m, k, _), _)| *m == mi && *k == ki) {
                let out = r.clone()?;
                errors.extend(out.errors);
                hot += out.hot;
                total += out.total;
                safe.push(out.safe_routing);
                qos.push(out.ls_compliance);
                cost.push(out.cost_usd);
            }
            let stats = mae_p95(&errors);
            let row = DynamicsRow {
                load_model: label.clone(),
                mae: stats.map(|s| s.0),
                p95_abs_error: stats.map(|s| s.1),
                probe_time_hot: hot as f64 / total.max(1) as f64,
                routing: report::AblationRow::from_seeds(kind.label(), &safe, &qos, &cost),
            };
            eprintln!(
                "{:>14} {:>24}: MAE {:?}, safe {:.2}%",
                row.load_model,
                row.routing.predictor,
                row.mae.map(|v| 100.0 * v),
                100.0 * row.routing.safe_routing_mean
            );
            rows.push(row);
        }
    }
    Ok(rows)
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
