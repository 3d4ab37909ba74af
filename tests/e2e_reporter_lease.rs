//! End-to-end, the reporter's closed loop with two replicas and a Lease: one reports; kill it and
//! the other takes over.
//!
//! The closed loop (`aco_testkit::kube::reporter_loop::Loop`), with real moving parts and no test
//! code standing in for the reporter: kube-apiserver + etcd + the second kube-scheduler (names
//! mode, `nodeCacheCapable: true`) + kwok (fake kubelets: heartbeats, pods Running, usage from pod
//! annotations, pod fates) + metrics-server (the real `v1beta1.metrics.k8s.io` APIService, scraping
//! kwok) + **the `aco-reporter` binary** + the Worker over HTTPS on Miniflare. Nothing here calls
//! `PUT /v1/nodes` or `POST /v1/placements`: every fact and every deposit the Worker has came from
//! the reporter watching the cluster. Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use std::time::{Duration, Instant};

use aco_testkit::k8s_openapi::api::coordination::v1::Lease;
use aco_testkit::kube::fixtures::*;

use aco_testkit::kube::reporter_loop::*;
use aco_testkit::kube::serial;
use aco_testkit::kube::wait_for;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// 6: two replicas, one leader; kill it and the other takes over

#[tokio::test]
async fn two_replicas_one_reports_and_the_standby_takes_over() {
    let _serial = serial();
    let nodes: Vec<Value> = openb_kwok_nodes(2);
    let lp = Loop::start(&nodes, false).await;
    let kube = lp.kube();
    kube.create_namespace("ha").await;
    // The Lease where the installed reporter keeps it (POD_NAMESPACE): k8s/base/reporter.yaml's Role
    // allows no other namespace, and the reporters run with that RBAC.
    let lease = [
        "--leader-elect",
        "true",
        "--lease-namespace",
        "kube-system",
        "--lease-duration",
        "6s",
        "--lease-grace",
        "4s",
        "--renew-deadline",
        "4s",
        "--no-node-metrics",
    ];
    let mut a = lp.start_reporter(
        "reporter-a",
        &[&lease[..], &["--identity", "reporter-a"]].concat(),
    );
    let mut b = lp.start_reporter(
        "reporter-b",
        &[&lease[..], &["--identity", "reporter-b"]].concat(),
    );

    let holder = wait_for("one leader", Duration::from_secs(60), || async {
        let la = a.metric("aco_reporter_leader").await;
        let lb = b.metric("aco_reporter_leader").await;
        match (la as i64, lb as i64) {
            (1, 0) => Some("reporter-a"),
            (0, 1) => Some("reporter-b"),
            _ => None,
        }
    })
    .await;
    let lease_obj: Lease = kube
        .get_as("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/aco-reporter")
        .await
        .unwrap();
    assert_eq!(
        lease_obj.spec.and_then(|s| s.holder_identity).as_deref(),
        Some(holder)
    );
    let (leader, standby) = if holder == "reporter-a" {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    lp.wait_nodes_reported(leader, nodes.len()).await;

    let first: Vec<Value> = (0..4)
        .map(|i| pod("ha", &format!("a-{i}"), PodOpts::default()))
        .collect();
    let first = create_pods(kube, &first).await;
    kube.wait_all_bound("ha", &first, BIND_TIMEOUT).await;
    lp.wait_deposits("ha", 4, Duration::from_secs(60)).await;
    assert_eq!(
        standby
            .metric("aco_reporter_reports_sent_total{kind=\"placements\"}")
            .await,
        0.0,
        "the standby must not report"
    );
    assert_eq!(
        standby
            .metric("aco_reporter_reports_sent_total{kind=\"nodes\"}")
            .await,
        0.0,
        "the standby must not report"
    );

    // SIGKILL: the lease is not released; the standby takes over when it expires.
    leader.server.kill();
    let killed = Instant::now();
    // Bounded by the lease: 6 s after the last renewal, plus the standby's retry period and a
    // loaded machine's slack. Without a working election this never happens.
    wait_for("the standby to lead", Duration::from_secs(20), || async {
        (standby.metric("aco_reporter_leader").await == 1.0).then_some(())
    })
    .await;
    let takeover = killed.elapsed();
    eprintln!("standby took over {takeover:?} after the leader was killed (lease 6 s)");

    let second: Vec<Value> = (0..4)
        .map(|i| pod("ha", &format!("b-{i}"), PodOpts::default()))
        .collect();
    let second = create_pods(kube, &second).await;
    kube.wait_all_bound("ha", &second, BIND_TIMEOUT).await;
    lp.wait_deposits("ha", 8, Duration::from_secs(60)).await;
    standby.server.assert_running();
}
