//! The OpenB trace replayed through a real kube-scheduler under the ATC '23 saturation protocol
//! (`scripts/bench-trace`; a benchmark target, `harness = false`, feature `e2e`).
//!
//! The cluster and the workload are the simulator's own (`aco_sim::cluster::World`,
//! `aco_sim::saturate::workload`, objects from `aco_sim::saturate::kube_objects`): the same nodes
//! with the same prices and labels, the same pods in the same seeded order, up to 130% of the
//! GPU capacity arrived. Each configuration (`alone`, `extender`, `fgd`, and variations such as
//! `extender+pct=100`, see `aco_testkit::kube::replay_configs`) runs on a fresh control plane
//! (`aco_testkit::kube::replay::run`); GPU allocation at 100% and 130% arrived is read from
//! where kube-scheduler bound the pods. `aco-sim saturate` (the same code, in process) gives the
//! simulator's figure for the same nodes, variant and seed beside it.
//!
//! ```text
//! trace_replay [--openb-dir DIR] [--variant NAME] [--nodes CSV] [--pods CSV] [--seed N]
//!              [--nodes-every K] [--configs alone,extender,fgd] [--scheduler PATH]
//!              [--qps N] [--push-interval DUR] [--no-sim] [--kwok-pods] [--timeout-s N]
//!              [--out DIR]
//! ```

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aco_sim::saturate::kube_objects::{self as ko, Replay, HAMI_POD_ALLOCATED};
use aco_sim::saturate::policy as sp;
use aco_sim::saturate::sampling::NodeSampling;
use aco_testkit::kube::aco_scheduler::ACO_KUBE_SCHEDULER;
use aco_testkit::kube::replay::{
    self, metric_sum, ReplayConfig, ReplayObjects, ReplayOutcome, WithWorker,
};
use aco_testkit::kube::replay_configs::{Base, ReplaySpec};
use aco_testkit::kube::reporter::sample;
use aco_testkit::kube::{kube_bin, SCHEDULER_NAME};
use serde_json::json;

struct Args {
    openb_dir: PathBuf,
    variant: String,
    nodes: Option<PathBuf>,
    pods: Option<PathBuf>,
    seed: u64,
    nodes_every: usize,
    configs: Vec<String>,
    scheduler: Option<PathBuf>,
    qps: Option<u32>,
    push_interval: String,
    sim: bool,
    kwok_pods: bool,
    timeout_s: u64,
    out: PathBuf,
}

fn parse_args() -> Args {
    let root = aco_testkit::repo_root();
    let mut a = Args {
        openb_dir: root.join("../shared/data/openb"),
        variant: "default".into(),
        nodes: None,
        pods: None,
        seed: 42,
        nodes_every: 1,
        configs: vec!["alone".into(), "extender".into(), "fgd".into()],
        scheduler: None,
        qps: None,
        push_interval: "15s".into(),
        sim: true,
        kwok_pods: false,
        timeout_s: 1800,
        out: root.join("target/bench-trace"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} wants a value"));
        match flag.as_str() {
            // cargo bench passes --bench to harness = false targets.
            "--bench" => {}
            "--openb-dir" => a.openb_dir = value().into(),
            "--variant" => a.variant = value(),
            "--nodes" => a.nodes = Some(value().into()),
            "--pods" => a.pods = Some(value().into()),
            "--seed" => a.seed = value().parse().expect("--seed N"),
            "--nodes-every" => a.nodes_every = value().parse().expect("--nodes-every K"),
            "--configs" => a.configs = value().split(',').map(str::to_owned).collect(),
            "--scheduler" => a.scheduler = Some(value().into()),
            "--qps" => a.qps = Some(value().parse().expect("--qps N")),
            "--push-interval" => a.push_interval = value(),
            "--no-sim" => a.sim = false,
            "--kwok-pods" => a.kwok_pods = true,
            "--timeout-s" => a.timeout_s = value().parse().expect("--timeout-s N"),
            "--out" => a.out = value().into(),
            other => panic!("unknown argument {other}; see benches/trace_replay.rs"),
        }
    }
    a
}

/// A folder `aco-sim saturate --openb-dir` reads as this run's variant: the node list as run
/// (the subset with `--nodes-every`) and the pod list.
fn sim_folder(a: &Args, replay: &Replay, pods_csv: &Path, name: &str) -> PathBuf {
    let dir = a.out.join(format!("{name}-openb"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("openb_node_list_gpu_node.csv"), replay.node_csv()).unwrap();
    std::fs::copy(
        pods_csv,
        dir.join(format!("openb_pod_list_{}.csv", a.variant)),
    )
    .unwrap();
    dir
}

/// The final state's audit (`kube_objects::audit`): overcommitted nodes or GPUs, GPU pods bound
/// without devices, pods left out that fitted.
fn audit(replay: &Replay, o: &ReplayOutcome) -> ko::Audit {
    let bound: Vec<Option<ko::BoundPod>> = o
        .fates
        .iter()
        .map(|f| {
            f.node.as_deref().map(|node| ko::BoundPod {
                node,
                allocation: f.annotations.get(HAMI_POD_ALLOCATED).map(String::as_str),
            })
        })
        .collect();
    replay.audit(&bound)
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.filter(|v| v.is_finite())
        .map(|v| format!("{v:.digits$}"))
        .unwrap_or_else(|| "–".into())
}

#[tokio::main]
async fn main() {
    let started = Instant::now();
    let a = parse_args();
    let nodes_csv = a
        .nodes
        .clone()
        .unwrap_or_else(|| a.openb_dir.join("openb_node_list_gpu_node.csv"));
    let pods_csv = a.pods.clone().unwrap_or_else(|| {
        a.openb_dir
            .join(format!("openb_pod_list_{}.csv", a.variant))
    });
    let replay = Replay::load(
        &nodes_csv,
        &pods_csv,
        &aco_testkit::repo_root().join("data/prices"),
        a.nodes_every,
        a.seed,
    )
    .unwrap_or_else(|e| panic!("{}, {}: {e}", nodes_csv.display(), pods_csv.display()));
    let world = &replay.world;
    let order = &replay.order;
    let shapes = &replay.shapes;
    let gpus = replay.gpus();
    let name = format!(
        "{}-seed{}{}",
        a.variant,
        a.seed,
        if a.nodes_every > 1 {
            format!("-every{}", a.nodes_every)
        } else {
            String::new()
        }
    );
    eprintln!(
        "{name}: {} GPU nodes, {gpus} GPUs, {} pods to 130% arrived ({} trace pods), {} typical shapes",
        world.nodes.len(),
        order.len(),
        world.pods.len(),
        shapes.len()
    );
    std::fs::create_dir_all(&a.out).unwrap();

    // The simulator on the same world, variant and seed (what `aco-sim saturate` prints).
    let folder = sim_folder(&a, &replay, &pods_csv, &name);
    let sim_command = format!(
        "cargo run --release -p aco-sim -- saturate --openb {} --openb-dir {} --seeds {} --policies fgd,colony --nodes-to-score {} --out target/bench-trace",
        a.variant,
        folder.display(),
        a.seed,
        shipped_percentage().map_or("adaptive".to_string(), |p| p.to_string()),
    );
    // The simulator's figure per configuration: the policy the configuration runs (the colony for
    // the extender, FGD for the plugin), shown the nodes kube-scheduler would show it.
    let mut sim: Vec<SimFigure> = Vec::new();
    if a.sim {
        for spec_text in &a.configs {
            let spec = ReplaySpec::parse(spec_text).unwrap_or_else(|e| panic!("{e}"));
            let policy = match spec.base {
                Base::Extender => "colony",
                Base::Fgd => "fgd",
                Base::FirstFit => "first-fit",
                Base::Alone => continue,
            };
            let sampling = sampling_of(&spec);
            if sim
                .iter()
                .any(|f| f.policy == policy && f.sampling == sampling)
            {
                continue;
            }
            // The Worker scores fragmentation against the default trace's typical shapes
            // (OPENB_DEFAULT_SHAPES), not the variant's; the FGD plugin gets the variant's.
            let shapes = match spec.base {
                Base::Extender => &aco_core::heuristic::OPENB_DEFAULT_SHAPES[..],
                _ => shapes,
            };
            let t = Instant::now();
            let mut p = sp::by_name(policy, a.seed).unwrap();
            let r = aco_sim::saturate::run_sampled(
                world,
                &world.config,
                shapes,
                a.seed,
                p.as_mut(),
                sampling,
            );
            eprintln!(
                "aco-sim saturate {policy} ({sampling:?}): {:.2}% at 100, {:.2}% at 130, {:.0} candidates/pod ({:.1}s)",
                r.at100,
                r.at130,
                r.candidates_per_pod,
                t.elapsed().as_secs_f64()
            );
            sim.push(SimFigure {
                policy,
                sampling,
                run: r,
            });
        }
    } else {
        eprintln!("simulator skipped; its figure: {sim_command}");
    }

    let objects = ReplayObjects {
        nodes: replay.nodes(),
        pods: replay.pods(replay::NAMESPACE, SCHEDULER_NAME),
    };
    let pods = &objects.pods;
    let bin = kube_bin();
    let plugin_build = bin.join(ACO_KUBE_SCHEDULER);
    let scheduler = a.scheduler.clone().unwrap_or_else(|| {
        if plugin_build.is_file() {
            plugin_build.clone()
        } else {
            bin.join("kube-scheduler")
        }
    });
    let plugins = scheduler
        .file_name()
        .is_some_and(|f| f == "aco-kube-scheduler");
    if !plugins {
        eprintln!(
            "{} has no device-accounting or FGD plugin: shares are counted per node, not per GPU, and fgd cannot run",
            scheduler.display()
        );
    }
    let shapes_yaml: serde_yaml::Value = serde_yaml::to_value(replay.shapes_json()).unwrap();

    let mut rows = Vec::new();
    for spec_text in &a.configs {
        let spec = ReplaySpec::parse(spec_text).unwrap_or_else(|e| panic!("{e}"));
        if matches!(spec.base, Base::Fgd | Base::FirstFit) && !plugins {
            eprintln!(
                "{spec_text}: skipped (no FGD or First-Fit plugin in {})",
                scheduler.display()
            );
            continue;
        }
        let mut config = spec.scheduler_config(plugins, &shapes_yaml);
        config.client_qps = a.qps;
        let cfg = ReplayConfig {
            name: spec_text.clone(),
            scheduler: scheduler.clone(),
            config,
            worker: spec.with_extender().then(|| WithWorker {
                vars: Vec::new(),
                reporter_flags: vec![
                    "--push-interval".into(),
                    a.push_interval.clone(),
                    "--full-refresh".into(),
                    "2m".into(),
                    "--scan-interval".into(),
                    "5s".into(),
                ],
                release_reporter: true,
                // Saturation has no load to measure (kwok's pods would report 1m each).
                node_metrics: false,
            }),
            kwok_lease_s: 3600,
            kwok_pod_stages: a.kwok_pods,
            timeout: Duration::from_secs(a.timeout_s),
        };
        let t = Instant::now();
        eprintln!("{spec_text}: starting");
        let outcome = replay::run(&cfg, &objects).await;
        let wall = t.elapsed().as_secs_f64();
        let bound: Vec<bool> = outcome.fates.iter().map(|f| f.node.is_some()).collect();
        let (curve, at100, at130) = replay.figures(&bound);
        let w = outcome.worker_metrics.as_deref().unwrap_or_default();
        let decisions = metric_sum(w, "aco_colony_decisions_total");
        let candidates = metric_sum(w, "aco_colony_candidates_total");
        let elsewhere = metric_sum(w, "aco_colony_placements_elsewhere_total");
        let deposits = metric_sum(w, "aco_colony_deposits_total");
        let audit = audit(&replay, &outcome);
        eprintln!(
            "{spec_text}: {}/{} bound, {at100:.2}% at 100, {at130:.2}% at 130, {:.1} pods/s, {wall:.0}s in all; phases {:?}",
            outcome.bound(),
            pods.len(),
            outcome.pods_per_s(),
            outcome.phases
        );
        rows.push(json!({
            "config": spec_text,
            "at100": at100,
            "at130": at130,
            "curve": curve,
            "failed": pods.len() - outcome.bound(),
            "wallSeconds": wall,
            "audit": {"overcommitted": audit.overcommitted, "withoutDevices": audit.without_devices,
                      "unboundThatFit": audit.unbound_that_fit},
            "worker": outcome.worker_metrics.is_some().then(|| json!({
                "decisions": decisions,
                "candidates": candidates,
                "placementsElsewhere": elsewhere,
                "deposits": deposits,
                "reporterPlacementsSent": outcome.reporter_metrics.as_deref()
                    .map(|r| sample(r, "aco_reporter_reports_sent_total{kind=\"placements\"}")),
            })),
            "run": replay::summary(&outcome),
        }));
    }

    let sim_of = |spec: &ReplaySpec| {
        let policy = match spec.base {
            Base::Extender => "colony",
            Base::Fgd => "fgd",
            Base::FirstFit => "first-fit",
            Base::Alone => return None,
        };
        let sampling = sampling_of(spec);
        sim.iter()
            .find(|f| f.policy == policy && f.sampling == sampling)
            .map(|f| &f.run)
    };
    let mut table = format!(
        "OpenB `{}` ({}), seed {}, {} GPU nodes / {gpus} GPUs, {} pods to 130% arrived; kube-scheduler {} ({}), client QPS {}; reporter pushes every {}; {} cores, shared\n\n\
         | configuration | at 100% | at 130% | aco-sim at 100 / 130 | real − sim at 130 | failed | failed that fitted | pods/s | bound elsewhere | candidates / decision | wall s |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        a.variant,
        pods_csv.display(),
        a.seed,
        world.nodes.len(),
        order.len(),
        kube_version(&scheduler),
        scheduler.file_name().unwrap().to_string_lossy(),
        a.qps.map(|q| q.to_string()).unwrap_or_else(|| "50 (default)".into()),
        a.push_interval,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
    );
    for r in &rows {
        let config = r["config"].as_str().unwrap();
        let sim_row = sim_of(&ReplaySpec::parse(config).unwrap());
        let w = &r["worker"];
        let per = |k: &str| {
            let d = w["decisions"].as_f64()?;
            Some(w[k].as_f64()? / d.max(1.0))
        };
        let elsewhere = w["placementsElsewhere"].as_f64().map(|e| {
            format!(
                "{e:.0} ({:.2}%)",
                100.0 * e / w["deposits"].as_f64().unwrap_or(f64::NAN)
            )
        });
        table += &format!(
            "| {config} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |\n",
            fmt(r["at100"].as_f64(), 2),
            fmt(r["at130"].as_f64(), 2),
            sim_row
                .map(|s| format!("{:.2} / {:.2}", s.at100, s.at130))
                .unwrap_or_else(|| "–".into()),
            fmt(
                sim_row.and_then(|s| Some(r["at130"].as_f64()? - s.at130)),
                2
            ),
            r["failed"],
            r["audit"]["unboundThatFit"],
            fmt(r["run"]["podsPerSecond"].as_f64(), 1),
            elsewhere.unwrap_or_else(|| "–".into()),
            fmt(per("candidates"), 0),
            r["wallSeconds"].as_f64().unwrap_or(0.0),
        );
    }
    table += "\naco-sim's figure is the same nodes and pods in the simulator, each pod shown the feasible nodes kube-scheduler would show it (the configuration's `percentageOfNodesToScore`), the colony scoring fragmentation against the default trace's typical shapes as the Worker does.\n";
    table += &format!(
        "\nSimulator: `{sim_command}`. Whole run: {:.0} s.\n",
        started.elapsed().as_secs_f64()
    );
    println!("\n{table}");
    let out = a.out.join(format!("{name}.json"));
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&json!({
            "variant": a.variant,
            "seed": a.seed,
            "nodes": world.nodes.len(),
            "gpus": gpus,
            "pods": order.len(),
            "simCommand": sim_command,
            "sim": sim.iter().map(|f| json!({"policy": f.policy, "nodesToScore": format!("{:?}", f.sampling),
                "at100": f.run.at100, "at130": f.run.at130, "failed": f.run.failed,
                "candidatesPerPod": f.run.candidates_per_pod})).collect::<Vec<_>>(),
            "configs": rows,
            "seconds": started.elapsed().as_secs_f64(),
        }))
        .unwrap(),
    )
    .unwrap();
    std::fs::write(a.out.join(format!("{name}.md")), &table).unwrap();
    eprintln!("written to {}", out.display());
}

/// One simulator run beside the real ones.
struct SimFigure {
    policy: &'static str,
    sampling: NodeSampling,
    run: aco_sim::saturate::SatRun,
}

/// The nodes kube-scheduler shows each pod under `spec`: its `percentageOfNodesToScore`, or
/// the shipped file's (unset: kube-scheduler's adaptive default).
fn sampling_of(spec: &ReplaySpec) -> NodeSampling {
    let shipped = shipped_percentage();
    match spec.percentage.or(shipped) {
        Some(p) => NodeSampling::KubeScheduler { percentage: p },
        None => NodeSampling::KubeScheduler { percentage: 0 },
    }
}

/// `percentageOfNodesToScore` of the shipped configuration's profile (or its top level).
fn shipped_percentage() -> Option<u32> {
    let path = aco_testkit::repo_root().join(aco_testkit::kube::scheduler_config::SHIPPED);
    let doc: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let key = "percentageOfNodesToScore";
    doc["profiles"][0][key]
        .as_u64()
        .or(doc[key].as_u64())
        .map(|p| p as u32)
}

fn kube_version(bin: &Path) -> String {
    std::process::Command::new(bin)
        .arg("--version")
        .output()
        .ok()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .replace("Kubernetes ", "")
        })
        .unwrap_or_else(|| "?".into())
}
