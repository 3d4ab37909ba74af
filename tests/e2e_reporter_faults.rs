//! End-to-end, the reporter's closed loop under faults: the Worker unreachable for a while, the
//! reporter killed and restarted, the kube-apiserver restarted — every placement is deposited
//! exactly once.
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

use aco_testkit::kube::fixtures::*;

use aco_testkit::kube::reporter_loop::*;
use aco_testkit::kube::serial;
use aco_testkit::kube::{wait_for, ProxyMode};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// 5: faults — Worker unreachable, reporter killed and restarted: exactly once

#[tokio::test]
async fn worker_outage_and_reporter_restart_lose_nothing_and_double_nothing() {
    let _serial = serial();
    let nodes: Vec<Value> = openb_kwok_nodes(3);
    let mut lp = Loop::start(&nodes, false).await;
    // The reporter reaches the Worker through a proxy we can cut; kube-scheduler does not, so
    // decisions are still made (and remembered) while the reporter cannot report.
    let upstream = aco_testkit::kube::host_port(&lp.env.api.base);
    let proxy = lp
        .env
        .cp
        .start_proxy("reporter-proxy", &upstream, Duration::ZERO);
    lp.reporter_worker_url = format!("https://{}", proxy.addr);
    let kube = lp.kube();
    kube.create_namespace("t").await;
    let mut reporter = lp.start_reporter("reporter", &["--no-node-metrics"]);
    lp.wait_nodes_reported(&mut reporter, nodes.len()).await;

    let first: Vec<Value> = (0..5)
        .map(|i| pod("t", &format!("a-{i}"), PodOpts::default()))
        .collect();
    let first = create_pods(kube, &first).await;
    kube.wait_all_bound("t", &first, BIND_TIMEOUT).await;
    lp.wait_deposits("t", 5, Duration::from_secs(60)).await;

    // The Worker is unreachable for the reporter: pods keep binding, reports queue and retry.
    proxy.set_mode(ProxyMode::Refuse).await;
    let during: Vec<Value> = (0..5)
        .map(|i| pod("t", &format!("b-{i}"), PodOpts::default()))
        .collect();
    let during = create_pods(kube, &during).await;
    kube.wait_all_bound("t", &during, BIND_TIMEOUT).await;
    wait_for(
        "failed deliveries while the Worker is unreachable",
        Duration::from_secs(60),
        || async {
            (reporter
                .metric("aco_reporter_reports_failed_total{kind=\"placements\"}")
                .await
                >= 2.0)
                .then_some(())
        },
    )
    .await;
    assert!(
        reporter.metric("aco_reporter_queue_depth").await >= 1.0,
        "reports should wait in the queue"
    );
    assert_eq!(
        lp.deposits("t").await,
        5,
        "nothing arrives while the Worker is unreachable"
    );
    proxy.set_mode(ProxyMode::Pass).await;
    lp.wait_deposits("t", 10, Duration::from_secs(60)).await;

    // Killed mid-run (SIGKILL: no graceful flush); pods bind while it is down; a new process
    // re-derives what may be unreported from the API server. The Worker counts the repeats as
    // duplicates and deposits each pod once.
    reporter.server.kill();
    let gap: Vec<Value> = (0..5)
        .map(|i| pod("t", &format!("c-{i}"), PodOpts::default()))
        .collect();
    let gap = create_pods(kube, &gap).await;
    kube.wait_all_bound("t", &gap, BIND_TIMEOUT).await;
    let dup_before = lp.table("t").await.counters.duplicate_reports;
    let mut restarted = lp.start_reporter("reporter-2", &["--no-node-metrics"]);
    lp.wait_nodes_reported(&mut restarted, nodes.len()).await;
    lp.wait_deposits("t", 15, Duration::from_secs(60)).await;
    // The restarted reporter re-sent the ten placements the Worker already had.
    wait_for(
        "the re-sent placements counted as duplicates",
        Duration::from_secs(30),
        || async {
            let d = lp.table("t").await.counters.duplicate_reports;
            (d >= dup_before + 10).then_some(d)
        },
    )
    .await;
    assert_eq!(lp.deposits("t").await, 15);

    // kube-apiserver restarted: every watch breaks; the reporter's resume, and pods bound
    // afterwards are reported (once).
    lp.env.cp.restart_apiserver().await;
    let kube = lp.kube();
    let after: Vec<Value> = (0..5)
        .map(|i| pod("t", &format!("d-{i}"), PodOpts::default()))
        .collect();
    let after = create_pods(kube, &after).await;
    kube.wait_all_bound("t", &after, BIND_TIMEOUT).await;
    lp.wait_deposits("t", 20, Duration::from_secs(90)).await;
    restarted.server.assert_running();
    eprintln!(
        "pod watch errors across the apiserver restart: {}",
        restarted
            .metric("aco_reporter_watch_errors_total{kind=\"pods\"}")
            .await
    );
}
