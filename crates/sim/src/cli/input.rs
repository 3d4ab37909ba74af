//! The flags every trace-driven subcommand shares: which trace, prices, seed, tenants, the
//! simulated reporter and the extender's `[vars]`, and what they build (world, simulation
//! parameters, load model).

use std::path::{Path, PathBuf};

use clap::Args;

use super::repo_path;
use crate::cluster::{World, WorldParams};
use crate::engine::SimParams;
use crate::load::LoadModel;
use crate::prices::PriceTable;
use crate::trace::{self, Error};

#[derive(Args, Clone)]
pub struct Input {
    /// Node CSV (default: the shipped sample).
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// Pod CSV (default: the shipped sample).
    #[arg(long)]
    pub pods: Option<PathBuf>,
    /// Use ../shared/data/openb with this pod list: default, cpu050, gpushare40, gpuspec10, multigpu20.
    #[arg(long)]
    pub openb: Option<String>,
    #[arg(long, default_value = "../shared/data/openb")]
    pub openb_dir: PathBuf,
    #[arg(long, default_value = "data/prices")]
    pub prices: PathBuf,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only the first N arrivals.
    #[arg(long)]
    pub max_pods: Option<usize>,
    #[arg(long, default_value_t = 3)]
    pub tenants: usize,
    #[arg(long, default_value_t = 0.2)]
    pub spot_share: f64,
    #[arg(long, default_value_t = 60)]
    pub report_interval_s: u64,
    #[arg(long, default_value_t = 0.8)]
    pub sla_threshold: f64,
    #[arg(long, default_value_t = 600)]
    pub safe_horizon_s: u64,
    /// The extender's config, as the Worker's `[vars]` (repeatable): `--var ALPHA=0` ignores the
    /// trail (η alone), `--var ETA_FACTORS=cost,headroom` keeps only those factors of η.
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub vars: Vec<String>,
    /// `synthetic` (default) or `usage:<alibaba|alibaba-300s|google|azure>`: the load's shape
    /// from a real utilisation series in `--usage-dir` (see `aco_sim::usage`).
    #[arg(long, default_value = "synthetic")]
    pub load_model: String,
    #[arg(long, default_value = "../shared/data/usage")]
    pub usage_dir: PathBuf,
    /// What the simulated reporter says after a placement: `none` (placements only: the trail
    /// deposits η), `qos` (each pod's QoS outcome) or `qos-cost` (with its observed cost).
    #[arg(long, default_value = "qos-cost")]
    pub outcomes: crate::engine::OutcomeReports,
    /// Spot nodes are never reclaimed (see `aco_sim::spot` for the default model).
    #[arg(long)]
    pub no_spot_reclamation: bool,
    /// Node performance variation (`aco_sim::performance`): `none`, `shared` (one slowdown per
    /// node) or `per-class` (one per node and tenant's workload class).
    #[arg(long, default_value = "none")]
    pub performance: crate::performance::PerformanceModel,
    /// Hidden node faults (`aco_sim::faults`): `none`, or `<share>,<rate per hour>` — that share
    /// of the nodes fails each pod on it after an exponential time at that rate, and no fact
    /// shows it (what the colony's reliability term is for)
    #[arg(long, default_value = "none")]
    pub node_faults: crate::faults::NodeFaults,
}

impl Input {
    pub fn world(&self, seed: u64) -> Result<World, Error> {
        let (nodes, pods) = match &self.openb {
            Some(list) => {
                let dir = repo_path(&self.openb_dir);
                (
                    dir.join("openb_node_list_all_node.csv"),
                    dir.join(format!("openb_pod_list_{list}.csv")),
                )
            }
            None => (
                self.nodes
                    .clone()
                    .unwrap_or_else(|| repo_path(Path::new("data/openb-sample/nodes.csv"))),
                self.pods
                    .clone()
                    .unwrap_or_else(|| repo_path(Path::new("data/openb-sample/pods.csv"))),
            ),
        };
        let nodes = trace::read_nodes(&nodes)?;
        let pods = trace::read_pods(&pods, 60)?;
        let prices = PriceTable::load(&repo_path(&self.prices))?;
        let params = WorldParams {
            seed,
            tenants: self.tenants,
            spot_share: self.spot_share,
            ..WorldParams::default()
        };
        let mut world = World::build(&nodes, &pods, &prices, params);
        world.config = crate::cluster::sim_config_with(&self.vars)?;
        Ok(world)
    }

    pub fn sim(&self, seed: u64) -> SimParams {
        SimParams {
            seed,
            report_interval_s: self.report_interval_s,
            sla_threshold: self.sla_threshold,
            safe_horizon_s: self.safe_horizon_s,
            max_pods: self.max_pods,
            outcomes: self.outcomes,
            spot_reclamation: !self.no_spot_reclamation,
            performance: self.performance,
            node_faults: self.node_faults,
            progress: true,
            ..SimParams::default()
        }
    }

    pub fn load(&self, seed: u64) -> Result<LoadModel, Error> {
        let (_, model) = crate::load::load_models(
            std::slice::from_ref(&self.load_model),
            &repo_path(&self.usage_dir),
        )?
        .remove(0);
        Ok(LoadModel { seed, ..model })
    }
}
