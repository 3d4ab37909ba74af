//! End-to-end, the reporter's closed loop: pods of one workload that fail on one node only lower
//! its reliability, and the next latency-critical pods avoid it.
//!
//! The closed loop (`aco_testkit::kube::reporter_loop::Loop`), with real moving parts and no test
//! code standing in for the reporter: kube-apiserver + etcd + the second kube-scheduler (names
//! mode, `nodeCacheCapable: true`) + kwok (fake kubelets: heartbeats, pods Running, usage from pod
//! annotations, pod fates) + metrics-server (the real `v1beta1.metrics.k8s.io` APIService, scraping
//! kwok) + **the `aco-reporter` binary** + the Worker over HTTPS on Miniflare. Nothing here calls
//! `PUT /v1/nodes` or `POST /v1/placements`: every fact and every deposit the Worker has came from
//! the reporter watching the cluster. Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use std::time::Duration;

use aco_core::api::pheromones::PheromoneTableReply;
use aco_testkit::kube::fixtures::*;

use aco_testkit::kube::kwok::FATE;
use aco_testkit::kube::reporter_loop::*;
use aco_testkit::kube::serial;
use aco_testkit::kube::wait_for;
use aco_testkit::nodes::name_of;
use aco_testkit::openb::openb_cpu_nodes;
use aco_testkit::pods::edit_spec;
use serde_json::Value;

/// The failures recorded on `node` in a colony table (0 when it has no trail).
fn failures(table: &PheromoneTableReply, node: &str) -> f64 {
    table
        .nodes
        .iter()
        .find(|e| e.node == node)
        .map_or(0.0, |e| e.failures)
}

// ---------------------------------------------------------------------------------------------
// 4: outcomes lower a node's reliability; the next latency-critical pods avoid it

#[tokio::test]
async fn failing_pods_lower_reliability_and_latency_critical_pods_move_away() {
    let _serial = serial();
    // names[0] is cheaper: without outcomes every pod prefers it.
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(2)
        .enumerate()
        .map(|(i, n)| kwok_node(label_node(n, if i == 0 { 0.5 } else { 1.0 }, 300, false)))
        .collect();
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let lp = Loop::start(&nodes, false).await;
    let kube = lp.kube();
    kube.create_namespace("jobs").await;
    // The crashing pods are one workload (label `app: crash`): an application error is the
    // node's once the workload fails twice on it and nowhere else (crates/reporter/src/outcome.rs).
    let mut reporter = lp.start_reporter(
        "reporter",
        &["--no-node-metrics", "--workload-label", "app"],
    );
    lp.wait_nodes_reported(&mut reporter, nodes.len()).await;

    let probe = with_uid(latency_critical("jobs", "probe", None), "probe-uid");
    let before = lp.scores(&probe, &names).await;
    assert!(
        before[&names[0]] > before[&names[1]],
        "the cheaper node should win at first: {before:?}"
    );

    // Pods that fail (kwok: phase Failed, container Error exit 1) one at a time, so that each
    // is scored while the previous failures are known; they land on the cheap node.
    let mut failed_on_cheap = 0;
    for i in 0..12 {
        let p = pod(
            "jobs",
            &format!("crash-{i}"),
            PodOpts {
                cpu: "100m",
                memory: "64Mi",
                labels: vec![("app", "crash".into())],
                annotations: vec![(FATE, "failed".into())],
                ..Default::default()
            },
        );
        let p = edit_spec(p, |spec| spec.restart_policy = Some("Never".into()));
        kube.create_pod(&p).await;
        let node = kube
            .wait_bound("jobs", &format!("crash-{i}"), BIND_TIMEOUT)
            .await;
        let name = format!("crash-{i}");
        wait_for(&format!("{name} Failed"), Duration::from_secs(60), || {
            let kube = kube.clone();
            let name = name.clone();
            async move {
                let phase = kube.pod("jobs", &name).await.status?.phase;
                (phase.as_deref() == Some("Failed")).then_some(())
            }
        })
        .await;
        if node == names[0] {
            failed_on_cheap += 1;
        }
        let table = lp.table("jobs").await;
        // Counts fade with OUTCOME_HALF_LIFE_MS (1 h): minutes fade an outcome by far less than
        // half of one, so the rounded count is the outcomes recorded.
        let failed = |n: &str| failures(&table, n).round();
        // Wait for this pod's outcome to be recorded before the next one is scored.
        // The first failure stays undecided until the second one on the same node.
        let want = if failed_on_cheap >= 2 {
            failed_on_cheap as f64
        } else {
            0.0
        };
        if failed(&names[0]) < want {
            wait_for(
                &format!("outcome of {name}"),
                Duration::from_secs(60),
                || {
                    let lp = &lp;
                    let n0 = names[0].clone();
                    async move {
                        let t = lp.table("jobs").await;
                        (failures(&t, &n0).round() >= want).then_some(())
                    }
                },
            )
            .await;
        }
        let s = lp.scores(&probe, &names).await;
        if s[&names[0]] < s[&names[1]] {
            break;
        }
    }
    // Two at least: the first failure is undecided until the second on the same node
    // (attribution), and η prices a latency-critical pod's failure risk at SLA_VIOLATION_COST,
    // so the second decided failure already outweighs the price difference.
    assert!(
        failed_on_cheap >= 2,
        "the failing pods should have landed on the cheap node first ({failed_on_cheap})"
    );
    let after = lp.scores(&probe, &names).await;
    assert!(
        after[&names[0]] < after[&names[1]],
        "after {failed_on_cheap} failures the cheap node should lose: {after:?}"
    );
    let t = lp.table("jobs").await;
    eprintln!(
        "after {failed_on_cheap} failures: scores {after:?}, table {:?}",
        t.nodes
    );

    let lcs: Vec<Value> = (0..3)
        .map(|i| latency_critical("jobs", &format!("lc-{i}"), None))
        .collect();
    let created = create_pods(kube, &lcs).await;
    let placed = kube.wait_all_bound("jobs", &created, BIND_TIMEOUT).await;
    assert!(
        placed.iter().all(|n| *n == names[1]),
        "latency-critical pods should avoid the failing node: {placed:?}"
    );
    assert!(
        reporter
            .metric("aco_reporter_reports_sent_total{kind=\"outcomes\"}")
            .await
            >= 1.0
    );
}
