//! End-to-end, AcoGpuDevices with the Worker as extender (the shipped configuration plus
//! AcoGpuDevices): the real reporter turns the pods' device annotations into the per-GPU free
//! shares of the Worker's facts.
//!
//! `aco-kube-scheduler` is kube-scheduler v1.37.2 with the AcoGpuDevices and AcoFGD plugins
//! (scripts/kube/plugins), here against a real etcd + kube-apiserver, with the sample
//! configuration scripts/kube/plugins/scheduler-config.yaml as committed. Nodes are Node objects
//! with OpenB's allocatable and HAMi's device annotation; no kubelet runs (binding is the end).
//! Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use aco_testkit::api::WorkerHttp;
use aco_testkit::kube::aco_scheduler::{gpu_node, with_gpu_devices};
use aco_testkit::kube::fixtures::{label_node, Env};
use aco_testkit::kube::gpu_devices::*;
use aco_testkit::kube::serial;
use aco_testkit::kube::{wait_for, SCHEDULER_NAME};
use serde_json::{json, Value};

/// The chain the Worker's η relies on, with the shipped extender configuration: AcoGpuDevices
/// (added to the shipped profile) writes each placement's devices, the real reporter reads them
/// and the Worker's facts carry every node's per-GPU free shares — what it would get behind HAMi.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workers_facts_carry_the_per_gpu_shares_placed_through_the_extender() {
    let _serial = serial();
    let gpu_resources = "nvidia.com/gpu,alibabacloud.com/gpu-count,alibabacloud.com/gpu-milli";
    let env = Env::start_with_reporter_and_vars(&[], &[("GPU_RESOURCES", gpu_resources)]).await;
    let kube = env.kube();
    kube.create_namespace(NS).await;
    let nodes: Vec<Value> = [("ext-0", 2), ("ext-1", 4)]
        .into_iter()
        .map(|(n, gpus)| {
            let node = gpu_node(n, "T4", gpus, 32_000, &[(GROUP, "ext")]);
            label_node(node, 1.0, 100, false)
        })
        .collect();
    env.add_nodes(&nodes).await;
    let shipped = env.worker_config(false).render(&env.cp.kubeconfig);
    let config = with_gpu_devices(&shipped, &json!({"shareGpuChoice": "bestFit"}));
    let _scheduler = env
        .cp
        .start_aco_scheduler("aco-kube-scheduler-ext", &config)
        .await;

    let asks = [
        Ask::Share(600),
        Ask::Share(470),
        Ask::Whole(2),
        Ask::Share(810),
        Ask::Share(320),
    ];
    for (i, ask) in asks.into_iter().enumerate() {
        let name = format!("ext-{i}");
        kube.create_pod(&gpu_pod(PodSpec {
            name: &name,
            scheduler: SCHEDULER_NAME,
            group: "ext",
            cpu_milli: 2000,
            ask,
            annotations: json!({}),
            node_name: None,
        }))
        .await;
        bound_pod(kube, &name).await;
    }
    let states = node_states(kube, &["ext-0", "ext-1"]).await;
    let used: u32 = states
        .iter()
        .flat_map(|s| &s.gpu_free)
        .map(|f| 1000 - f)
        .sum();
    assert_eq!(
        used,
        600 + 470 + 2000 + 810 + 320,
        "what the annotations hold"
    );
    for s in &states {
        let name = s.name.clone();
        let want = &s.gpu_free;
        wait_for(
            &format!("the Worker's facts for {name} to carry gpuFreeMilli {want:?}"),
            BIND_TIMEOUT,
            || async {
                let facts = env.api.try_node_facts(&name).await?;
                (&facts.gpu_free_milli?.value == want).then_some(())
            },
        )
        .await;
    }
}
