//! A churned segment of the OpenB trace through a real kube-scheduler (`scripts/bench-trace
//! --churn`; a benchmark target, `harness = false`, feature `e2e`): the first N arrivals of a
//! pod list on every node of the trace, each pod created at its arrival and completed by kwok
//! at its departure, trace time compressed so that the arrivals take `--arrivals-s` seconds.
//! Configurations `alone`, `first-fit` (`AcoFirstFit`, every feasible node scored) and
//! `extender` (the shipped configuration, the Worker and the reporter running), each on a fresh
//! control plane (`aco_testkit::kube::churn::run`).
//!
//! Cost and LS QoS come from the real bindings replayed through the simulator's engine
//! (`aco_sim::churn::Segment::of_bindings`): its cost model (a node billed while a pod runs on
//! it) and load model (LS QoS: the node's utilisation stayed below 0.8), in trace time. The
//! simulator's First-Fit and colony run the same segment (`Segment::simulate`, what
//! `Segment::command` prints as an `aco-sim run` line) beside them.
//!
//! ```text
//! churn_replay [--openb-dir DIR] [--variant NAME] [--seed N] [--pods-segment N]
//!              [--arrivals-s S] [--configs alone,first-fit,extender] [--push-interval-s N]
//!              [--scheduler PATH] [--qps N] [--timeout-s N] [--out DIR] [--node-metrics]
//! ```
//!
//! By default neither side has load facts, so the real run and the simulator have the same
//! information and their cost ratios compare. `--node-metrics` adds them as the shipped install
//! has them: metrics-server scrapes kwok, which reports each running pod's mean CPU use under
//! the simulator's load model (`Segment::mean_cpu_milli`), and the reporter reads node load from
//! it; the simulator's reporter sends the modelled utilisation (not the same signal: see
//! docs/real-kube-replay.md).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use aco_sim::churn::kube_objects::END_AT;
use aco_sim::churn::{Segment, SegmentSpec};
use aco_sim::engine::Metrics;
use aco_sim::saturate::kube_objects::{audit, BoundPod};
use aco_testkit::kube::aco_scheduler::ACO_KUBE_SCHEDULER;
use aco_testkit::kube::churn::{self, ChurnObjects, ChurnOutcome};
use aco_testkit::kube::replay::{metric_sum, ReplayConfig, WithWorker, NAMESPACE};
use aco_testkit::kube::replay_configs::ReplaySpec;
use aco_testkit::kube::reporter::sample;
use aco_testkit::kube::{kube_bin, SCHEDULER_NAME};
use serde_json::json;

struct Args {
    openb_dir: PathBuf,
    variant: String,
    seed: u64,
    pods: usize,
    arrivals_s: f64,
    configs: Vec<String>,
    push_interval_s: u64,
    scheduler: Option<PathBuf>,
    qps: Option<u32>,
    timeout_s: u64,
    out: PathBuf,
    /// `--node-metrics`: metrics-server and the pods' mean CPU use through kwok, utilisation
    /// facts in the simulator. Default: no load facts on either side (the same information).
    node_metrics: bool,
}

fn parse_args() -> Args {
    let root = aco_testkit::repo_root();
    let mut a = Args {
        openb_dir: root.join("../shared/data/openb"),
        variant: "default".into(),
        seed: 1,
        pods: 2000,
        arrivals_s: 300.0,
        configs: vec!["alone".into(), "first-fit".into(), "extender".into()],
        push_interval_s: 2,
        scheduler: None,
        qps: Some(500),
        timeout_s: 1800,
        out: root.join("target/bench-trace"),
        node_metrics: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} wants a value"));
        match flag.as_str() {
            "--bench" | "--churn" => {}
            "--openb-dir" => a.openb_dir = value().into(),
            "--variant" => a.variant = value(),
            "--seed" => a.seed = value().parse().expect("--seed N"),
            "--pods-segment" => a.pods = value().parse().expect("--pods-segment N"),
            "--arrivals-s" => a.arrivals_s = value().parse().expect("--arrivals-s S"),
            "--configs" => a.configs = value().split(',').map(str::to_owned).collect(),
            "--push-interval-s" => {
                a.push_interval_s = value().parse().expect("--push-interval-s N")
            }
            "--scheduler" => a.scheduler = Some(value().into()),
            "--qps" => a.qps = Some(value().parse().expect("--qps N")),
            "--timeout-s" => a.timeout_s = value().parse().expect("--timeout-s N"),
            "--out" => a.out = value().into(),
            "--node-metrics" => a.node_metrics = true,
            other => panic!("unknown argument {other}; see benches/churn_replay.rs"),
        }
    }
    a
}

/// One row: a configuration's real bindings or a simulator policy, measured by the engine.
struct Row {
    name: String,
    setting: &'static str,
    metrics: Metrics,
    /// Pods never bound (real) or unplaced (simulator).
    unplaced: usize,
    /// Real bindings the engine could not follow (the node was full in trace time).
    not_replayed: usize,
    run: Option<serde_json::Value>,
}

fn running(o: &ChurnOutcome) -> Vec<Option<BoundPod<'_>>> {
    o.running()
        .into_iter()
        .map(|f| f.map(|f| BoundPod::of(f.node.as_deref().unwrap(), &f.annotations)))
        .collect()
}

#[tokio::main]
async fn main() {
    let started = Instant::now();
    let a = parse_args();
    let spec = |report_interval_s| SegmentSpec {
        nodes_csv: a.openb_dir.join("openb_node_list_all_node.csv"),
        pods_csv: a
            .openb_dir
            .join(format!("openb_pod_list_{}.csv", a.variant)),
        prices_dir: aco_testkit::repo_root().join("data/prices"),
        seed: a.seed,
        pods: a.pods,
        report_interval_s,
        node_metrics: a.node_metrics,
    };
    let span = Segment::load(spec(60)).unwrap().arrival_span_s() as f64;
    let compression = (span / a.arrivals_s).max(1.0);
    let report_interval_s = (a.push_interval_s as f64 * compression).round() as u64;
    let segment = Segment::load(spec(report_interval_s)).unwrap();
    let command = segment.command("first-fit,colony");
    let pods = segment.kube_pods(NAMESPACE, SCHEDULER_NAME, compression);
    eprintln!(
        "{} nodes, {} pods over {span:.0} trace s, compressed {compression:.0}x into {:.0} s of arrivals; the simulator: {command}",
        segment.world.nodes.len(),
        pods.len(),
        a.arrivals_s
    );
    // The names kube-scheduler's First-Fit orders by are the cluster's order.
    assert!(
        segment
            .world
            .nodes
            .windows(2)
            .all(|w| w[0].name < w[1].name),
        "node names do not sort in cluster order: AcoFirstFit would not be the simulator's First-Fit"
    );
    std::fs::create_dir_all(&a.out).unwrap();

    let mut rows: Vec<Row> = Vec::new();
    for policy in ["first-fit", "colony"] {
        let t = Instant::now();
        let r = segment.simulate(policy).unwrap();
        eprintln!(
            "aco-sim {policy}: ${:.0}, LS QoS {:.2}%, unplaced {} ({:.1}s)",
            r.metrics.cost_busy_usd,
            100.0 * r.metrics.ls_compliance,
            r.metrics.unplaced,
            t.elapsed().as_secs_f64()
        );
        rows.push(Row {
            name: policy.into(),
            setting: "aco-sim",
            unplaced: r.metrics.unplaced,
            not_replayed: 0,
            metrics: r.metrics,
            run: None,
        });
    }

    let mut objects = ChurnObjects::new(
        segment.kube_nodes(),
        pods.iter().map(|p| (p.object.clone(), p.at_s, p.end_s)),
        END_AT,
    );
    if a.node_metrics {
        let usage: Vec<f64> = segment
            .pods()
            .iter()
            .map(|p| segment.mean_cpu_milli(p))
            .collect();
        objects = objects.with_cpu_usage(&usage);
    }
    let trace_names: Vec<String> = pods.iter().map(|p| p.trace_name.clone()).collect();
    let scheduler = a
        .scheduler
        .clone()
        .unwrap_or_else(|| kube_bin().join(ACO_KUBE_SCHEDULER));
    let shapes = serde_yaml::to_value(aco_sim::saturate::kube_objects::shapes_json(
        &aco_sim::saturate::shapes_of(&segment.world),
    ))
    .unwrap();
    let order: Vec<usize> = (0..pods.len()).collect();
    for name in &a.configs {
        let spec = ReplaySpec::parse(name).unwrap_or_else(|e| panic!("{e}"));
        let mut config = spec.scheduler_config(true, &shapes);
        config.client_qps = a.qps;
        let cfg = ReplayConfig {
            name: name.clone(),
            scheduler: scheduler.clone(),
            config,
            worker: spec.with_extender().then(|| WithWorker {
                vars: Vec::new(),
                reporter_flags: vec![
                    "--push-interval".into(),
                    format!("{}s", a.push_interval_s),
                    "--scan-interval".into(),
                    "1s".into(),
                ],
                // Release-built with the bench (`cargo bench`), as the bench's own profile.
                release_reporter: !cfg!(debug_assertions),
                node_metrics: a.node_metrics,
            }),
            kwok_lease_s: 3600,
            kwok_pod_stages: true,
            timeout: Duration::from_secs(a.timeout_s),
        };
        let t = Instant::now();
        eprintln!("{name}: starting");
        let o = churn::run(&cfg, &objects).await;
        let bindings = o.bindings(&trace_names);
        let (r, not_replayed) = segment.of_bindings(name, &bindings).unwrap();
        let final_audit = audit(&segment.world, &order, &running(&o));
        let w = o.worker_metrics.as_deref().unwrap_or_default();
        let rep = o.reporter_metrics.as_deref().unwrap_or_default();
        eprintln!(
            "{name}: {}/{} bound, {} completed ({} due), ${:.0}, LS QoS {:.2}%, {} bindings not replayable, creation lag ≤ {:.2}s, {:.0}s; phases {:?}",
            o.bound(),
            pods.len(),
            o.completed,
            o.due_to_end,
            r.metrics.cost_busy_usd,
            100.0 * r.metrics.ls_compliance,
            not_replayed.len(),
            o.max_creation_lag_s,
            t.elapsed().as_secs_f64(),
            o.phases
        );
        rows.push(Row {
            name: name.clone(),
            setting: "real",
            unplaced: pods.len() - o.bound(),
            not_replayed: not_replayed.len(),
            metrics: r.metrics,
            run: Some(json!({
                "bound": o.bound(),
                "settled": o.settled,
                "completed": o.completed,
                "dueToEnd": o.due_to_end,
                "maxCreationLagSeconds": o.max_creation_lag_s,
                "notReplayed": not_replayed,
                "audit": {"overcommitted": final_audit.overcommitted,
                          "withoutDevices": final_audit.without_devices},
                "extenderErrors": o.extender_errors,
                "phases": o.phases.iter().map(|(k, v)| json!({"phase": k, "seconds": v})).collect::<Vec<_>>(),
                "worker": o.worker_metrics.is_some().then(|| json!({
                    "decisions": metric_sum(w, "aco_colony_decisions_total"),
                    "placementsReceived": metric_sum(w, "aco_placements_received_total"),
                    "lateOutcomes": metric_sum(w, "aco_colony_late_outcomes_total"),
                    "failedOutcomes": metric_sum(w, "aco_colony_failed_outcomes_total"),
                    "placementsElsewhere": metric_sum(w, "aco_colony_placements_elsewhere_total"),
                    "reporterOutcomesSent": sample(rep, "aco_reporter_reports_sent_total{kind=\"outcomes\"}"),
                })),
                "wallSeconds": t.elapsed().as_secs_f64(),
            })),
        });
    }

    let first_fit = |setting: &str| {
        rows.iter()
            .find(|r| r.setting == setting && r.name == "first-fit")
            .map(|r| r.metrics.cost_busy_usd)
    };
    let ratio = |r: &Row| Some(r.metrics.cost_busy_usd / first_fit(r.setting)?);
    let mut table = format!(
        "OpenB `{}`, first {} arrivals, seed {}, {} nodes; trace time compressed {compression:.0}x ({span:.0} s of arrivals in {:.0} s); kube-scheduler v1.37.2 (`aco-kube-scheduler`), reporter pushing every {} s (the simulator's report interval {report_interval_s} trace s); {} cores, shared\n\n\
         | setting | configuration | cost $ (busy nodes) | × First-Fit (same setting) | LS QoS | unplaced | bindings not replayable | nodes used |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
        a.variant,
        a.pods,
        a.seed,
        segment.world.nodes.len(),
        a.arrivals_s,
        a.push_interval_s,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
    );
    for r in &rows {
        table += &format!(
            "| {} | {} | {:.0} | {} | {:.2}% | {} | {} | {} |\n",
            r.setting,
            r.name,
            r.metrics.cost_busy_usd,
            ratio(r).map_or("–".into(), |x| format!("{x:.3}")),
            100.0 * r.metrics.ls_compliance,
            r.unplaced,
            r.not_replayed,
            r.metrics.nodes_used,
        );
    }
    let colony_ratio = |setting: &str| {
        rows.iter()
            .find(|r| r.setting == setting && matches!(r.name.as_str(), "colony" | "extender"))
            .and_then(ratio)
    };
    if let (Some(real), Some(sim)) = (colony_ratio("real"), colony_ratio("aco-sim")) {
        table += &format!(
            "\nColony × First-Fit: real {real:.3}, aco-sim {sim:.3}, real − sim {:+.3}.\n",
            real - sim
        );
    }
    table += &format!(
        "\nCost and LS QoS of every row by the simulator's engine (real rows: kube-scheduler's bindings replayed in trace time). Simulator: `{command}`. Whole run: {:.0} s.\n",
        started.elapsed().as_secs_f64()
    );
    println!("\n{table}");
    let name = format!("churn-{}-{}-seed{}", a.variant, a.pods, a.seed);
    std::fs::write(
        a.out.join(format!("{name}.json")),
        serde_json::to_string_pretty(&json!({
            "variant": a.variant, "pods": a.pods, "seed": a.seed,
            "compression": compression, "arrivalSpanSeconds": span,
            "simCommand": command,
            "rows": rows.iter().map(|r| json!({
                "setting": r.setting, "config": r.name, "metrics": r.metrics,
                "xFirstFit": ratio(r), "unplaced": r.unplaced, "notReplayed": r.not_replayed,
                "run": r.run,
            })).collect::<Vec<_>>(),
            "seconds": started.elapsed().as_secs_f64(),
        }))
        .unwrap(),
    )
    .unwrap();
    std::fs::write(a.out.join(format!("{name}.md")), &table).unwrap();
    eprintln!(
        "written to {}",
        a.out.join(format!("{name}.json")).display()
    );
}
