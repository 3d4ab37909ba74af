//! The flags every trace-driven subcommand shares: which trace, prices, seed, tenants, the
//! simulated reporter and the extender's `[vars]`, and what they build (world, simulation
//! parameters, load model).

use std::path::{Path, PathBuf};

use clap::Args;

use super::{data, repo_path};
use crate::cluster::{World, WorldParams};
use crate::engine::SimParams;
use crate::load::LoadModel;
use crate::prices::PriceTable;
use crate::trace::Error;

#[derive(Args, Clone)]
pub struct Input {
    /// Node CSV in the OpenB format (default: the shipped sample, data/openb-sample/nodes.csv).
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// Pod CSV in the OpenB format (default: the shipped sample, data/openb-sample/pods.csv).
    #[arg(long)]
    pub pods: Option<PathBuf>,
    /// Replay this pod list of the OpenB trace (`openb_pod_list_<LIST>.csv`: default, cpu050,
    /// gpushare40, gpuspec10, multigpu20) on the trace's nodes (`openb_node_list_all_node.csv`),
    /// both from the folder --openb-dir finds (with only --openb-dir, the list `default`, or
    /// the folder's only pod list, as in a folder written by `aco-sim import`).
    #[arg(long, value_name = "LIST")]
    pub openb: Option<String>,
    /// Folder holding the OpenB trace's CSVs (or an `aco-sim import` output); giving it
    /// replays the trace even without --openb. Default: $ACO_OPENB_DIR, else data/openb/ in
    /// the checkout; when neither holds it, aco-sim says where to get it and exits 2.
    #[arg(long, value_name = "DIR")]
    pub openb_dir: Option<PathBuf>,
    /// Price table folder (node_types.csv, components.csv; see data/prices/README.md):
    /// on-demand $/h per node shape.
    #[arg(long, default_value = "data/prices", value_name = "DIR")]
    pub prices: PathBuf,
    /// Seed of everything derived (spot nodes, zones, latencies, tenants, load, ties): the same
    /// seed and flags write the same files.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only the first N arrivals.
    #[arg(long, value_name = "N")]
    pub max_pods: Option<usize>,
    /// Tenants the trace's pods are spread over (seeded): team-a, team-b, … (an imported
    /// cluster keeps its own).
    #[arg(long, default_value_t = 3)]
    pub tenants: usize,
    /// Share of nodes that are spot instances (seeded), priced at 0.4 × on-demand and
    /// reclaimed at their pool's rate (an imported cluster's `aco/instance-type` label decides).
    #[arg(long, default_value_t = 0.2, value_name = "SHARE")]
    pub spot_share: f64,
    /// Share of latency-sensitive pods (seeded) that carry a latency target (the
    /// `scheduling.aco/latency-target-us` annotation, 300 µs).
    #[arg(long, default_value_t = 0.3, value_name = "SHARE")]
    pub latency_target_share: f64,
    /// Seconds between the simulated reporter's node-fact rounds.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub report_interval_s: u64,
    /// A latency-sensitive pod keeps its QoS while its node's utilisation stays below this
    /// (0-1).
    #[arg(long, default_value_t = 0.8, value_name = "UTILISATION")]
    pub sla_threshold: f64,
    /// Safe-node routing counts a node as safe when it stays below the spike threshold for
    /// this many seconds after a placement.
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    pub safe_horizon_s: u64,
    /// The extender's config, as the Worker's `[vars]` (repeatable): `--var ALPHA=0` ignores the
    /// trail (η alone), `--var ETA_FACTORS=cost,headroom` keeps only those factors of η.
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub vars: Vec<String>,
    /// `synthetic` (default) or `usage:<alibaba|alibaba-300s|google|azure>`: the load's shape
    /// from a real utilisation series in --usage-dir (see `aco_sim::usage`).
    #[arg(long, default_value = "synthetic", value_name = "MODEL")]
    pub load_model: String,
    /// Folder holding the real utilisation series (read only by `usage:` load models).
    /// Default: $ACO_USAGE_DIR, else data/usage/ in the checkout; when neither holds them,
    /// aco-sim says where to get them and exits 2.
    #[arg(long, value_name = "DIR")]
    pub usage_dir: Option<PathBuf>,
    /// What the simulated reporter says after a placement: `none` (placements only: the trail
    /// deposits η), `qos` (each pod's QoS outcome) or `qos-cost` (with its observed cost).
    /// `completion` (each pod's success at its departure, never a QoS violation: what the
    /// reporter reads from pod status on a cluster without a QoS monitor).
    #[arg(long, default_value = "qos-cost")]
    pub outcomes: crate::engine::OutcomeReports,
    /// The simulated reporter sends no node utilisation (as `aco-reporter --no-node-metrics`):
    /// η sees allocation and per-GPU shares only.
    #[arg(long)]
    pub no_utilisation_facts: bool,
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
    /// The node and pod CSVs: the OpenB trace's when --openb or --openb-dir is given, else
    /// --nodes/--pods, else the shipped sample.
    pub fn files(&self) -> Result<(PathBuf, PathBuf), Error> {
        if self.openb.is_some() || self.openb_dir.is_some() {
            let dir = data::OPENB.dir(self.openb_dir.as_deref())?;
            let list = match &self.openb {
                Some(list) => list.clone(),
                None => data::default_pod_list(std::slice::from_ref(&dir))?,
            };
            return Ok((
                dir.join("openb_node_list_all_node.csv"),
                dir.join(format!("openb_pod_list_{list}.csv")),
            ));
        }
        let or_sample = |given: &Option<PathBuf>, file: &str| {
            given.as_deref().map_or_else(
                || repo_path(&Path::new("data/openb-sample").join(file)),
                repo_path,
            )
        };
        Ok((
            or_sample(&self.nodes, "nodes.csv"),
            or_sample(&self.pods, "pods.csv"),
        ))
    }

    pub fn world(&self, seed: u64) -> Result<World, Error> {
        let (nodes, pods) = self.files()?;
        let prices = PriceTable::load(&repo_path(&self.prices))?;
        let params = WorldParams {
            seed,
            tenants: self.tenants,
            spot_share: self.spot_share,
            latency_target_share: self.latency_target_share,
            ..WorldParams::default()
        };
        let config = crate::cluster::sim_config_with(&self.vars)?;
        crate::import::observed::world_from_files(&nodes, &pods, &prices, params, config)
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
            utilisation_facts: !self.no_utilisation_facts,
            // The command line draws one bar per sweep (`crate::progress`), not one per run.
            ..SimParams::default()
        }
    }

    pub fn load(&self, seed: u64) -> Result<LoadModel, Error> {
        let (_, model) = load_models(
            std::slice::from_ref(&self.load_model),
            self.usage_dir.as_deref(),
        )?
        .remove(0);
        Ok(LoadModel { seed, ..model })
    }
}

/// The load models `specs` names; the utilisation series' folder is looked for (and its
/// absence refused) only when one of them is a `usage:` model.
pub fn load_models(
    specs: &[String],
    usage_dir: Option<&Path>,
) -> Result<Vec<(String, LoadModel)>, Error> {
    let dir = if specs.iter().any(|s| s.trim().starts_with("usage:")) {
        data::USAGE.dir(usage_dir)?
    } else {
        PathBuf::new()
    };
    Ok(crate::load::load_models(specs, &dir)?)
}
