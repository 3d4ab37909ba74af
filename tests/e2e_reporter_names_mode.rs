//! End-to-end, the reporter's closed loop: names mode schedules correctly (GPU model, latency,
//! headroom) on the reporter's facts only, and a tenant's trail moves only after real bindings,
//! one deposit per pod bound through the extender.
//!
//! The closed loop (`aco_testkit::kube::reporter_loop::Loop`), with real moving parts and no test
//! code standing in for the reporter: kube-apiserver + etcd + the second kube-scheduler (names
//! mode, `nodeCacheCapable: true`) + kwok (fake kubelets: heartbeats, pods Running, usage from pod
//! annotations, pod fates) + metrics-server (the real `v1beta1.metrics.k8s.io` APIService, scraping
//! kwok) + **the `aco-reporter` binary** + the Worker over HTTPS on Miniflare. Nothing here calls
//! `PUT /v1/nodes` or `POST /v1/placements`: every fact and every deposit the Worker has came from
//! the reporter watching the cluster. Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use std::collections::BTreeMap;
use std::time::Duration;

use aco_testkit::kube::fixtures::*;

use aco_testkit::kube::reporter_loop::*;
use aco_testkit::kube::serial;
use aco_testkit::kube::wait_for;
use aco_testkit::nodes::{allocatable_of, name_of};
use aco_testkit::openb::pick_gpu_nodes;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// 1 + 2: names mode on the reporter's facts; trails move only with real bindings

#[tokio::test]
async fn names_mode_schedules_on_reporter_facts_and_deposits_equal_bindings() {
    let _serial = serial();
    let nodes: Vec<Value> = pick_gpu_nodes(&["V100M16", "V100M16", "T4", "T4"])
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            kwok_node(label_node(
                n,
                1.0 + i as f64 * 0.5,
                if i % 2 == 0 { 200 } else { 3_000 },
                false,
            ))
        })
        .collect();
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let lp = Loop::start(&nodes, false).await;
    let kube = lp.kube();
    kube.create_namespace("team-a").await;

    // Before the reporter runs the Worker knows no node: names mode rejects every one.
    let probe = pod("team-a", "probe", PodOpts::default());
    let before = lp
        .filter(&with_uid(probe.clone(), "probe-uid"), &names)
        .await;
    assert_eq!(before.node_names, Some(vec![]), "{before:?}");

    let mut reporter = lp.start_reporter("reporter", &["--no-node-metrics"]);
    lp.wait_nodes_reported(&mut reporter, nodes.len()).await;
    // The one-verb install (prioritize only): the reporter's admission webhook writes the GPU
    // model and latency constraints into the pods' node affinity.
    lp.env.install_webhook_for(&reporter).await;
    assert!(
        lp.table("team-a").await.nodes.is_empty(),
        "no trail before any binding"
    );

    // GPU model and latency: enforced by kube-scheduler on the webhook's affinity, scored by
    // the Worker on reported facts.
    let gpu = pod(
        "team-a",
        "gpu-v100",
        PodOpts {
            gpus: 1,
            annotations: vec![("scheduling.aco/gpu-models", "V100M16".into())],
            ..Default::default()
        },
    );
    let lc = latency_critical("team-a", "lc-near", Some(1_000));
    let batch: Vec<Value> = (0..4)
        .map(|i| pod("team-a", &format!("batch-{i}"), PodOpts::default()))
        .collect();
    let mut all = vec![gpu, lc];
    all.extend(batch);
    let created = create_pods(kube, &all).await;
    let placed = kube.wait_all_bound("team-a", &created, BIND_TIMEOUT).await;
    let by_name: BTreeMap<String, &Value> = nodes.iter().map(|n| (name_of(n), n)).collect();
    assert_eq!(
        label(by_name[&placed[0]], "aco/gpu-type"),
        "V100M16",
        "gpu pod on {}",
        placed[0]
    );
    let lat: u32 = label(by_name[&placed[1]], "aco/latency-us")
        .parse()
        .unwrap();
    assert!(
        lat <= 1_000,
        "latency-critical pod on {} at {lat} µs",
        placed[1]
    );

    // Deposits: exactly the pods bound through the extender (6), none for a pod bound directly.
    let other = bound_elsewhere("team-a", "direct", &names[0], "100m", "10m");
    kube.create_pod(&other).await;
    lp.wait_deposits("team-a", created.len() as u64, Duration::from_secs(60))
        .await;
    let table = lp.table("team-a").await;
    // Confirmed, each once; the pods still run, so no outcome has reached the trail yet.
    assert_eq!(
        (table.confirmed_pods, table.nodes.len()),
        (created.len() as u64, 0),
        "{table:?}"
    );
    assert!(
        reporter
            .metric("aco_reporter_reports_sent_total{kind=\"placements\"}")
            .await
            >= created.len() as f64
    );

    // Headroom from the reporter's `requested`: fill one node with directly bound pods; the
    // Worker then refuses it for a pod that no longer fits — a reason only facts can give.
    let full = &names[2];
    let alloc_cpu = allocatable_of(by_name[full], "cpu").expect("allocatable cpu");
    let filler = bound_elsewhere("team-a", "filler", full, &alloc_cpu, "10m");
    kube.create_pod(&filler).await;
    let big = with_uid(
        pod(
            "team-a",
            "big",
            PodOpts {
                cpu: "2",
                ..Default::default()
            },
        ),
        "big-uid",
    );
    let rejected = wait_for(
        "the Worker to see the filled node",
        Duration::from_secs(30),
        || {
            let (big, names) = (big.clone(), names.clone());
            let lp = &lp;
            async move {
                let r = lp.filter(&big, &names).await;
                r.failed_nodes.get(full.as_str()).cloned()
            }
        },
    )
    .await;
    assert!(
        rejected.to_lowercase().contains("cpu"),
        "reason for {full}: {rejected}"
    );
    reporter.server.assert_running();
}
