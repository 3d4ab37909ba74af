//! `aco-sim import`: a cluster's nodes and pods (`kubectl get nodes,pods -o json`) as a trace
//! folder that `run --openb-dir` and `saturate --openb-dir` replay (`crate::import`).

use std::path::PathBuf;

use clap::Args;

use super::paths::repo_path;
use crate::cluster::{sim_config_with, WorldParams};
use crate::import::{kubectl, Imported};
use crate::prices::PriceTable;
use crate::trace::Error;

#[derive(Args)]
pub struct ImportArgs {
    /// A `kubectl get nodes,pods -A -o json` dump (a v1.List), or a NodeList/PodList file
    /// (repeatable: nodes and pods may come from separate files); `-` reads stdin.
    #[arg(long, required = true, value_name = "FILE")]
    pub kubectl: Vec<PathBuf>,
    /// Folder to write the trace into (made if missing): openb_node_list_all_node.csv,
    /// openb_node_list_gpu_node.csv and openb_pod_list_<LIST>.csv.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Name of the pod list (`openb_pod_list_<LIST>.csv`); `run`/`saturate --openb-dir DIR`
    /// replay a folder's only list without --openb.
    #[arg(long, default_value = "cluster", value_name = "LIST")]
    pub list: String,
    /// Price table folder for nodes without an `aco/cost-per-hour` label (node_types.csv,
    /// components.csv; see data/prices/README.md).
    #[arg(long, default_value = "data/prices", value_name = "DIR")]
    pub prices: PathBuf,
    /// The Worker's config the labels are read with, as its `[vars]` (repeatable), e.g.
    /// `--var GPU_TYPE_LABELS=nvidia.com/gpu.product` or `--var COST_LABEL=price`.
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub vars: Vec<String>,
}

pub fn main(args: ImportArgs) -> Result<(), Error> {
    let mut objects = Vec::new();
    for file in &args.kubectl {
        let (text, source) = if file.as_os_str() == "-" {
            (
                std::io::read_to_string(std::io::stdin())?,
                "stdin".to_string(),
            )
        } else {
            (
                std::fs::read_to_string(file)
                    .map_err(|e| format!("--kubectl {}: {e}", file.display()))?,
                file.display().to_string(),
            )
        };
        objects.extend(kubectl::objects(&text, &source)?);
    }
    let prices = PriceTable::load(&repo_path(&args.prices))?;
    let config = sim_config_with(&args.vars)?;
    let imported = Imported::from_objects(
        &objects,
        &prices,
        WorldParams::default().spot_factor,
        &config,
    )?;
    if imported.nodes.is_empty() {
        return Err(
            "the dump holds no schedulable node (`kubectl get nodes,pods -A -o json`)".into(),
        );
    }
    let files = imported.write(&args.out, &args.list)?;
    let s = &imported.summary;
    eprintln!(
        "{} nodes ({} with GPUs; priced by label {}, by the table {}), {} left out (cordoned or tainted){}",
        s.nodes,
        s.gpu_nodes,
        s.priced_by_label,
        s.priced_by_table,
        s.nodes_left_out.len(),
        if s.nodes_left_out.is_empty() {
            String::new()
        } else {
            format!(": {}", s.nodes_left_out.join(", "))
        }
    );
    eprintln!(
        "{} pods over {} s ({} running, {} finished, {} pending); {} DaemonSet/static pods taken off their nodes",
        s.pods, s.span_s, s.pods_running, s.pods_finished, s.pods_pending, s.per_node_pods
    );
    for f in &files {
        eprintln!("wrote {}", f.display());
    }
    eprintln!(
        "replay: aco-sim run --openb-dir {0}   (or: aco-sim saturate --openb-dir {0})",
        args.out.display()
    );
    Ok(())
}
