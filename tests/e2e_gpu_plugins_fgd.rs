//! End-to-end, AcoFGD (profile `aco-fgd`, FGD alone scores): pod after pod, the node
//! kube-scheduler binds is one the simulator's FGD scores highest for the cluster's state at that
//! moment, and a share takes the GPU the simulator's FGD picks.
//!
//! `aco-kube-scheduler` is kube-scheduler v1.37.2 with the AcoGpuDevices and AcoFGD plugins
//! (scripts/kube/plugins), here against a real etcd + kube-apiserver, with the sample
//! configuration scripts/kube/plugins/scheduler-config.yaml as committed. Nodes are Node objects
//! with OpenB's allocatable and HAMi's device annotation; no kubelet runs (binding is the end).
//! Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use aco_core::heuristic::PodShape;
use aco_sim::saturate::policy::fgd::{fgd_score, state_verdict, FgdMemo, NodeFree, ShareGpu};
use aco_testkit::kube::aco_scheduler::{gpu_node, sample_config, HAMI_POD_ALLOCATED};
use aco_testkit::kube::gpu_devices::*;
use aco_testkit::kube::serial;
use aco_testkit::kube::ControlPlane;
use serde_json::json;

/// The aco-fgd profile's typical shapes, as the scheduler read them (YAML anchors resolved).
fn sample_shapes() -> Vec<PodShape> {
    let text = sample_config(std::path::Path::new("/dev/null"));
    let doc: SchedulerProfiles = serde_yaml::from_str(&text).unwrap();
    let profile = doc
        .profiles
        .into_iter()
        .find(|p| p.scheduler_name == "aco-fgd")
        .expect("an aco-fgd profile");
    let args = profile
        .plugin_config
        .into_iter()
        .find(|c| c.name == "AcoFGD")
        .expect("AcoFGD args");
    let args: FgdArgs = serde_yaml::from_value(args.args).expect("AcoFGD's args");
    args.typical_shapes
        .into_iter()
        .map(|s| PodShape {
            cpu_milli: s.cpu_milli,
            num_gpu: s.num_gpu,
            gpu_milli: s.gpu_milli,
            gpu_models: s.gpu_models,
            freq: s.frequency,
        })
        .collect()
}

/// The profiles of a KubeSchedulerConfiguration, as much as the test reads.
#[derive(serde::Deserialize)]
struct SchedulerProfiles {
    profiles: Vec<Profile>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Profile {
    scheduler_name: String,
    #[serde(default)]
    plugin_config: Vec<PluginConfig>,
}

#[derive(serde::Deserialize)]
struct PluginConfig {
    name: String,
    /// Each plugin's own arguments.
    args: serde_yaml::Value,
}

/// AcoFGD's arguments (scripts/kube/plugins).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct FgdArgs {
    typical_shapes: Vec<ShapeArg>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShapeArg {
    cpu_milli: i64,
    num_gpu: u32,
    gpu_milli: u32,
    gpu_models: Option<Vec<String>>,
    frequency: f64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fgd_binds_where_the_simulators_fgd_scores_highest() {
    let _serial = serial();
    let shapes = sample_shapes();
    assert!(shapes.len() > 10, "{} shapes", shapes.len());
    let cp = ControlPlane::start().await;
    let kube = &cp.kube;
    kube.create_namespace(NS).await;
    let nodes = [
        ("fgd-0", "V100M32", 8, 96_000),
        ("fgd-1", "T4", 2, 32_000),
        ("fgd-2", "P100", 4, 64_000),
        ("fgd-3", "G2", 1, 16_000),
        ("fgd-4", "V100M16", 8, 96_000),
        ("fgd-5", "T4", 4, 48_000),
    ];
    for (n, model, gpus, cpu) in nodes {
        kube.create_node(&gpu_node(n, model, gpus, cpu, &[(GROUP, "fgd")]))
            .await;
    }
    let names: Vec<&str> = nodes.iter().map(|n| n.0).collect();
    // Some nodes part-used before the scheduler starts: bound pods with their devices written
    // as AcoGpuDevices writes them, which it must read back.
    let placed = [
        (
            "pre-0",
            "fgd-0",
            3152,
            Ask::Share(810),
            "fgd-0-gpu0,NVIDIA,12960,81:;",
        ),
        (
            "pre-1",
            "fgd-0",
            11300,
            Ask::Whole(2),
            "fgd-0-gpu1,NVIDIA,16000,100:fgd-0-gpu2,NVIDIA,16000,100:;",
        ),
        (
            "pre-2",
            "fgd-2",
            11908,
            Ask::Share(470),
            "fgd-2-gpu3,NVIDIA,7520,47:;",
        ),
        (
            "pre-3",
            "fgd-1",
            8000,
            Ask::Share(320),
            "fgd-1-gpu1,NVIDIA,5120,32:;",
        ),
    ];
    for (name, node, cpu, ask, allocated) in placed {
        kube.create_pod(&gpu_pod(PodSpec {
            name,
            scheduler: "aco-fgd",
            group: "fgd",
            cpu_milli: cpu,
            ask,
            annotations: json!({HAMI_POD_ALLOCATED: allocated}),
            node_name: Some(node),
        }))
        .await;
    }
    let _scheduler = start(&cp, "aco-kube-scheduler").await;

    // OpenB-like pods, one at a time: each lands where the Rust FGD scores the cluster highest.
    let arrivals = [
        (3152, Ask::Share(810)),
        (11908, Ask::Share(470)),
        (11300, Ask::Whole(1)),
        (4000, Ask::Share(320)),
        (12500, Ask::Cpu),
        (8000, Ask::Whole(2)),
        (11908, Ask::Share(650)),
        (4000, Ask::Share(230)),
        (3152, Ask::Share(810)),
        (9810, Ask::Whole(1)),
        (6000, Ask::Share(460)),
        (32000, Ask::Cpu),
        (16000, Ask::Whole(4)),
        (8000, Ask::Share(470)),
        (18708, Ask::Whole(1)),
        (4152, Ask::Share(550)),
    ];
    let (mut unique, mut discriminating) = (0, 0);
    for (i, (cpu, ask)) in arrivals.into_iter().enumerate() {
        let states = node_states(kube, &names).await;
        let pod = ask.gpus(cpu);
        let verdicts: Vec<(i64, Option<usize>)> = states
            .iter()
            .map(|s| {
                let node = NodeFree {
                    model: s.model.as_deref(),
                    cpu_left: s.cpu_free,
                    gpu_free: &s.gpu_free,
                };
                match state_verdict(
                    &mut FgdMemo::new(),
                    node,
                    pod,
                    &shapes,
                    ShareGpu::FirstBestScore,
                ) {
                    Some((d, gpu)) => (fgd_score(d), gpu),
                    None => (-1, None), // not feasible: filtered before scoring
                }
            })
            .collect();
        let best = verdicts.iter().map(|v| v.0).max().unwrap();
        assert!(best >= 0, "arrival {i} ({ask:?}) fits no node");
        // The check says something only where some feasible node scores below the best.
        discriminating += usize::from(verdicts.iter().any(|v| (0..best).contains(&v.0)));
        let argmax: Vec<&str> = (0..states.len())
            .filter(|j| verdicts[*j].0 == best)
            .map(|j| names[j])
            .collect();
        unique += usize::from(argmax.len() == 1);
        eprintln!(
            "arrival {i} {ask:?}: scores {:?}",
            verdicts.iter().map(|v| v.0).collect::<Vec<_>>()
        );

        let name = format!("arrival-{i}");
        kube.create_pod(&gpu_pod(PodSpec {
            name: &name,
            scheduler: "aco-fgd",
            group: "fgd",
            cpu_milli: cpu,
            ask,
            annotations: json!({}),
            node_name: None,
        }))
        .await;
        let (node, bound) = bound_pod(kube, &name).await;
        let scores: Vec<(&str, i64)> = names
            .iter()
            .copied()
            .zip(verdicts.iter().map(|v| v.0))
            .collect();
        assert!(
            argmax.contains(&node.as_str()),
            "arrival {i} ({ask:?}) bound on {node}; Rust FGD scores {scores:?}"
        );
        let j = names.iter().position(|n| *n == node).unwrap();
        match ask {
            Ask::Cpu => assert_eq!(annotation(&bound, HAMI_POD_ALLOCATED), None),
            Ask::Share(_) => {
                let want = verdicts[j].1.expect("a share's GPU");
                assert_eq!(
                    allocated_gpus(&bound),
                    vec![want],
                    "arrival {i} on {node}: free {:?}",
                    states[j].gpu_free
                );
            }
            Ask::Whole(k) | Ask::CountOnly(k) => {
                let want: Vec<usize> = (0..states[j].gpu_free.len())
                    .filter(|g| states[j].gpu_free[*g] == 1000)
                    .take(k as usize)
                    .collect();
                assert_eq!(allocated_gpus(&bound), want, "arrival {i} on {node}");
            }
        }
    }
    eprintln!(
        "{} arrivals: {unique} with one best node, {discriminating} with a feasible node scored lower",
        arrivals.len()
    );
    assert!(
        discriminating >= 5 && unique >= 4,
        "only {discriminating} arrivals had a feasible node scored below the best ({unique} one best node): the check says little"
    );
}
