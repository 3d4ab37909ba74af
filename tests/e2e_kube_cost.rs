//! End-to-end with kube-scheduler: cheaper eligible nodes win over a batch, compared with
//! kube-scheduler alone.
//!
//! A real kube-scheduler (built from k8s.io/kubernetes by `scripts/build-kube`) schedules pods
//! through the Worker (Miniflare, HTTPS with a private CA) using the shipped
//! `k8s/scheduler-config.yaml`. Nodes are Node objects from the OpenB trace
//! (`../shared/data/openb/`) with `status.allocatable` patched in (no kubelet) plus the labels the
//! Worker reads. The real `aco-reporter` binary runs beside them (`Env::start_with_reporter`):
//! node facts and placements reach the Worker only from it, never from test code. Run with
//! `scripts/e2e` (builds the control plane and the Worker first).

#![allow(clippy::await_holding_lock)]

use std::collections::HashMap;
use std::time::Duration;

use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::{name_of, set_label};

use aco_testkit::kube::serial;
use aco_testkit::kube::SchedulerConfig;
use serde_json::Value;

const BIND_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// 4: cheaper nodes preferred, compared with kube-scheduler alone

#[tokio::test]
async fn cheaper_nodes_are_preferred_over_scheduler_alone() {
    let _serial = serial();
    let env = Env::start_with_reporter().await;
    let kube = env.kube();
    let costs = [0.4, 0.8, 1.6, 3.2, 6.4, 12.8];
    let nodes: Vec<Value> = identical_nodes(costs.len(), "priced")
        .into_iter()
        .zip(costs)
        .map(|(mut n, c)| {
            set_label(&mut n, "aco/cost-per-hour", &c.to_string());
            n
        })
        .collect();
    env.add_nodes(&nodes).await;
    let cost: HashMap<String, f64> = nodes
        .iter()
        .map(|n| (name_of(n), label(n, "aco/cost-per-hour").parse().unwrap()))
        .collect();
    let ns = "cost";
    kube.create_namespace(ns).await;

    let batch = |tag: &str| -> Vec<Value> {
        (0..12)
            .map(|i| {
                pod(
                    ns,
                    &format!("{tag}-{i}"),
                    PodOpts {
                        cpu: "2",
                        memory: "4Gi",
                        labels: vec![("aco/workload-type", "batch".into())],
                        ..Default::default()
                    },
                )
            })
            .collect()
    };
    let mut mean_cost = Vec::new();
    for (tag, config) in [
        ("alone", SchedulerConfig::off()),
        ("aco", env.worker_config(false)),
    ] {
        let sched = env
            .cp
            .start_scheduler(&format!("scheduler-{tag}"), &config)
            .await;
        let names = create_pods(kube, &batch(tag)).await;
        let placed = kube.wait_all_bound(ns, &names, BIND_TIMEOUT).await;
        let mean = placed.iter().map(|n| cost[n]).sum::<f64>() / placed.len() as f64;
        eprintln!("{tag}: mean cost/h per pod {mean:.2}: {placed:?}");
        mean_cost.push(mean);
        drop(sched);
        kube.delete_pods(ns).await;
    }
    let [alone, aco] = mean_cost[..] else {
        unreachable!("two runs")
    };
    assert!(
        aco < alone,
        "the extender should lower the cost per pod: alone {alone}, aco {aco}"
    );
}
