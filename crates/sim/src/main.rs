use std::path::{Path, PathBuf};

use aco_sim::cluster::{World, WorldParams};
use aco_sim::engine::{
    run, run_observed, Metrics, NativeScheduler, PredictorKind, RunResult, SimParams, TenantTrails,
};
use aco_sim::explain;
use aco_sim::html_report;
use aco_sim::load::LoadModel;
use aco_sim::policy;
use aco_sim::prices::PriceTable;
use aco_sim::recording::Recording;
use aco_sim::replay::HttpScheduler;
use aco_sim::report;
use aco_sim::shadow::ShadowReplay;
use aco_sim::trace::{self, Error};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "aco-sim",
    about = "OpenB trace simulator, scheduling benchmark and Worker replay for aco-edge-extender"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run policies over a trace and write Markdown/JSON tables and SVG plots.
    Run {
        #[command(flatten)]
        input: Input,
        /// Comma-separated policies (default: all).
        #[arg(long, value_delimiter = ',')]
        policies: Option<Vec<String>>,
        /// Output directory for <name>.json, <name>.md and plots.
        #[arg(long, default_value = "docs/sim")]
        out: PathBuf,
        /// Run name (file prefix).
        #[arg(long, default_value = "sample")]
        name: String,
        /// Policies run in parallel threads.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
    },
    /// Where the colony's cost and QoS come from: each factor of η left out, the trail on under
    /// each kind of outcome report, beside η alone and the baselines, over several seeds.
    Ablate {
        #[command(flatten)]
        input: Input,
        /// Seeds as a range `1-3` or a list `1,2`.
        #[arg(long, default_value = "1-3")]
        seeds: String,
        #[arg(long, default_value = "docs/sim")]
        out: PathBuf,
        #[arg(long, default_value = "ablate")]
        name: String,
        /// Runs in parallel threads.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Only the variants whose label contains one of these (comma-separated); first-fit is
        /// always kept (the comparison's baseline).
        #[arg(long, value_delimiter = ',')]
        only: Option<Vec<String>>,
    },
    /// Predictor ablation for the colony: safe-node routing over several seeds.
    Ablation {
        #[command(flatten)]
        input: Input,
        #[arg(long, default_value_t = 10)]
        seeds: u64,
        #[arg(long, default_value = "docs/sim")]
        out: PathBuf,
        #[arg(long, default_value = "ablation")]
        name: String,
        /// Seeds run in parallel threads.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
    },
    /// Predictor ablation on real dynamics: per predictor, forecast error at the reporting
    /// horizon and the colony's safe-node routing, on the synthetic load model and on load shaped
    /// by the real series of ../shared/data/usage (see `aco_sim::usage`), in one run.
    Predictors {
        #[command(flatten)]
        input: Input,
        /// `synthetic` and/or `usage:<alibaba|alibaba-300s|google|azure>`.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "synthetic,usage:alibaba,usage:alibaba-300s,usage:google,usage:azure"
        )]
        load_models: Vec<String>,
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// Single-pod probe nodes per seed for the forecast error, and their span in hours.
        #[arg(long, default_value_t = 64)]
        probes: u64,
        #[arg(long, default_value_t = 48)]
        probe_hours: u64,
        #[arg(long, default_value = "docs/sim")]
        out: PathBuf,
        #[arg(long, default_value = "predictors-real")]
        name: String,
        #[arg(long, default_value_t = 2)]
        jobs: usize,
    },
    /// The ATC '23 saturation protocol: GPU nodes only, no departures, shuffled + resampled pods
    /// up to 130% of GPU capacity; GPU allocation ratio vs arrived workload per policy.
    /// One or many variants (`--openb gpuspec10,cpu050` or `all`, `--openb-dir` repeatable);
    /// with several, also one reproduction table.
    Saturate(aco_sim::saturate::cli::SaturateArgs),
    /// Drive a running Worker with the trace (the demo): facts, filter, prioritize, placements.
    Replay {
        #[command(flatten)]
        input: Input,
        #[arg(long, default_value = "http://127.0.0.1:8787")]
        url: String,
        #[arg(long, default_value = "dev-admin-token")]
        token: String,
        /// Print a live summary every N pods.
        #[arg(long, default_value_t = 25)]
        every: usize,
        /// Also run the native colony and compare placements.
        #[arg(long)]
        compare: bool,
        /// Write an HTML report (τ per node over time, cost per pod, placements) to this path.
        #[arg(long)]
        report: Option<PathBuf>,
        /// For the report, sample the pheromone tables after every N placed pods (default:
        /// about 60 samples over the run).
        #[arg(long, requires = "report")]
        report_every: Option<usize>,
        /// Shadow mode: this baseline policy (e.g. first-fit, best-fit) places the pods; each
        /// placement goes to `POST /v1/shadow`, and the Worker's counterfactual summary is
        /// printed next to the simulator's own (they must agree).
        #[arg(long, conflicts_with_all = ["compare", "report"])]
        shadow: Option<String>,
        /// Print the explanation (η factors, τ, score, filter rejections) of the first N
        /// scored pods, fetched before their placement is confirmed.
        #[arg(long, default_value_t = 0)]
        explain: usize,
    },
    /// Print a remembered decision's explanation from a running Worker
    /// (`GET [/c/<cluster>]/v1/tenants/{tenant}/decisions/{pod}`).
    Explain {
        #[arg(long, default_value = "http://127.0.0.1:8787")]
        url: String,
        #[arg(long, default_value = "dev-admin-token")]
        token: String,
        #[arg(long)]
        cluster: Option<String>,
        #[arg(long)]
        tenant: String,
        /// The pod's UID (or namespace/name for a pod without one).
        #[arg(long)]
        pod: String,
        /// Print the JSON reply instead of the table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Clone)]
struct Input {
    /// Node CSV (default: the shipped sample).
    #[arg(long)]
    nodes: Option<PathBuf>,
    /// Pod CSV (default: the shipped sample).
    #[arg(long)]
    pods: Option<PathBuf>,
    /// Use ../shared/data/openb with this pod list: default, cpu050, gpushare40, gpuspec10, multigpu20.
    #[arg(long)]
    openb: Option<String>,
    #[arg(long, default_value = "../shared/data/openb")]
    openb_dir: PathBuf,
    #[arg(long, default_value = "data/prices")]
    prices: PathBuf,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Only the first N arrivals.
    #[arg(long)]
    max_pods: Option<usize>,
    #[arg(long, default_value_t = 3)]
    tenants: usize,
    #[arg(long, default_value_t = 0.2)]
    spot_share: f64,
    #[arg(long, default_value_t = 60)]
    report_interval_s: u64,
    #[arg(long, default_value_t = 0.8)]
    sla_threshold: f64,
    #[arg(long, default_value_t = 600)]
    safe_horizon_s: u64,
    /// The extender's config, as the Worker's `[vars]` (repeatable): `--var ALPHA=0` ignores the
    /// trail (η alone), `--var ETA_FACTORS=cost,headroom` keeps only those factors of η.
    #[arg(long = "var", value_name = "KEY=VALUE")]
    vars: Vec<String>,
    /// `synthetic` (default) or `usage:<alibaba|alibaba-300s|google|azure>`: the load's shape
    /// from a real utilisation series in `--usage-dir` (see `aco_sim::usage`).
    #[arg(long, default_value = "synthetic")]
    load_model: String,
    #[arg(long, default_value = "../shared/data/usage")]
    usage_dir: PathBuf,
    /// What the simulated reporter says after a placement: `none` (placements only: the trail
    /// deposits η), `qos` (each pod's QoS outcome) or `qos-cost` (with its observed cost).
    #[arg(long, default_value = "qos-cost")]
    outcomes: aco_sim::engine::OutcomeReports,
    /// Spot nodes are never reclaimed (see `aco_sim::spot` for the default model).
    #[arg(long)]
    no_spot_reclamation: bool,
    /// Node performance variation (`aco_sim::performance`): `none`, `shared` (one slowdown per
    /// node) or `per-class` (one per node and tenant's workload class).
    #[arg(long, default_value = "none")]
    performance: aco_sim::performance::PerformanceModel,
    /// η's slowdown term from a per-node estimate learned from every tenant's outcomes (the
    /// comparison of issue 16 item 3; the colony's own trail learns per tenant).
    #[arg(long)]
    cluster_slowdowns: bool,
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
        PredictorKind::Ema(world.config.ema_alpha),
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
        let f = |k: &str| w[k].as_f64().unwrap_or(f64::NAN);
        let u = |k: &str| w[k].as_u64().unwrap_or(0);
        let hot = &w["latencyCriticalOnHotNodes"];
        println!(
            "| {tenant} | Worker | {} | {} | {:.4} | {:.4} | {:.4} | {:.1}% | {}/{} |",
            u("pods"),
            u("agreements"),
            f("chosenCostPerHour"),
            f("colonyCostPerHour"),
            f("savingPerHour"),
            100.0 * f("savingFraction"),
            hot["chosen"],
            hot["colony"]
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
        worker_total.pods += u("pods");
        worker_total.agreements += u("agreements");
        worker_total.chosen_cost_per_hour += f("chosenCostPerHour");
        worker_total.colony_cost_per_hour += f("colonyCostPerHour");
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

fn repo_path(p: &Path) -> PathBuf {
    if p.exists() || p.is_absolute() {
        return p.to_path_buf();
    }
    let alt = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p);
    if alt.exists() {
        alt
    } else {
        p.to_path_buf()
    }
}

impl Input {
    fn world(&self, seed: u64) -> Result<World, Error> {
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
        world.config = aco_sim::cluster::sim_config_with(&self.vars)?;
        Ok(world)
    }

    fn sim(&self, seed: u64) -> SimParams {
        SimParams {
            seed,
            report_interval_s: self.report_interval_s,
            sla_threshold: self.sla_threshold,
            safe_horizon_s: self.safe_horizon_s,
            max_pods: self.max_pods,
            outcomes: self.outcomes,
            spot_reclamation: !self.no_spot_reclamation,
            performance: self.performance,
            progress: true,
            ..SimParams::default()
        }
    }

    fn load(&self, seed: u64) -> Result<LoadModel, Error> {
        let (_, model) = aco_sim::load::load_models(
            std::slice::from_ref(&self.load_model),
            &repo_path(&self.usage_dir),
        )?
        .remove(0);
        Ok(LoadModel { seed, ..model })
    }
}

/// Seeds as a range `42-51` or a list `42,43`.
fn parse_seeds(seeds: &str) -> Result<Vec<u64>, Error> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|e| format!("--seeds {seeds:?}: {e}"))
    };
    Ok(match seeds.split_once('-') {
        Some((a, b)) => (number(a)?..=number(b)?).collect(),
        None => seeds.split(',').map(number).collect::<Result<_, _>>()?,
    })
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("aco-sim: {e}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<(), Error> {
    match Cli::parse().cmd {
        Cmd::Run {
            input,
            policies,
            out,
            name,
            jobs,
        } => {
            let world = input.world(input.seed)?;
            let load = input.load(input.seed)?;
            let params = input.sim(input.seed);
            let names =
                policies.unwrap_or_else(|| policy::ALL.iter().map(|s| s.to_string()).collect());
            eprintln!(
                "{} nodes, {} pods, seed {}",
                world.nodes.len(),
                world.pods.len(),
                input.seed
            );
            for n in &names {
                policy::by_name(n, input.seed).ok_or_else(|| {
                    format!("unknown policy {n}; known: {}", policy::ALL.join(", "))
                })?;
            }
            let results = aco_sim::parallel::map(&names, jobs, |n| {
                let mut s = NativeScheduler::new(
                    policy::by_name(n, input.seed).unwrap(),
                    world.config.clone(),
                    PredictorKind::Ema(world.config.ema_alpha),
                );
                if input.cluster_slowdowns {
                    s = s.with_cluster_slowdowns();
                }
                let r = run(&world, &load, &params, &mut s).map_err(|e| e.to_string());
                if let Ok(r) = &r {
                    eprintln!("{:>13}: ${:.0}, unplaced {}, LS QoS {:.2}%, safe {:.2}%, {:.0} decisions/s", n, r.metrics.cost_busy_usd, r.metrics.unplaced, 100.0 * r.metrics.ls_compliance, 100.0 * r.metrics.safe_routing_rate, r.metrics.decisions_per_s);
                }
                r
            });
            let mut runs: Vec<RunResult> = Vec::new();
            for r in results {
                runs.push(r?);
            }
            let metrics: Vec<Metrics> = runs.iter().map(|r| r.metrics.clone()).collect();
            let table = report::markdown_table(&metrics);
            println!("{table}");
            std::fs::create_dir_all(&out)?;
            std::fs::write(out.join(format!("{name}.md")), &table)?;
            std::fs::write(
                out.join(format!("{name}.json")),
                serde_json::to_string_pretty(&metrics)?,
            )?;
            let mut csv = String::from("policy,pod,node,gpu_model,gpus,vcpu,price_per_h,alone\n");
            for r in &runs {
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
            std::fs::write(out.join(format!("{name}-ls-violations.csv")), csv)?;
            // Where every pod landed, with what decides its cost (for analysis beside the tables).
            let by_name: std::collections::HashMap<&str, &aco_sim::cluster::SimNode> =
                world.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
            let pods: std::collections::HashMap<&str, &aco_sim::cluster::SimPod> = world
                .pods
                .iter()
                .map(|p| (p.trace.name.as_str(), p))
                .collect();
            let mut csv = String::from(
                "policy,pod,qos,cpu_milli,gpus,gpu_milli,arrival_s,deletion_s,node,node_gpu_model,node_gpus,node_price_per_h,node_spot\n",
            );
            for r in &runs {
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
            std::fs::write(out.join(format!("{name}-placements.csv")), csv)?;
            let written = report::plots(&out, &name, &runs)?;
            eprintln!(
                "wrote {}/{name}.md, {name}.json, {}",
                out.display(),
                written.join(", ")
            );
        }
        Cmd::Ablate {
            input,
            seeds,
            out,
            name,
            jobs,
            only,
        } => {
            use aco_sim::eta_ablation::{
                ablation_table, run_ablation, standard_variants, AblationPlan,
            };
            let mut variants = standard_variants();
            if let Some(only) = &only {
                variants.retain(|v| {
                    v.label == "first-fit" || only.iter().any(|o| v.label.contains(o.as_str()))
                });
            }
            let plan = AblationPlan {
                variants,
                seeds: parse_seeds(&seeds)?,
                jobs,
                base_vars: input.vars.clone(),
                world_of: &|seed| input.world(seed),
                sim_of: &|seed| input.sim(seed),
                load_of: &|seed| input.load(seed),
            };
            let rows = run_ablation(&plan)?;
            let table = ablation_table(&rows);
            println!("{table}");
            std::fs::create_dir_all(&out)?;
            std::fs::write(out.join(format!("{name}.md")), &table)?;
            std::fs::write(
                out.join(format!("{name}.json")),
                serde_json::to_string_pretty(&rows)?,
            )?;
        }
        Cmd::Ablation {
            input,
            seeds,
            out,
            name,
            jobs,
        } => {
            let mut rows = Vec::new();
            for kind in PredictorKind::ablation_set() {
                let seed_list: Vec<u64> = (1..=seeds).collect();
                let results = aco_sim::parallel::map(&seed_list, jobs, |&seed| {
                    (|| -> Result<Metrics, Error> {
                        let world = input.world(seed)?;
                        let mut params = input.sim(seed);
                        params.progress = false;
                        params.pheromone_samples = 1;
                        let mut s = NativeScheduler::new(
                            policy::by_name("colony", seed).unwrap(),
                            world.config.clone(),
                            kind,
                        );
                        Ok(run(&world, &input.load(seed)?, &params, &mut s)?.metrics)
                    })()
                    .map_err(|e| e.to_string())
                });
                let (mut safe, mut qos, mut cost) = (Vec::new(), Vec::new(), Vec::new());
                for r in results {
                    let m = r?;
                    safe.push(m.safe_routing_rate);
                    qos.push(m.ls_compliance);
                    cost.push(m.cost_busy_usd);
                }
                let row = report::AblationRow::from_seeds(kind.label(), &safe, &qos, &cost);
                eprintln!(
                    "{:>24}: safe {:.2}% ± {:.2}",
                    row.predictor,
                    100.0 * row.safe_routing_mean,
                    100.0 * row.safe_routing_sd
                );
                rows.push(row);
            }
            let table = report::ablation_table(&rows);
            println!("{table}");
            std::fs::create_dir_all(&out)?;
            std::fs::write(out.join(format!("{name}.md")), &table)?;
            std::fs::write(
                out.join(format!("{name}.json")),
                serde_json::to_string_pretty(&rows)?,
            )?;
        }
        Cmd::Predictors {
            input,
            load_models,
            seeds,
            probes,
            probe_hours,
            out,
            name,
            jobs,
        } => {
            let models = aco_sim::load::load_models(&load_models, &repo_path(&input.usage_dir))?;
            let plan = aco_sim::predictor::DynamicsPlan {
                models,
                seeds,
                jobs,
                probes,
                probe_span_s: probe_hours * 3600,
                world_of: &|seed| input.world(seed),
                sim_of: &|seed| input.sim(seed),
            };
            let rows = aco_sim::predictor::ablation_on_dynamics(&plan)?;
            let table = aco_sim::predictor::dynamics_table(&rows);
            println!("{table}");
            std::fs::create_dir_all(&out)?;
            std::fs::write(out.join(format!("{name}.md")), &table)?;
            std::fs::write(
                out.join(format!("{name}.json")),
                serde_json::to_string_pretty(&rows)?,
            )?;
        }
        Cmd::Saturate(args) => {
            aco_sim::saturate::cli::run(&args, &parse_seeds(&args.seeds)?, repo_path)?;
        }
        Cmd::Explain {
            url,
            token,
            cluster,
            tenant,
            pod,
            json,
        } => {
            let client = reqwest::blocking::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()?;
            let e = explain::fetch(&client, &url, &token, cluster.as_deref(), &tenant, &pod)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&e)?);
            } else {
                print!("{}", explain::render(&e));
            }
        }
        Cmd::Replay {
            input,
            url,
            token,
            every,
            compare,
            report: report_path,
            report_every,
            shadow,
            explain: explain_first,
        } => {
            let world = input.world(input.seed)?;
            let load = input.load(input.seed)?;
            let mut params = input.sim(input.seed);
            params.progress = false;
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
                    let r =
                        run_observed(&world, &load, &params, &mut recording, every, &mut print)?;
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
                    PredictorKind::Ema(world.config.ema_alpha),
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
        }
    }
    Ok(())
}
