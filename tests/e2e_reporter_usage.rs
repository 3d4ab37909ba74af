//! End-to-end, the reporter's closed loop: usage travels kwok → metrics-server → NodeMetrics →
//! reporter → Worker, and latency-critical pods avoid the hot node.
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

use aco_testkit::kube::fixtures::*;

use aco_testkit::kube::kwok::NodeMetrics;
use aco_testkit::kube::reporter_loop::*;
use aco_testkit::kube::serial;
use aco_testkit::kube::wait_for;
use aco_testkit::nodes::{allocatable_of, name_of};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// 3: usage travels to the Worker; latency-critical pods avoid the hot node

#[tokio::test]
async fn usage_reaches_the_worker_and_latency_critical_pods_avoid_the_hot_node() {
    let _serial = serial();
    // Identical nodes: nothing but load tells them apart.
    let nodes: Vec<Value> = openb_kwok_nodes(3);
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let lp = Loop::start(&nodes, true).await;
    let kube = lp.kube();
    kube.create_namespace("svc").await;
    let mut reporter = lp.start_reporter("reporter", &[]);
    lp.wait_nodes_reported(&mut reporter, nodes.len()).await;

    // Make names[0] hot: pods bound directly with tiny requests but high real usage.
    let hot = &names[0];
    let alloc_milli = aco_testkit::kube::kwok::quantity(
        &allocatable_of(&nodes[0], "cpu").expect("allocatable cpu"),
    )
    .unwrap()
        * 1000.0;
    let per_pod = format!("{}m", (alloc_milli * 0.9 / 4.0) as u64);
    for i in 0..4 {
        kube.create_pod(&bound_elsewhere(
            "svc",
            &format!("hog-{i}"),
            hot,
            "10m",
            &per_pod,
        ))
        .await;
    }
    let seen_hot = Instant::now();
    let probe = with_uid(latency_critical("svc", "probe", None), "probe-uid");
    let scores = wait_for(
        "the hot node to score below the others",
        Duration::from_secs(120),
        || {
            let (probe, names) = (probe.clone(), names.clone());
            let lp = &lp;
            async move {
                let s = lp.scores(&probe, &names).await;
                (s[&names[0]] < s[&names[1]] && s[&names[0]] < s[&names[2]]).then_some(s)
            }
        },
    )
    .await;
    eprintln!(
        "usage reached the Worker {:?} after the hogs were created: {scores:?}",
        seen_hot.elapsed()
    );
    let metrics: NodeMetrics = kube
        .get_as(&format!("/apis/metrics.k8s.io/v1beta1/nodes/{hot}"))
        .await
        .unwrap();
    eprintln!("NodeMetrics of {hot}: {:?}", metrics.usage);

    let lcs: Vec<Value> = (0..4)
        .map(|i| latency_critical("svc", &format!("lc-{i}"), None))
        .collect();
    let created = create_pods(kube, &lcs).await;
    let placed = kube.wait_all_bound("svc", &created, BIND_TIMEOUT).await;
    assert!(
        placed.iter().all(|n| n != hot),
        "latency-critical pods on the hot node: {placed:?}"
    );
}
