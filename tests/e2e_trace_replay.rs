//! End-to-end: the machinery of the real-kube trace replay (`scripts/bench-trace`,
//! `benches/trace_replay.rs`) on a small cluster, so that CI proves the command works without
//! running the benchmark: every ninetieth OpenB GPU node as a kwok node and the default trace in
//! seed 42's saturation order up to 130% of their GPUs, scheduled by a real kube-scheduler in
//! each configuration on a fresh control plane — alone, with the Worker as extender fed by the
//! `aco-reporter` binary, and FGD compiled into the same build (with `aco-kube-scheduler`,
//! whose device accounting every configuration then uses; the stock binary runs the first two).
//!
//! Each run must settle (every pod bound or found unschedulable), take the pods in arrival
//! order (bindings in the order they arrived, up to the asynchronous binding's jitter), hold no
//! more on any node or GPU than it has, allocate every GPU pod a device, and — where
//! kube-scheduler's accounting is exact (alone, fgd) — leave out no pod that fitted. With the
//! extender, the Worker decided and every placement reached its colony.
//!
//! Run with `scripts/e2e --no-build -- e2e_trace` or `cargo test --features e2e --test
//! e2e_trace_replay` (KUBE_BIN set, the Worker built).

use std::time::Duration;

use aco_sim::saturate::kube_objects::{BoundPod, Replay, HAMI_POD_ALLOCATED};
use aco_testkit::kube::aco_scheduler::ACO_KUBE_SCHEDULER;
use aco_testkit::kube::replay::{self, metric_sum, ReplayConfig, ReplayObjects, WithWorker};
use aco_testkit::kube::replay_configs::ReplaySpec;
use aco_testkit::kube::{kube_bin, SCHEDULER_NAME};

#[tokio::test]
async fn a_small_replay_schedules_the_trace_in_order_in_every_configuration_with_exact_devices() {
    let openb = aco_testkit::openb::openb_dir();
    let replay = Replay::load(
        &openb.join("openb_node_list_gpu_node.csv"),
        &openb.join("openb_pod_list_default.csv"),
        &aco_testkit::repo_root().join("data/prices"),
        90,
        42,
    )
    .unwrap();
    let objects = ReplayObjects {
        nodes: replay.nodes(),
        pods: replay.pods(replay::NAMESPACE, SCHEDULER_NAME),
    };
    let (nodes, pods) = (&objects.nodes, &objects.pods);
    assert!(
        (10..=20).contains(&nodes.len()) && (50..=200).contains(&pods.len()),
        "{} nodes, {} pods",
        nodes.len(),
        pods.len()
    );
    let bin = kube_bin();
    let plugins = bin.join(ACO_KUBE_SCHEDULER).is_file();
    let scheduler = bin.join(if plugins {
        ACO_KUBE_SCHEDULER
    } else {
        "kube-scheduler"
    });
    let shapes = serde_yaml::to_value(replay.shapes_json()).unwrap();
    let configs: &[&str] = if plugins {
        &["alone", "extender", "fgd"]
    } else {
        eprintln!(
            "no {ACO_KUBE_SCHEDULER} in {}: alone and extender only",
            bin.display()
        );
        &["alone", "extender"]
    };
    let only = std::env::var("REPLAY_ONLY").ok();
    for name in configs {
        if only.as_deref().is_some_and(|o| o != *name) {
            continue;
        }
        let spec = ReplaySpec::parse(name).unwrap();
        let cfg = ReplayConfig {
            name: name.to_string(),
            scheduler: scheduler.clone(),
            config: spec.scheduler_config(plugins, &shapes),
            worker: spec.with_extender().then(WithWorker::default),
            kwok_lease_s: 600,
            kwok_pod_stages: false,
            timeout: Duration::from_secs(180),
        };
        let o = replay::run(&cfg, &objects).await;
        let bound: Vec<Option<BoundPod>> = o
            .fates
            .iter()
            .map(|f| {
                f.node.as_deref().map(|node| BoundPod {
                    node,
                    allocation: f.annotations.get(HAMI_POD_ALLOCATED).map(String::as_str),
                })
            })
            .collect();
        let (_, at100, at130) =
            replay.figures(&bound.iter().map(Option::is_some).collect::<Vec<_>>());
        let audit = replay.audit(&bound);
        eprintln!(
            "{name}: {} of {} bound, {at100:.2}% at 100, {at130:.2}% at 130, bindings inverted {:.3}, {audit:?}, {:?}",
            o.bound(),
            pods.len(),
            o.bind_inversions(),
            o.phases
        );
        assert!(o.settled, "{name}: pods left unsettled");
        assert!(o.bound() > pods.len() / 2, "{name}: {} bound", o.bound());
        assert!((0.0..=100.0).contains(&at130) && at130 >= at100);
        // Arrival order: kube-scheduler tried every pod after every pod before it.
        assert_eq!(o.attempt_order.len(), pods.len(), "{name}: every pod tried");
        assert_eq!(
            o.attempted_out_of_order(),
            0,
            "{name}: tried out of arrival order: {:?}",
            o.attempt_order
        );
        assert!(audit.overcommitted.is_empty(), "{name}: {audit:?}");
        if plugins {
            assert_eq!(audit.without_devices, 0, "{name}: {audit:?}");
        }
        if !spec.with_extender() && plugins {
            assert_eq!(audit.unbound_that_fit, 0, "{name}: {audit:?}");
        }
        if spec.with_extender() {
            let text = o.worker_metrics.as_deref().expect("the Worker's metrics");
            let decisions = metric_sum(text, "aco_colony_decisions_total").unwrap_or(0.0);
            let received = metric_sum(text, "aco_placements_received_total").unwrap_or(0.0);
            let deposits = metric_sum(text, "aco_colony_deposits_total").unwrap_or(0.0);
            let colony: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("aco_colony_") || l.starts_with("aco_placements"))
                .collect();
            // Each binding reported once; each pod kube-scheduler asked the Worker to rank
            // (two nodes or more feasible) deposited once, where it was bound.
            assert_eq!(
                received,
                o.bound() as f64,
                "{name}: the Worker's metrics:\n{}",
                colony.join("\n")
            );
            assert!(
                deposits > 0.0 && deposits <= decisions,
                "{name}: the Worker's metrics:\n{}",
                colony.join("\n")
            );
            assert_eq!(o.extender_errors, 0, "{name}: the extender failed");
        }
    }
}
