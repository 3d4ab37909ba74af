//! `aco-sim ablate predictors-real`: every load predictor of [`PredictorKind::ablation_set`] on
//! the synthetic load model and on load shaped by the real utilisation series (`--usage-dir`; see
//! `crate::usage`): its forecast error at the reporting horizon on single-pod probe nodes, beside
//! the colony's safe-node routing with that predictor, in one run.

use crate::cluster::World;
use crate::engine::SimParams;
use crate::load::LoadModel;
use crate::native::NativeScheduler;
use crate::predictor::{forecast_abs_errors, mae_p95, probe_series, PredictorKind};
use crate::progress::Progress;
use crate::trace::Error;
use crate::{policy, report};

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
    /// Counts the pods of every run (`crate::progress`).
    pub progress: Progress,
    /// (label, model template; its seed is replaced per run).
    pub models: Vec<(String, LoadModel)>,
    pub seeds: Vec<u64>,
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
/// probes and the colony's safe-node routing over a run of the trace per seed, in one call (runs
/// spread over `jobs` threads).
pub fn ablation_on_dynamics(plan: &DynamicsPlan) -> Result<Vec<DynamicsRow>, Error> {
    let kinds = PredictorKind::ablation_set();
    let mut jobs_list = Vec::new();
    for (mi, _) in plan.models.iter().enumerate() {
        for (ki, _) in kinds.iter().enumerate() {
            for &seed in &plan.seeds {
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
            let m = plan
                .progress
                .run(&world, &model, &params, &mut sched)?
                .metrics;
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
    plan.progress.finish();
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
            plan.progress.println(format!(
                "{:>14} {:>24}: MAE {:?}, safe {:.2}%",
                row.load_model,
                row.routing.predictor,
                row.mae.map(|v| 100.0 * v),
                100.0 * row.routing.safe_routing_mean
            ));
            rows.push(row);
        }
    }
    Ok(rows)
}
