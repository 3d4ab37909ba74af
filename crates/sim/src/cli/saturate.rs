//! `aco-sim saturate`: the protocol on one or many OpenB variants. One variant: its table, rows,
//! mean-curve CSV and SVG (`saturate-<variant>.*`). Several: one file pair
//! (`saturate-reproduction.{md,json}`) with the reproduction table — FGD and Best-fit against the
//! published means, variant by variant — followed by each variant's full table.
//!
//! Pod lists are looked up in the `--openb-dir` folders in the order given (by default
//! `$ACO_OPENB_DIR`, else `data/openb/` in the checkout, else a refusal saying where to get the
//! trace — `cli::data`; more folders, such as one holding variants fetched from the public
//! trace, after the first). The node list is the variant's folder's
//! `openb_node_list_gpu_node.csv`, else the first folder's that has one: every OpenB variant runs
//! on the same 1,213 GPU nodes. A folder written by `aco-sim import` is a variant `default`
//! on the cluster's own GPU nodes.

use crate::saturate::sampling::NodeSampling;
use std::path::{Path, PathBuf};

use clap::Args;

use super::data;
use super::output::Output;
use super::paths::{out_dir, repo_path};
use crate::cluster::WorldParams;
use crate::import::observed::world_from_files;
use crate::prices::PriceTable;
use crate::progress::Display;
use crate::saturate::policy as sp;
use crate::saturate::report as sr;
use crate::trace::Error;

/// Points within which FGD and Best-fit must meet the published means.
pub const TOLERANCE: f64 = 0.5;
const NODE_LIST: &str = "openb_node_list_gpu_node.csv";

#[derive(Debug, Clone, Args)]
pub struct SaturateArgs {
    /// Variants (pod lists `openb_pod_list_<variant>.csv`), comma-separated, or `all`: every pod
    /// list in the `--openb-dir` folders (default: `default`, or the folders' only pod list,
    /// as in a folder written by `aco-sim import`).
    #[arg(long, value_delimiter = ',')]
    pub openb: Vec<String>,
    /// Folders holding pod lists, searched in order (repeatable). Default: $ACO_OPENB_DIR
    /// (folders separated as in PATH), else data/openb/ in the checkout; when none holds the
    /// trace, aco-sim says where to get it and exits 2.
    #[arg(long = "openb-dir", value_name = "DIR")]
    pub openb_dirs: Vec<PathBuf>,
    /// Price table folder (node_types.csv, components.csv; see data/prices/README.md): the
    /// colony's cost term.
    #[arg(long, default_value = "data/prices", value_name = "DIR")]
    pub prices: PathBuf,
    /// Seeds as a range `42-51` or a list `42,43`.
    #[arg(long, default_value = "42-51")]
    pub seeds: String,
    /// Comma-separated policies (default: fgd, best-fit, dot-product, gpu-packing, gpu-clustering, random, first-fit, colony).
    #[arg(long, value_delimiter = ',')]
    pub policies: Option<Vec<String>>,
    /// The ATC '23 paper's published means per variant and policy, for the reproduction check
    /// (shipped in data/fgd/; variants it does not list are not checked).
    #[arg(
        long,
        default_value = "data/fgd/atc23_allocation_by_policy.csv",
        value_name = "CSV"
    )]
    pub published: PathBuf,
    /// Output folder (default: target/aco-sim/saturate in the checkout; `--out docs/sim`
    /// regenerates the committed results).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Output name: a single variant's files (default `saturate-<variant>`), or with several
    /// variants the reproduction table's (default `saturate-reproduction`).
    #[arg(long)]
    pub name: Option<String>,
    /// Runs (policy × seed) in parallel threads.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// The colony's config, as the Worker's `[vars]` (repeatable), e.g. `--var ETA_FACTORS=fragmentation`.
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub vars: Vec<String>,
    /// Which feasible nodes each pod is scored on: `all` (the ATC '23 protocol), `adaptive`
    /// (kube-scheduler's default sample: 50 − N/125 % of N nodes, at least 100, from a start that
    /// rotates between pods) or a `percentageOfNodesToScore` 1–100.
    #[arg(long = "nodes-to-score", default_value = "all", value_parser = NodeSampling::parse)]
    pub nodes_to_score: NodeSampling,
    /// Exit non-zero when a reproduction check misses.
    #[arg(long)]
    pub require_reproduction: bool,
}

/// One variant to run: its name and where its pod list and node list are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    /// The folder the pod list is in, as given on the command line.
    pub source: PathBuf,
    pub pods: PathBuf,
    pub nodes: PathBuf,
}

/// The variants `wanted` names (or every pod list in `dirs`, for `all`), each with its files.
pub fn resolve(
    wanted: &[String],
    dirs: &[PathBuf],
    shown: &[PathBuf],
) -> Result<Vec<Variant>, Error> {
    let names: Vec<String> = if wanted.iter().any(|w| w == "all") {
        data::pod_lists(dirs)?.into_iter().collect()
    } else {
        wanted.to_vec()
    };
    let fallback_nodes = dirs.iter().map(|d| d.join(NODE_LIST)).find(|p| p.exists());
    names
        .into_iter()
        .map(|name| {
            let file = format!("{}{name}.csv", data::POD_LIST_PREFIX);
            let i = dirs
                .iter()
                .position(|d| d.join(&file).exists())
                .ok_or_else(|| {
                    format!(
                        "no {file} in {}",
                        shown
                            .iter()
                            .map(|d| d.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
            let own = dirs[i].join(NODE_LIST);
            let nodes = if own.exists() {
                Some(own)
            } else {
                fallback_nodes.clone()
            }
            .ok_or_else(|| format!("no {NODE_LIST} in any --openb-dir"))?;
            Ok(Variant {
                pods: dirs[i].join(&file),
                source: shown[i].clone(),
                nodes,
                name,
            })
        })
        .collect()
}

/// Runs the protocol on every variant, with a bar counting the runs.
pub fn run(args: &SaturateArgs, seeds: &[u64], display: Display) -> Result<(), Error> {
    let found = data::OPENB.dirs(&args.openb_dirs)?;
    let dirs: Vec<PathBuf> = found.iter().map(|f| f.dir.clone()).collect();
    let shown: Vec<PathBuf> = found.iter().map(|f| f.shown.clone()).collect();
    let wanted = if args.openb.is_empty() {
        vec![data::default_pod_list(&dirs)?]
    } else {
        args.openb.clone()
    };
    let variants = resolve(&wanted, &dirs, &shown)?;
    let out = out_dir(args.out.as_deref(), "saturate");
    let names = args
        .policies
        .clone()
        .unwrap_or_else(|| sp::ALL.iter().map(|s| s.to_string()).collect());
    for n in &names {
        sp::by_name(n, 0).ok_or_else(|| {
            format!(
                "unknown policy {n}; known: {}, colony-nofrag, colony-raw",
                sp::ALL.join(", ")
            )
        })?;
    }
    let price_table = PriceTable::load(&repo_path(&args.prices))?;
    let config = crate::cluster::sim_config_with(&args.vars)?;
    let published = std::fs::read_to_string(repo_path(&args.published))
        .map_err(|e| format!("--published {}: {e}", args.published.display()))?;
    let progress = display.runs(variants.len() * names.len() * seeds.len(), "saturate");
    let single = variants.len() == 1;
    let (mut all, mut sections, mut per_variant) = (Vec::new(), String::new(), Vec::new());
    for v in &variants {
        let world = world_from_files(
            &v.nodes,
            &v.pods,
            &price_table,
            WorldParams {
                seed: 1,
                ..WorldParams::default()
            },
            config.clone(),
        )?;
        if world.nodes.iter().all(|n| n.gpus == 0) {
            return Err(format!("{}: no GPU node to saturate", v.nodes.display()).into());
        }
        let shapes = crate::saturate::shapes_of(&world);
        let gpus: u32 = world.nodes.iter().map(|n| n.gpus).sum();
        progress.println(format!(
            "{}: {} GPU nodes, {gpus} GPUs, {} trace pods ({}), {} typical shapes, seeds {seeds:?}",
            v.name,
            world.nodes.len(),
            world.pods.len(),
            v.pods.display(),
            shapes.len(),
        ));
        let jobs_list: Vec<(String, u64)> = names
            .iter()
            .flat_map(|n| seeds.iter().map(move |s| (n.clone(), *s)))
            .collect();
        let runs = crate::parallel::map(&jobs_list, args.jobs, |(n, seed)| {
            let mut p = sp::by_name(n, *seed).expect("checked above");
            let r = crate::saturate::run_sampled(
                &world,
                &world.config,
                &shapes,
                *seed,
                p.as_mut(),
                args.nodes_to_score,
            );
            progress.run_done();
            progress.println(format!(
                "{:>15} {} seed {seed}: {:.2}% at 100, {:.2}% at 130, {} failed, {:.0} decisions/s",
                n, v.name, r.at100, r.at130, r.failed, r.decisions_per_s
            ));
            r
        });
        let rows = sr::rows(&runs, &names, &sr::published(&published, &v.name));
        let repro = sr::reproduction(&v.name, &v.source.display().to_string(), &rows, TOLERANCE);
        let mut table = sr::table(&rows);
        let check = sr::check(&repro, TOLERANCE);
        if !check.is_empty() {
            table += &format!(
                "\nReproduction check (FGD and Best-fit within {TOLERANCE} points of the published means): {}.\n",
                check.join("; ")
            );
        }
        println!("{} ({})\n\n{table}", v.name, v.pods.display());
        all.extend(repro);
        if single {
            let name = args
                .name
                .clone()
                .unwrap_or_else(|| format!("saturate-{}", v.name));
            write_variant(
                &out,
                &name,
                &v.name,
                seeds.len(),
                &table,
                &rows,
                &runs,
                &names,
            )?;
        } else {
            sections += &format!("\n### {} (`{}`)\n\n{table}", v.name, v.pods.display());
            per_variant
                .push(serde_json::json!({"variant": v.name, "podList": v.pods, "rows": rows}));
        }
    }
    progress.finish();
    if !single {
        let name = args
            .name
            .clone()
            .unwrap_or_else(|| "saturate-reproduction".into());
        let table = sr::reproduction_table(&all, TOLERANCE);
        println!("{table}");
        let output = Output::new(&out, &name);
        output.tables(
            &format!("{table}{sections}"),
            &serde_json::json!({
                "reproduction": all,
                "variants": per_variant,
            }),
        )?;
        output.announce(&[".md", ".json"]);
    }
    let missed: Vec<String> = all
        .iter()
        .filter(|r| !r.pass)
        .map(|r| format!("{} {}", r.variant, r.policy))
        .collect();
    if args.require_reproduction && !missed.is_empty() {
        return Err(format!("reproduction missed: {}", missed.join(", ")).into());
    }
    Ok(())
}

/// One variant's table, rows, mean curves (CSV) and their plot (SVG) as `<out>/<name>.*`.
#[allow(clippy::too_many_arguments)]
fn write_variant(
    out: &Path,
    name: &str,
    variant: &str,
    seeds: usize,
    table: &str,
    rows: &[sr::SatRow],
    runs: &[crate::saturate::SatRun],
    policies: &[String],
) -> Result<(), Error> {
    let output = Output::new(out, name);
    output.tables(table, rows)?;
    let curves = sr::mean_curves(runs, policies);
    sr::write_csv(&output.path(".csv"), &curves)?;
    sr::write_svg(
        &output.path(".svg"),
        &format!("GPU allocation vs arrived workload — OpenB {variant}, {seeds} seeds"),
        &curves,
    )?;
    output.announce(&[".md", ".json", ".csv", ".svg"]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, file: &str) {
        std::fs::write(dir.join(file), "").unwrap();
    }

    #[test]
    fn variants_are_found_in_folder_order_with_the_first_node_list() {
        let root = std::env::temp_dir().join(format!("aco-sat-cli-{}", std::process::id()));
        let (shipped, extra) = (root.join("shipped"), root.join("extra"));
        for d in [&shipped, &extra] {
            std::fs::create_dir_all(d).unwrap();
        }
        touch(&shipped, NODE_LIST);
        touch(&shipped, "openb_pod_list_default.csv");
        touch(&shipped, "openb_pod_list_gpuspec10.csv");
        touch(&extra, "openb_pod_list_gpuspec33.csv");
        touch(&extra, "openb_pod_list_default.csv");
        touch(&extra, "notes.md");
        let dirs = vec![shipped.clone(), extra.clone()];
        let shown = vec![PathBuf::from("s"), PathBuf::from("x")];
        let all = resolve(&["all".into()], &dirs, &shown).unwrap();
        assert_eq!(
            all.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
            vec!["default", "gpuspec10", "gpuspec33"]
        );
        // The first folder with the pod list wins; the node list falls back to the first folder's.
        assert_eq!(all[0].pods, shipped.join("openb_pod_list_default.csv"));
        assert_eq!(all[0].source, PathBuf::from("s"));
        assert_eq!(all[2].pods, extra.join("openb_pod_list_gpuspec33.csv"));
        assert_eq!(all[2].source, PathBuf::from("x"));
        assert_eq!(all[2].nodes, shipped.join(NODE_LIST));
        // A folder's own node list is preferred.
        touch(&extra, NODE_LIST);
        let one = resolve(&["gpuspec33".into()], &dirs, &shown).unwrap();
        assert_eq!(one[0].nodes, extra.join(NODE_LIST));
        let e = resolve(&["cpu250".into()], &dirs, &shown)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("openb_pod_list_cpu250.csv") && e.contains("s, x"),
            "{e}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
