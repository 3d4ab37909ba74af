//! End-to-end: the churned segment's machinery (`scripts/bench-trace --churn`,
//! `benches/churn_replay.rs`) on a small cluster: every hundredth OpenB node as a kwok node and
//! the default trace's first 50 arrivals, created at their arrival times and completed by kwok
//! at their departures (trace time compressed to ~40 s of arrivals), scheduled by a real
//! kube-scheduler with First-Fit compiled in (`AcoFirstFit`) and with the Worker as extender fed
//! by the `aco-reporter` binary.
//!
//! Each run must settle, see the pods due to leave leave (phase Succeeded, from kwok's Stage),
//! hold no more on any node or GPU than it has among the pods still running at the end, and
//! give cost and LS QoS through the simulator's engine from its real bindings. First-Fit's
//! bindings must be the simulator's First-Fit's on the same segment where no other event came
//! within milliseconds (compression can swap those), and for most pods. With the extender, every binding
//! reached the colony, the reporter's outcomes of the completed pods reached it too, and the
//! reporter read node load from metrics-server (kwok reporting each pod's mean CPU use).
//!
//! Run with `scripts/e2e --no-build -- e2e_churn` or `cargo test --features e2e --test
//! e2e_churn_replay` (KUBE_BIN with `aco-kube-scheduler`, the Worker built).

use std::collections::HashMap;
use std::time::Duration;

use aco_sim::churn::kube_objects::END_AT;
use aco_sim::churn::{Segment, SegmentSpec};
use aco_sim::saturate::kube_objects::BoundPod;
use aco_testkit::kube::aco_scheduler::ACO_KUBE_SCHEDULER;
use aco_testkit::kube::churn::{self, ChurnObjects};
use aco_testkit::kube::replay::{self, metric_sum, ReplayConfig, WithWorker};
use aco_testkit::kube::replay_configs::ReplaySpec;
use aco_testkit::kube::reporter::sample;
use aco_testkit::kube::{kube_bin, SCHEDULER_NAME};

const PODS: usize = 50;
const ARRIVALS_S: f64 = 40.0;
/// Reporter pushes (s), also the simulator's report interval once compressed.
const PUSH_S: u64 = 2;
/// Wall seconds between a pod's arrival and any other event for it to count as alone in time.
const ISOLATED_S: f64 = 0.3;

#[tokio::test]
async fn a_small_churned_segment_arrives_departs_and_is_measured_from_its_real_bindings() {
    let openb = aco_testkit::openb::openb_dir();
    let dir = tempfile::tempdir().unwrap();
    let all = std::fs::read_to_string(openb.join("openb_node_list_all_node.csv")).unwrap();
    let mut lines = all.lines();
    let mut csv = format!("{}\n", lines.next().unwrap());
    for line in lines.step_by(100) {
        csv += &format!("{line}\n");
    }
    let nodes_csv = dir.path().join("nodes.csv");
    std::fs::write(&nodes_csv, csv).unwrap();
    let spec = |report_interval_s| SegmentSpec {
        nodes_csv: nodes_csv.clone(),
        pods_csv: openb.join("openb_pod_list_default.csv"),
        prices_dir: aco_testkit::repo_root().join("data/prices"),
        seed: 1,
        pods: PODS,
        report_interval_s,
        node_metrics: true,
    };
    let span = Segment::load(spec(60)).unwrap().arrival_span_s() as f64;
    let compression = span / ARRIVALS_S;
    let segment = Segment::load(spec((PUSH_S as f64 * compression) as u64)).unwrap();
    let pods = segment.kube_pods(replay::NAMESPACE, SCHEDULER_NAME, compression);
    let usage: Vec<f64> = segment
        .pods()
        .iter()
        .map(|p| segment.mean_cpu_milli(p))
        .collect();
    let objects = ChurnObjects::new(
        segment.kube_nodes(),
        pods.iter().map(|p| (p.object.clone(), p.at_s, p.end_s)),
        END_AT,
    )
    .with_cpu_usage(&usage);
    let trace_names: Vec<String> = pods.iter().map(|p| p.trace_name.clone()).collect();
    assert!(
        (10..=20).contains(&objects.nodes.len()),
        "{} nodes",
        objects.nodes.len()
    );
    let bin = kube_bin();
    let scheduler = bin.join(ACO_KUBE_SCHEDULER);
    assert!(
        scheduler.is_file(),
        "{} is missing: scripts/build-kube builds it",
        scheduler.display()
    );
    let sim_first_fit = segment.simulate("first-fit").unwrap();
    let shapes = serde_yaml::Value::Sequence(Vec::new());
    let only = std::env::var("REPLAY_ONLY").ok();
    for name in ["first-fit", "extender"] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let spec = ReplaySpec::parse(name).unwrap();
        let cfg = ReplayConfig {
            name: name.to_string(),
            scheduler: scheduler.clone(),
            config: spec.scheduler_config(true, &shapes),
            worker: spec.with_extender().then(|| WithWorker {
                reporter_flags: vec!["--push-interval".into(), format!("{PUSH_S}s")],
                node_metrics: true,
                ..WithWorker::default()
            }),
            kwok_lease_s: 600,
            kwok_pod_stages: true,
            timeout: Duration::from_secs(180),
        };
        let o = churn::run(&cfg, &objects).await;
        let bindings = o.bindings(&trace_names);
        let (real, not_replayed) = segment.of_bindings(name, &bindings).unwrap();
        let m = &real.metrics;
        let running: Vec<Option<BoundPod>> = o
            .running()
            .into_iter()
            .map(|f| f.map(|f| BoundPod::of(f.node.as_deref().unwrap(), &f.annotations)))
            .collect();
        let order: Vec<usize> = (0..PODS).collect();
        let audit = aco_sim::saturate::kube_objects::audit(&segment.world, &order, &running);
        eprintln!(
            "{name}: {} of {PODS} bound, {} completed ({} due), creation lag {:.2}s, ${:.0}, LS QoS {:.2}%, not replayed {not_replayed:?}, {audit:?}, {:?}",
            o.bound(),
            o.completed,
            o.due_to_end,
            o.max_creation_lag_s,
            m.cost_busy_usd,
            100.0 * m.ls_compliance,
            o.phases
        );
        assert!(o.settled, "{name}: pods left unsettled");
        assert!(o.bound() > PODS / 2, "{name}: {} bound", o.bound());
        assert!(
            o.due_to_end > 0 && o.completed >= o.due_to_end,
            "{name}: {} of {} due departures",
            o.completed,
            o.due_to_end
        );
        assert!(audit.overcommitted.is_empty(), "{name}: {audit:?}");
        assert_eq!(audit.without_devices, 0, "{name}: {audit:?}");
        // The engine measured the real bindings: every bound pod placed but those it could not
        // follow (named), and a bill for the nodes they used.
        assert_eq!(m.placed + not_replayed.len(), o.bound(), "{name}");
        assert!(not_replayed.len() <= PODS / 10, "{name}: {not_replayed:?}");
        assert!(m.cost_busy_usd > 0.0 && (0.0..=1.0).contains(&m.ls_compliance));
        if name == "first-fit" {
            let sim: HashMap<&str, &str> = sim_first_fit
                .placements
                .iter()
                .filter_map(|(p, n)| Some((p.as_str(), n.as_deref()?)))
                .collect();
            // Under compression, arrivals and departures a few milliseconds apart may swap
            // order (creation, binding and kwok's completion each take milliseconds): the pods
            // that arrived alone — no other arrival or departure within ISOLATED_S — and before
            // any pod that differed must go where the simulator's First-Fit put them, and most
            // of the rest too.
            let events: Vec<f64> = pods
                .iter()
                .flat_map(|p| [Some(p.at_s), p.end_s])
                .flatten()
                .collect();
            let isolated = |p: &aco_sim::churn::kube_objects::ChurnPod| {
                events
                    .iter()
                    .filter(|e| (*e - p.at_s).abs() < ISOLATED_S)
                    .count()
                    == 1
            };
            let mut differ = Vec::new();
            let mut isolated_same = 0;
            for p in &pods {
                let real = bindings.get(&p.trace_name).map(String::as_str);
                let sim = sim.get(p.trace_name.as_str()).copied();
                let alone = isolated(p);
                if real != sim {
                    assert!(
                        !alone || !differ.is_empty(),
                        "First-Fit: {} arrived alone at {:.2}s and went to {real:?}, the simulator's to {sim:?}",
                        p.trace_name,
                        p.at_s
                    );
                    differ.push(format!(
                        "{} at {:.2}s: {real:?} / {sim:?}",
                        p.trace_name, p.at_s
                    ));
                } else if alone && differ.is_empty() {
                    isolated_same += 1;
                }
            }
            assert!(
                isolated_same >= 10 && differ.len() * 3 <= bindings.len(),
                "First-Fit: {isolated_same} pods alone in time as the simulator's; {} of {} bindings differ (real / sim):\n{}",
                differ.len(),
                bindings.len(),
                differ.join("\n")
            );
        } else {
            let w = o.worker_metrics.as_deref().expect("the Worker's metrics");
            let r = o
                .reporter_metrics
                .as_deref()
                .expect("the reporter's metrics");
            let received = metric_sum(w, "aco_placements_received_total").unwrap_or(0.0);
            let outcomes = metric_sum(w, "aco_colony_late_outcomes_total").unwrap_or(0.0);
            let sent = sample(r, "aco_reporter_reports_sent_total{kind=\"outcomes\"}");
            assert!(
                received >= o.bound() as f64,
                "{name}: {received} placements"
            );
            assert!(
                sent >= o.completed as f64 && outcomes >= o.completed as f64,
                "{name}: {} completed, the reporter sent {sent} outcomes, the colony heard {outcomes}",
                o.completed
            );
            assert_eq!(o.extender_errors, 0, "{name}: the extender failed");
            // Node load reached the reporter from metrics-server (kwok reporting the pods'
            // annotated use), as in the shipped install.
            assert_eq!(
                sample(r, "aco_reporter_source_healthy{kind=\"node_metrics\"}"),
                1.0,
                "{name}: the reporter read no node metrics"
            );
        }
    }
}
