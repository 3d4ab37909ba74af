//! End-to-end, AcoGpuDevices' device accounting (profile `default-scheduler`, kube-scheduler's
//! own plugins and weights): shares never cross a device though the node's aggregate would allow
//! it, whole GPUs need wholly free devices, the GPU-model annotation holds, every placement is
//! written on the pod in the form the reporter reads, and a restarted scheduler reads them back.
//!
//! `aco-kube-scheduler` is kube-scheduler v1.37.2 with the AcoGpuDevices and AcoFGD plugins
//! (scripts/kube/plugins), here against a real etcd + kube-apiserver, with the sample
//! configuration scripts/kube/plugins/scheduler-config.yaml as committed. Nodes are Node objects
//! with OpenB's allocatable and HAMi's device annotation; no kubelet runs (binding is the end).
//! Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use std::collections::BTreeMap;

use aco_reporter::k8s_openapi::api::core::v1::Pod;
use aco_testkit::kube::aco_scheduler::gpu_node;
use aco_testkit::kube::gpu_devices::*;
use aco_testkit::kube::serial;
use aco_testkit::kube::{wait_for, ControlPlane, Kube};
use aco_testkit::nodes::name_of;
use aco_testkit::pods::node_of;
use serde_json::{json, Value};

/// Creates `pod` and waits until kube-scheduler refuses it for a reason containing `reason`.
async fn refused(kube: &Kube, pod: &Value, reason: &str) {
    let name = name_of(pod);
    kube.create_pod(pod).await;
    let why = kube.wait_unschedulable(NS, &name, BIND_TIMEOUT).await;
    assert!(why.contains(reason), "{name}: {why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_are_accounted_per_gpu_and_survive_a_restart() {
    let _serial = serial();
    let cp = ControlPlane::start().await;
    let kube = &cp.kube;
    kube.create_namespace(NS).await;
    for n in ["dev-0", "dev-1"] {
        kube.create_node(&gpu_node(n, "T4", 2, 32_000, &[(GROUP, "devices")]))
            .await;
    }
    let scheduler = start(&cp, "aco-kube-scheduler").await;
    let pod = |name: &str, ask: Ask, annotations: Value| {
        gpu_pod(PodSpec {
            name,
            scheduler: "default-scheduler",
            group: "devices",
            cpu_milli: 1000,
            ask,
            annotations,
            node_name: None,
        })
    };

    // Five shares of 600 on two nodes of two GPUs: each node's aggregate (2,000 milli) holds
    // three, each GPU only one.
    for i in 0..5 {
        kube.create_pod(&pod(&format!("share600-{i}"), Ask::Share(600), json!({})))
            .await;
    }
    let (bound, pending) = wait_for("4 shares of 600 bound, 1 refused", BIND_TIMEOUT, || async {
        let pods = kube.typed_pods(NS).await;
        let bound: Vec<Pod> = pods
            .iter()
            .filter(|p| node_of(p).is_some())
            .cloned()
            .collect();
        let conditions = |p: &Pod| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default()
        };
        let pending: Vec<String> = pods
            .iter()
            .filter(|p| {
                conditions(p).iter().any(|c| {
                    c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable")
                })
            })
            .map(|p| {
                conditions(p)
                    .first()
                    .and_then(|c| c.message.clone())
                    .unwrap_or_default()
            })
            .collect();
        (bound.len() == 4 && pending.len() == 1).then_some((bound, pending))
    })
    .await;
    assert!(
        pending[0].contains("no GPU with 600 milli free"),
        "{}",
        pending[0]
    );
    let mut devices: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for p in &bound {
        devices
            .entry(node_of(p).expect("bound").to_owned())
            .or_default()
            .extend(allocated_gpus(p));
    }
    for (node, gpus) in &devices {
        let mut gpus = gpus.clone();
        gpus.sort();
        assert_eq!(gpus, vec![0, 1], "{node}: one share of 600 per GPU");
    }
    // The reporter reads the annotations as the Worker would be told: 400 free on every GPU.
    for s in node_states(kube, &["dev-0", "dev-1"]).await {
        assert_eq!(s.gpu_free, vec![400, 400], "{}", s.name);
    }

    // A whole GPU asked by count alone: NodeResourcesFit sees both counts free, no device is.
    let whole = pod("whole-1", Ask::CountOnly(1), json!({}));
    refused(kube, &whole, "fewer than 1 GPUs wholly free").await;

    // The GPU-model annotation: no V100M32 here; T4 is.
    let v100 = json!({"scheduling.aco/gpu-models": "V100M32"});
    refused(
        kube,
        &pod("v100", Ask::Share(300), v100),
        "GPU model not among the pod's",
    )
    .await;
    kube.create_pod(&pod(
        "t4",
        Ask::Share(300),
        json!({"scheduling.aco/gpu-models": "V100M16|T4"}),
    ))
    .await;
    let (t4_node, _) = bound_pod(kube, "t4").await;

    // A new scheduler process knows only what the pods say: three GPUs with 400 free, one with
    // 100. A share of 500 fits nowhere; one of 400 best-fits a GPU with exactly 400.
    drop(scheduler);
    let _scheduler = start(&cp, "aco-kube-scheduler-2").await;
    let big = pod("after-restart-500", Ask::Share(500), json!({}));
    refused(kube, &big, "no GPU with 500 milli free").await;
    kube.create_pod(&pod("after-restart-400", Ask::Share(400), json!({})))
        .await;
    let (node, _) = bound_pod(kube, "after-restart-400").await;
    let states = node_states(kube, &["dev-0", "dev-1"]).await;
    let free: BTreeMap<&str, Vec<u32>> = states
        .iter()
        .map(|s| (s.name.as_str(), s.gpu_free.clone()))
        .collect();
    let mut all: Vec<u32> = free.values().flatten().copied().collect();
    all.sort();
    assert_eq!(
        all,
        vec![0, 100, 400, 400],
        "free shares after the restart: {free:?}"
    );
    assert!(free[t4_node.as_str()].contains(&100), "{free:?}");
    assert!(free[node.as_str()].contains(&0), "{free:?}");
}
