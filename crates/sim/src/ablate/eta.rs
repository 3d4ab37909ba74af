//! `aco-sim ablate eta`: where the colony's cost and QoS come from, in the cost/QoS replay. The colony
//! with each factor of η left out (`ETA_FACTORS`), with the trail on (`ALPHA=1`; the default is
//! η alone) under each kind of outcome report, beside η alone and the baselines a platform team would pick instead,
//! over several seeds (mean ± sd). Each variant is a policy plus Worker vars and an outcome mode,
//! so every row is a configuration a cluster could run.

use aco_core::config::EtaFactorSet;
use serde::Serialize;

use crate::cluster::{sim_config_with, World};
use crate::engine::{Metrics, OutcomeReports, SimParams};
use crate::load::LoadModel;
use crate::native::NativeScheduler;
use crate::policy;
use crate::predictor::PredictorKind;
use crate::progress::Progress;
use crate::report::mean_sd;
use crate::trace::Error;

/// One configuration to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub label: String,
    pub policy: &'static str,
    pub vars: Vec<String>,
    pub outcomes: OutcomeReports,
}

impl Variant {
    fn new(
        label: impl Into<String>,
        policy: &'static str,
        vars: &[String],
        outcomes: OutcomeReports,
    ) -> Self {
        Variant {
            label: label.into(),
            policy,
            vars: vars.to_vec(),
            outcomes,
        }
    }
}

/// The standard set: baselines, η alone, the colony by default (η alone), the colony with the
/// trail on under each outcome mode, the price of a breach and of opening a node varied, and the
/// colony without each factor of η in turn.
pub fn standard_variants() -> Vec<Variant> {
    let none: &[String] = &[];
    let mut v = vec![
        Variant::new("first-fit", "first-fit", none, OutcomeReports::None),
        Variant::new("cheapest-fit", "cheapest-fit", none, OutcomeReports::None),
        Variant::new(
            "k8s-mostallocated",
            "k8s-mostallocated",
            none,
            OutcomeReports::None,
        ),
        Variant::new(
            "heuristic (η alone)",
            "heuristic",
            none,
            OutcomeReports::None,
        ),
        Variant::new("colony (default)", "colony", none, OutcomeReports::QosCost),
        // The trail on: what each kind of outcome report teaches it.
        Variant::new(
            "colony, ALPHA=1, placements only (τ learns η)",
            "colony",
            &["ALPHA=1".to_string()],
            OutcomeReports::None,
        ),
        Variant::new(
            "colony, ALPHA=1, QoS outcomes",
            "colony",
            &["ALPHA=1".to_string()],
            OutcomeReports::Qos,
        ),
        Variant::new(
            "colony, ALPHA=1, QoS+cost outcomes",
            "colony",
            &["ALPHA=1".to_string()],
            OutcomeReports::QosCost,
        ),
    ];
    // The price of a breach decides how much risk latency-critical pods take for money, and the
    // idle fraction what opening a node costs (1 = the whole price, the rule before v5).
    for (label, var) in [
        ("SLA_VIOLATION_COST=5", "SLA_VIOLATION_COST=5"),
        ("SLA_VIOLATION_COST=500", "SLA_VIOLATION_COST=500"),
        ("OPEN_NODE_IDLE_FRACTION=1", "OPEN_NODE_IDLE_FRACTION=1"),
        ("OPEN_NODE_IDLE_FRACTION=0.2", "OPEN_NODE_IDLE_FRACTION=0.2"),
    ] {
        v.push(Variant::new(
            format!("colony, {label}"),
            "colony",
            &[var.to_string()],
            OutcomeReports::QosCost,
        ));
    }
    for factor in EtaFactorSet::NAMES {
        let keep: Vec<&str> = EtaFactorSet::NAMES
            .iter()
            .copied()
            .filter(|f| *f != factor)
            .collect();
        v.push(Variant::new(
            format!("colony without {factor}"),
            "colony",
            &[format!("ETA_FACTORS={}", keep.join(","))],
            OutcomeReports::QosCost,
        ));
    }
    v
}

/// A variant's figures over the seeds.
#[derive(Debug, Clone, Serialize)]
pub struct VariantRow {
    pub label: String,
    pub seeds: usize,
    pub cost_mean: f64,
    pub cost_sd: f64,
    /// Mean over seeds of (cost / first-fit's cost in the same seed − 1); `None` without first-fit.
    pub vs_first_fit_mean: Option<f64>,
    pub vs_first_fit_sd: Option<f64>,
    pub ls_compliance_mean: f64,
    pub ls_compliance_sd: f64,
    pub ls_compliance_min: f64,
    pub unplaced_mean: f64,
    pub nodes_used_mean: f64,
    pub decisions_per_s_mean: f64,
}

/// What the runner needs from the CLI: the world and the simulation of a seed.
pub struct AblationPlan<'a> {
    /// Counts the pods of every run (`crate::progress`).
    pub progress: Progress,
    pub variants: Vec<Variant>,
    pub seeds: Vec<u64>,
    pub jobs: usize,
    /// Vars given on the command line, under each variant's own.
    pub base_vars: Vec<String>,
    pub world_of: &'a (dyn Fn(u64) -> Result<World, Error> + Sync),
    pub sim_of: &'a (dyn Fn(u64) -> SimParams + Sync),
    pub load_of: &'a (dyn Fn(u64) -> Result<LoadModel, Error> + Sync),
}

fn run_one(plan: &AblationPlan, variant: &Variant, seed: u64) -> Result<Metrics, Error> {
    let mut world = (plan.world_of)(seed)?;
    let vars: Vec<String> = plan
        .base_vars
        .iter()
        .chain(&variant.vars)
        .cloned()
        .collect();
    world.config = sim_config_with(&vars)?;
    let mut params = (plan.sim_of)(seed);
    params.pheromone_samples = 1;
    params.outcomes = variant.outcomes;
    let policy = policy::by_name(variant.policy, seed)
        .ok_or_else(|| format!("unknown policy {}", variant.policy))?;
    let mut s = NativeScheduler::new(
        policy,
        world.config.clone(),
        PredictorKind::Ema(world.config.load.ema_alpha),
    );
    let load = (plan.load_of)(seed)?;
    Ok(plan.progress.run(&world, &load, &params, &mut s)?.metrics)
}

/// Runs every variant on every seed (`jobs` threads) and summarises each variant.
pub fn run_ablation(plan: &AblationPlan) -> Result<Vec<VariantRow>, Error> {
    let tasks: Vec<(usize, u64)> = (0..plan.variants.len())
        .flat_map(|v| plan.seeds.iter().map(move |s| (v, *s)))
        .collect();
    let outputs = crate::parallel::map(&tasks, plan.jobs, |&(v, seed)| {
        let r = run_one(plan, &plan.variants[v], seed).map_err(|e| e.to_string());
        if let Ok(m) = &r {
            plan.progress.println(format!(
                "{:>40} seed {seed}: ${:.0}, LS QoS {:.2}%, unplaced {}",
                plan.variants[v].label,
                m.cost_busy_usd,
                100.0 * m.ls_compliance,
                m.unplaced
            ));
        }
        r
    });
    plan.progress.finish();
    let mut by_task = std::collections::BTreeMap::new();
    for (key, r) in tasks.iter().zip(outputs) {
        by_task.insert(*key, r?);
    }
    let first_fit = plan
        .variants
        .iter()
        .position(|v| v.policy == "first-fit" && v.vars.is_empty());
    Ok(plan
        .variants
        .iter()
        .enumerate()
        .map(|(v, variant)| {
            let ms: Vec<&Metrics> = plan.seeds.iter().map(|s| &by_task[&(v, *s)]).collect();
            let col = |f: &dyn Fn(&Metrics) -> f64| ms.iter().map(|m| f(m)).collect::<Vec<f64>>();
            let (cost_mean, cost_sd) = mean_sd(&col(&|m| m.cost_busy_usd));
            let (ls_compliance_mean, ls_compliance_sd) = mean_sd(&col(&|m| m.ls_compliance));
            let vs = first_fit.map(|ff| {
                let ratios: Vec<f64> = plan
                    .seeds
                    .iter()
                    .map(|s| {
                        by_task[&(v, *s)].cost_busy_usd / by_task[&(ff, *s)].cost_busy_usd - 1.0
                    })
                    .collect();
                mean_sd(&ratios)
            });
            VariantRow {
                label: variant.label.clone(),
                seeds: ms.len(),
                cost_mean,
                cost_sd,
                vs_first_fit_mean: vs.map(|x| x.0),
                vs_first_fit_sd: vs.map(|x| x.1),
                ls_compliance_mean,
                ls_compliance_sd,
                ls_compliance_min: col(&|m| m.ls_compliance).into_iter().fold(1.0, f64::min),
                unplaced_mean: mean_sd(&col(&|m| m.unplaced as f64)).0,
                nodes_used_mean: mean_sd(&col(&|m| m.nodes_used as f64)).0,
                decisions_per_s_mean: mean_sd(&col(&|m| m.decisions_per_s)).0,
            }
        })
        .collect())
}

pub fn ablation_table(rows: &[VariantRow]) -> String {
    let mut s = String::from("| variant | seeds | cost $ (mean ± sd) | vs first-fit | LS QoS (mean ± sd, min) | unplaced | nodes used | decisions/s |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let vs = match (r.vs_first_fit_mean, r.vs_first_fit_sd) {
            (Some(m), Some(sd)) => format!("{:+.1}% ± {:.1}", 100.0 * m, 100.0 * sd),
            _ => "–".into(),
        };
        s += &format!(
            "| {} | {} | {:.0} ± {:.0} | {} | {:.2}% ± {:.2} (min {:.2}%) | {:.1} | {:.0} | {:.0} |\n",
            r.label,
            r.seeds,
            r.cost_mean,
            r.cost_sd,
            vs,
            100.0 * r.ls_compliance_mean,
            100.0 * r.ls_compliance_sd,
            100.0 * r.ls_compliance_min,
            r.unplaced_mean,
            r.nodes_used_mean,
            r.decisions_per_s_mean
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::sample_world;

    #[test]
    fn every_standard_variant_is_a_valid_configuration_and_the_factor_rows_leave_one_out() {
        for v in standard_variants() {
            sim_config_with(&v.vars).unwrap_or_else(|e| panic!("{}: {e}", v.label));
            assert!(policy::by_name(v.policy, 1).is_some(), "{}", v.label);
        }
        let c = sim_config_with(&["ETA_FACTORS=reliability,cost,headroom,spike".into()]).unwrap();
        assert!(!c.cost.eta_factors.fragmentation && c.cost.eta_factors.cost);
    }

    /// On the shipped sample: first-fit's row is 0% against itself, and the colony's rows differ
    /// from one another (the vars reach the colony's η).
    #[test]
    fn the_runner_compares_against_first_fit_in_the_same_seed_and_the_vars_take_effect() {
        let variants = vec![
            Variant::new("first-fit", "first-fit", &[], OutcomeReports::None),
            Variant::new("colony", "colony", &[], OutcomeReports::QosCost),
            Variant::new(
                "colony cost only",
                "colony",
                &["ETA_FACTORS=cost".into()],
                OutcomeReports::QosCost,
            ),
        ];
        let plan = AblationPlan {
            progress: Progress::hidden(),
            variants,
            seeds: vec![1, 2],
            jobs: 2,
            base_vars: Vec::new(),
            world_of: &|seed| {
                sample_world(
                    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("../..")
                        .as_path(),
                    seed,
                )
            },
            sim_of: &|seed| SimParams {
                seed,
                ..SimParams::default()
            },
            load_of: &|seed| {
                Ok(LoadModel {
                    seed,
                    ..LoadModel::default()
                })
            },
        };
        let rows = run_ablation(&plan).unwrap();
        assert_eq!(rows[0].vs_first_fit_mean, Some(0.0));
        assert_eq!(rows[0].seeds, 2);
        assert_ne!(
            rows[1].cost_mean, rows[2].cost_mean,
            "ETA_FACTORS=cost changed nothing: {rows:?}"
        );
        assert!(ablation_table(&rows).lines().count() == 5);
    }
}
