//! `aco-sim ablate <mode>`: the three ablations under one subcommand (`crate::ablate`), each
//! writing its table to `<out>/<name>.md` and its rows to `<out>/<name>.json`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::input::{load_models as models_named, Input};
use super::output::Output;
use super::parse_seeds;
use super::paths::out_dir;
use crate::ablate::eta::{ablation_table, run_ablation, standard_variants, AblationPlan};
use crate::ablate::predictors::{run_predictor_ablation, PredictorPlan};
use crate::ablate::predictors_real::{ablation_on_dynamics, dynamics_table, DynamicsPlan};
use crate::predictor::PredictorKind;
use crate::progress::Display;
use crate::report;
use crate::trace::Error;

#[derive(Args)]
pub struct AblateArgs {
    #[command(subcommand)]
    pub mode: Mode,
}

#[derive(Subcommand)]
pub enum Mode {
    /// Where the colony's cost and QoS come from: each factor of η left out, the trail on under
    /// each kind of outcome report, beside η alone and the baselines, over several seeds
    /// (default seeds 1-3, name `ablate`).
    Eta {
        #[command(flatten)]
        common: Common,
        /// Only the variants whose label contains one of these (comma-separated); first-fit is
        /// always kept (the comparison's baseline).
        #[arg(long, value_delimiter = ',')]
        only: Option<Vec<String>>,
    },
    /// Predictor ablation for the colony: safe-node routing over several seeds (default seeds
    /// 1-10, name `ablation`).
    Predictors {
        #[command(flatten)]
        common: Common,
    },
    /// Predictor ablation on real dynamics: per predictor, forecast error at the reporting
    /// horizon and the colony's safe-node routing, on the synthetic load model and on load shaped
    /// by the real series of `--usage-dir` (see `aco_sim::usage`), in one run (default seeds
    /// 1-5, name `predictors-real`).
    PredictorsReal {
        #[command(flatten)]
        common: Common,
        /// `synthetic` and/or `usage:<alibaba|alibaba-300s|google|azure>`.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "synthetic,usage:alibaba,usage:alibaba-300s,usage:google,usage:azure"
        )]
        load_models: Vec<String>,
        /// Single-pod probe nodes per seed for the forecast error.
        #[arg(long, default_value_t = 64)]
        probes: u64,
        /// Hours of load each probe node's series spans.
        #[arg(long, default_value_t = 48)]
        probe_hours: u64,
    },
}

/// The flags every mode takes.
#[derive(Args)]
pub struct Common {
    #[command(flatten)]
    pub input: Input,
    /// Seeds as a range `1-3` or a list `1,2` (default: the mode's).
    #[arg(long)]
    pub seeds: Option<String>,
    /// Output folder (default: target/aco-sim/ablate in the checkout; `--out docs/sim`
    /// regenerates the committed results).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Output name (default: the mode's).
    #[arg(long)]
    pub name: Option<String>,
    /// Runs in parallel threads.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
}

impl Common {
    fn seeds(&self, default: &str) -> Result<Vec<u64>, Error> {
        parse_seeds(self.seeds.as_deref().unwrap_or(default))
    }

    fn output(&self, default: &str) -> Output {
        Output::new(
            &out_dir(self.out.as_deref(), "ablate"),
            self.name.as_deref().unwrap_or(default),
        )
    }
}

pub fn main(args: AblateArgs, display: Display) -> Result<(), Error> {
    match args.mode {
        Mode::Eta { common, only } => {
            let input = &common.input;
            let mut variants = standard_variants();
            if let Some(only) = &only {
                variants.retain(|v| {
                    v.label == "first-fit" || only.iter().any(|o| v.label.contains(o.as_str()))
                });
            }
            let seeds = common.seeds("1-3")?;
            let plan = AblationPlan {
                progress: display.pods(variants.len() * seeds.len(), "ablate eta"),
                variants,
                seeds,
                jobs: common.jobs,
                base_vars: input.vars.clone(),
                world_of: &|seed| input.world(seed),
                sim_of: &|seed| input.sim(seed),
                load_of: &|seed| input.load(seed),
            };
            let rows = run_ablation(&plan)?;
            let table = ablation_table(&rows);
            println!("{table}");
            common.output("ablate").tables(&table, &rows)?;
            common.output("ablate").announce(&[".md", ".json"]);
            Ok(())
        }
        Mode::Predictors { common } => {
            let input = &common.input;
            let seeds = common.seeds("1-10")?;
            let plan = PredictorPlan {
                progress: display.pods(
                    PredictorKind::ablation_set().len() * seeds.len(),
                    "ablate predictors",
                ),
                seeds,
                jobs: common.jobs,
                world_of: &|seed| input.world(seed),
                sim_of: &|seed| input.sim(seed),
                load_of: &|seed| input.load(seed),
            };
            let rows = run_predictor_ablation(&plan)?;
            let table = report::ablation_table(&rows);
            println!("{table}");
            common.output("ablation").tables(&table, &rows)?;
            common.output("ablation").announce(&[".md", ".json"]);
            Ok(())
        }
        Mode::PredictorsReal {
            common,
            load_models,
            probes,
            probe_hours,
        } => {
            let input = &common.input;
            let models = models_named(&load_models, input.usage_dir.as_deref())?;
            let seeds = common.seeds("1-5")?;
            let plan = DynamicsPlan {
                progress: display.pods(
                    models.len() * PredictorKind::ablation_set().len() * seeds.len(),
                    "ablate predictors-real",
                ),
                models,
                seeds,
                jobs: common.jobs,
                probes,
                probe_span_s: probe_hours * 3600,
                world_of: &|seed| input.world(seed),
                sim_of: &|seed| input.sim(seed),
            };
            let rows = ablation_on_dynamics(&plan)?;
            let table = dynamics_table(&rows);
            println!("{table}");
            common.output("predictors-real").tables(&table, &rows)?;
            common.output("predictors-real").announce(&[".md", ".json"]);
            Ok(())
        }
    }
}
