//! `aco-sim replay`: the trace driven through a running Worker (the demo) — facts, filter,
//! prioritize, placements — with a live summary, an optional HTML report, a comparison with the
//! native colony, and shadow mode (`--shadow <policy>`: a baseline places, the Worker shadows).

use std::path::PathBuf;

use clap::Args;

use super::input::Input;
use crate::cluster::World;
use crate::engine::{run, run_observed, Metrics, SimParams, TenantTrails};
use crate::explain;
use crate::html_report;
use crate::load::LoadModel;
use crate::native::NativeScheduler;
use crate::policy;
use crate::predictor::PredictorKind;
use crate::recording::Recording;
use crate::replay::HttpScheduler;
use crate::report;
use crate::shadow::ShadowReplay;
use crate::trace::Error;

#[derive(Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub input: Input,
    /// The Worker's base URL (`wrangler dev` serves http://127.0.0.1:8787).
    #[arg(long, default_value = "http://127.0.0.1:8787")]
    pub url: String,
    /// The Worker's ADMIN_TOKEN (no default: a deployment's is a secret; scripts/demo's is random).
    #[arg(long, env = "ACO_ADMIN_TOKEN", hide_env_values = true)]
    pub token: String,
    /// Print a live summary every N pods.
    #[arg(long, default_value_t = 25)]
    pub every: usize,
    /// Also run the native colony and compare placements.
    #[arg(long)]
    pub compare: bool,
    /// Write an HTML report (τ per node over time, cost per pod, placements) to this path.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// For the report, sample the pheromone tables after every N placed pods (default:
    /// about 60 samples over the run).
    #[arg(long, requires = "report")]
    pub report_every: Option<usize>,
    /// Shadow mode: this baseline policy (e.g. first-fit, best-fit) places the pods; each
    /// placement goes to `POST /v1/shadow`, and the Worker's counterfactual summary is
    /// printed next to the simulator's own (they must agree).
    #[arg(long, conflicts_with_all = ["compare", "report"])]
    pub shadow: Option<String>,
    /// Print the explanation (η factors, τ, score, filter rejections) of the first N
    /// scored pods, fetched before their placement is confirmed.
    #[arg(long, default_value_t = 0)]
    pub explain: usize,
}

pub fn main(args: ReplayArgs) -> Result<(), Error> {
    let ReplayArgs {
        input,
        url,
        token,
        every,
        compare,
        report: report_path,
        report_every,
        shadow,
        explain: explain_first,
    } = args;
    let world = input.world(input.seed)?;
    let load = input.load(input.seed)?;
    let mut params = input.sim(input.seed);
    params.pheromone_samples = 1;
    if let Some(baseline) = shadow {
        return shadow_replay(&world, &load, &params, &url, &token, &baseline, input.seed);
    }
    let mut http = HttpScheduler::new(&url, &token, &world)?;
    http.explain_first = explain_first;
    let pods = params
        .max_pods
        .unwrap_or(world.pods.len())
        .min(world.pods.len());
    println!(
        "replaying {pods} pods on {} nodes against {url} (tenants: {})",
        world.nodes.len(),
        world.tenants().join(", ")
    );
    let mut print = |w: &World, m: &Metrics, ph: &TenantTrails| {
        println!(
            "[{:>4}/{}] placed {:>4}  unplaced {:>3}  cost so far ${:>9.2}  LS placed {}",
            m.decisions, m.pods, m.placed, m.unplaced, m.cost_busy_usd, m.ls_placed
        );
        for (tenant, rows) in ph {
            let top: Vec<String> = rows
                .iter()
                .take(3)
                .map(|(n, t)| {
                    let node = w.nodes.iter().find(|x| &x.name == n);
                    format!(
                        "{n} ({} ${}/h) τ={t:.2}",
                        node.and_then(|x| x.model.clone())
                            .unwrap_or_else(|| "cpu".into()),
                        node.map_or("?".into(), |x| format!("{:.2}", x.price))
                    )
                })
                .collect();
            println!(
                "         {tenant}: {}",
                if top.is_empty() {
                    "(no trail yet)".to_string()
                } else {
                    top.join(", ")
                }
            );
        }
    };
    let r = match &report_path {
        Some(path) => {
            // About 60 pheromone samples whatever the run's length: enough for a line, few requests.
            let sample_every = report_every.unwrap_or(pods.div_ceil(60)).max(1);
            let mut recording = Recording::new(&mut http, &world, sample_every);
            let r = run_observed(&world, &load, &params, &mut recording, every, &mut print)?;
            let title = format!("{pods} pods on {} nodes, tenants {}, seed {}, replayed against the Worker at {url}", world.nodes.len(), world.tenants().join(", "), input.seed);
            let record = recording.finish(&world, &r, title)?;
            html_report::write(path, &record)
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
            println!("wrote the HTML report to {}", path.display());
            r
        }
        None => run_observed(&world, &load, &params, &mut http, every, &mut print)?,
    };
    println!(
        "{}",
        report::markdown_table(std::slice::from_ref(&r.metrics))
    );
    println!(
        "{} HTTP requests, {:.1} decisions/s over HTTP",
        http.requests, r.metrics.decisions_per_s
    );
    for e in &http.explanations {
        println!();
        print!("{}", explain::render(e));
    }
    if compare {
        let mut native = NativeScheduler::new(
            policy::by_name("colony", input.seed).unwrap(),
            world.config.clone(),
            PredictorKind::Ema(world.config.load.ema_alpha),
        );
        let n = run(&world, &load, &params, &mut native)?;
        let diff = r
            .placements
            .iter()
            .zip(&n.placements)
            .filter(|(a, b)| a != b)
            .count();
        println!(
            "native colony vs replay: {} of {} placements differ",
            diff,
            r.placements.len()
        );
        if diff > 0 {
            return Err("replay and native placements differ".into());
        }
    }
    Ok(())
}

/// `replay --shadow`: the baseline places, the Worker shadows, both summaries printed.
fn shadow_replay(
    world: &World,
    load: &LoadModel,
    params: &SimParams,
    url: &str,
    token: &str,
    baseline: &str,
    seed: u64,
) -> Result<(), Error> {
    let policy = policy::by_name(baseline, seed).ok_or_else(|| {
        format!(
            "unknown policy {baseline:?} (one of {})",
            policy::ALL.join(", ")
        )
    })?;
    let native = NativeScheduler::new(
        policy,
        world.config.clone(),
        PredictorKind::Ema(world.config.load.ema_alpha),
    );
    let http = HttpScheduler::new(url, token, world)?;
    let mut replay = ShadowReplay::new(native, http, world.config.clone());
    let pods = params
        .max_pods
        .unwrap_or(world.pods.len())
        .min(world.pods.len());
    println!("shadow mode: {baseline} places {pods} pods on {} nodes, the Worker at {url} shadows (tenants: {})", world.nodes.len(), world.tenants().join(", "));
    let r = run(world, load, params, &mut replay)?;
    println!(
        "{}",
        report::markdown_table(std::slice::from_ref(&r.metrics))
    );
    let remote = replay.worker_summaries(world)?;
    println!("| tenant | source | pods | agree | Σ chosen $/h | Σ colony $/h | saving $/h | saving | LC on hot (chosen/colony) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---|");
    let mut worker_total = aco_core::shadow::ShadowSummary::default();
    for (tenant, w) in &remote {
        let n = replay.native.get(tenant).cloned().unwrap_or_default();
        println!(
            "| {tenant} | Worker | {} | {} | {:.4} | {:.4} | {:.4} | {:.1}% | {}/{} |",
            w.pods,
            w.agreements,
            w.chosen_cost_per_hour,
            w.colony_cost_per_hour,
            w.saving_per_hour,
            100.0 * w.saving_fraction,
            w.latency_critical_on_hot_nodes.chosen,
            w.latency_critical_on_hot_nodes.colony
        );
        println!(
            "| {tenant} | simulator | {} | {} | {:.4} | {:.4} | {:.4} | {:.1}% | {}/{} |",
            n.pods,
            n.agreements,
            n.chosen_cost_per_hour,
            n.colony_cost_per_hour,
            n.saving_per_hour(),
            100.0 * n.saving_fraction(),
            n.latency_critical_on_hot_chosen,
            n.latency_critical_on_hot_colony
        );
        worker_total.pods += w.pods;
        worker_total.agreements += w.agreements;
        worker_total.chosen_cost_per_hour += w.chosen_cost_per_hour;
        worker_total.colony_cost_per_hour += w.colony_cost_per_hour;
    }
    let native = replay.native_total();
    println!(
        "total: Worker saving ${:.4}/h of ${:.4}/h ({:.1}%), simulator ${:.4}/h of ${:.4}/h ({:.1}%); agreement {:.1}% / {:.1}%",
        worker_total.saving_per_hour(), worker_total.chosen_cost_per_hour, 100.0 * worker_total.saving_fraction(),
        native.saving_per_hour(), native.chosen_cost_per_hour, 100.0 * native.saving_fraction(),
        100.0 * worker_total.agreement_rate(), 100.0 * native.agreement_rate(),
    );
    let c = &replay.cost;
    println!(
        "shadow requests: {} (1 pod each), binding ops mean {:.2} max {}, round trip mean {:.1} ms",
        c.requests,
        c.binding_ops as f64 / c.requests.max(1) as f64,
        c.max_binding_ops,
        1000.0 * c.wall_s / c.requests.max(1) as f64
    );
    let agree = (worker_total.pods, worker_total.agreements) == (native.pods, native.agreements)
        && (worker_total.chosen_cost_per_hour - native.chosen_cost_per_hour).abs() < 1e-6
        && (worker_total.colony_cost_per_hour - native.colony_cost_per_hour).abs() < 1e-6;
    if !agree {
        return Err("the Worker's shadow summary and the simulator's differ".into());
    }
    println!("the Worker's shadow summary equals the simulator's");
    Ok(())
}
