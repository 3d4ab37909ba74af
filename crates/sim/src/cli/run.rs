//! `aco-sim run`: policies over a trace → `<name>.md`/`.json` (one row per policy), the LS
//! violations and placements CSVs, and the SVG plots.

use std::collections::HashMap;
use std::path::PathBuf;

use clap::Args;

use super::input::Input;
use super::output::Output;
use super::paths::out_dir;
use crate::cluster::{SimNode, SimPod, World};
use crate::engine::{Metrics, RunResult};
use crate::native::NativeScheduler;
use crate::policy;
use crate::predictor::PredictorKind;
use crate::progress::Display;
use crate::report;
use crate::trace::Error;

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub input: Input,
    /// Comma-separated policies (default: all).
    #[arg(long, value_delimiter = ',')]
    pub policies: Option<Vec<String>>,
    /// Output folder for <name>.json, <name>.md, the CSVs and plots (default:
    /// target/aco-sim/run in the checkout; `--out docs/sim` regenerates the committed results).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run name (file prefix).
    #[arg(long, default_value = "sample")]
    pub name: String,
    /// Policies run in parallel threads.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
}

pub fn main(args: RunArgs, display: Display) -> Result<(), Error> {
    let RunArgs {
        input,
        policies,
        out,
        name,
        jobs,
    } = args;
    let out = out_dir(out.as_deref(), "run");
    let world = input.world(input.seed)?;
    let load = input.load(input.seed)?;
    let params = input.sim(input.seed);
    let names = policies.unwrap_or_else(|| policy::ALL.iter().map(|s| s.to_string()).collect());
    eprintln!(
        "{} nodes, {} pods, seed {}",
        world.nodes.len(),
        world.pods.len(),
        input.seed
    );
    for n in &names {
        policy::by_name(n, input.seed)
            .ok_or_else(|| format!("unknown policy {n}; known: {}", policy::ALL.join(", ")))?;
    }
    let progress = display.pods(names.len(), "run");
    let results = crate::parallel::map(&names, jobs, |n| {
        let mut s = NativeScheduler::new(
            policy::by_name(n, input.seed).unwrap(),
            world.config.clone(),
            PredictorKind::Ema(world.config.load.ema_alpha),
        );
        let r = progress
            .run(&world, &load, &params, &mut s)
            .map_err(|e| e.to_string());
        if let Ok(r) = &r {
            progress.println(format!(
                "{:>13}: ${:.0}, unplaced {}, LS QoS {:.2}%, safe {:.2}%, {:.0} decisions/s",
                n,
                r.metrics.cost_busy_usd,
                r.metrics.unplaced,
                100.0 * r.metrics.ls_compliance,
                100.0 * r.metrics.safe_routing_rate,
                r.metrics.decisions_per_s
            ));
        }
        r
    });
    progress.finish();
    let mut runs: Vec<RunResult> = Vec::new();
    for r in results {
        runs.push(r?);
    }
    let metrics: Vec<Metrics> = runs.iter().map(|r| r.metrics.clone()).collect();
    let table = report::markdown_table(&metrics);
    println!("{table}");
    let output = Output::new(&out, &name);
    output.tables(&table, &metrics)?;
    output.write("-ls-violations.csv", ls_violations_csv(&world, &runs))?;
    output.write("-placements.csv", placements_csv(&world, &runs))?;
    let written = report::plots(&out, &name, &runs)?;
    eprintln!(
        "wrote {}/{name}.md, {name}.json, {}",
        out.display(),
        written.join(", ")
    );
    Ok(())
}

/// Every LS pod's QoS violation, with the node it ran on.
fn ls_violations_csv(world: &World, runs: &[RunResult]) -> String {
    let mut csv = String::from("policy,pod,node,gpu_model,gpus,vcpu,price_per_h,alone\n");
    for r in runs {
        for (pod, node, alone) in &r.ls_violations {
            let n = world.nodes.iter().find(|x| &x.name == node).unwrap();
            csv += &format!(
                "{},{pod},{node},{},{},{},{:.4},{alone}\n",
                r.metrics.policy,
                n.model.clone().unwrap_or_default(),
                n.gpus,
                n.cpu_milli / 1000,
                n.price
            );
        }
    }
    csv
}

/// Where every pod landed, with what decides its cost (for analysis beside the tables).
fn placements_csv(world: &World, runs: &[RunResult]) -> String {
    let by_name: HashMap<&str, &SimNode> =
        world.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let pods: HashMap<&str, &SimPod> = world
        .pods
        .iter()
        .map(|p| (p.trace.name.as_str(), p))
        .collect();
    let mut csv = String::from(
        "policy,pod,qos,cpu_milli,gpus,gpu_milli,arrival_s,deletion_s,node,node_gpu_model,node_gpus,node_price_per_h,node_spot\n",
    );
    for r in runs {
        for (pod, node) in &r.placements {
            let p = pods[pod.as_str()];
            let n = node.as_deref().and_then(|n| by_name.get(n));
            csv += &format!(
                "{},{pod},{},{},{},{},{},{},{},{},{},{},{}\n",
                r.metrics.policy,
                p.trace.qos,
                p.trace.cpu_milli,
                p.trace.num_gpu,
                p.trace.gpu_milli,
                p.trace.creation_s,
                p.trace.deletion_s.map_or(String::new(), |d| d.to_string()),
                node.as_deref().unwrap_or(""),
                n.and_then(|n| n.model.clone()).unwrap_or_default(),
                n.map_or(0, |n| n.gpus),
                n.map_or(String::new(), |n| format!("{:.4}", n.price)),
                n.is_some_and(|n| n.spot),
            );
        }
    }
    csv
}
