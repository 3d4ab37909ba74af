//! End-to-end with kube-scheduler: GPU pods land on GPU nodes of an allowed model, CPU pods
//! anywhere that fits; latency targets hold, and an impossible target leaves the pod Pending with
//! our reason. Both with `nodeCacheCapable: false` (node objects) and `true` (names + facts), in
//! the two-verb install (`k8s/scheduler-config-filter.yaml`, the Worker's filter) and the
//! one-verb default (`k8s/scheduler-config.yaml` + the reporter's admission webhook).
//!
//! A real kube-scheduler (built from k8s.io/kubernetes by `scripts/build-kube`) schedules pods
//! through the Worker (Miniflare, HTTPS with a private CA) using the shipped
//! `k8s/scheduler-config.yaml`. Nodes are Node objects from the OpenB trace
//! (`../shared/data/openb/`) with `status.allocatable` patched in (no kubelet) plus the labels the
//! Worker reads. The real `aco-reporter` binary runs beside them (`Env::start_with_reporter`):
//! node facts and placements reach the Worker only from it, never from test code. Run with
//! `scripts/e2e` (builds the control plane and the Worker first).

#![allow(clippy::await_holding_lock)]

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use aco_testkit::k8s_openapi::api::core::v1::Event;
use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::name_of;

use aco_testkit::kube::serial;
use aco_testkit::kube::{typed, Kube};
use serde_json::Value;

const BIND_TIMEOUT: Duration = Duration::from_secs(60);

/// The FailedScheduling events of a pod (waits until at least one is there).
async fn failed_scheduling_messages(kube: &Kube, ns: &str, name: &str) -> Vec<String> {
    aco_testkit::kube::wait_for(
        &format!("FailedScheduling event of {ns}/{name}"),
        BIND_TIMEOUT,
        || async move {
            let msgs: Vec<String> = kube
                .pod_events(ns, name)
                .await
                .iter()
                .map(typed::<Event>)
                .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
                .map(|e| e.message.unwrap_or_default())
                .collect();
            (!msgs.is_empty()).then_some(msgs)
        },
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// 1, 2, 6: hard constraints, in both installs and both node modes

/// The constraints in both installs: two verbs (`k8s/scheduler-config-filter.yaml`: the
/// Worker's filter decides, its reasons in the Pending pods' events) and one verb (the shipped
/// `k8s/scheduler-config.yaml` with the reporter's admission webhook, `k8s/webhook/webhook.yaml`:
/// kube-scheduler decides on the required node affinity the webhook wrote), each in both node
/// modes. The same pods land on the same kinds of node; an impossible one stays Pending with
/// a reason a user can read (one verb: "didn't match Pod's node affinity/selector", and the
/// pod's annotation saying what it requires).
#[tokio::test]
async fn constraints_hold_in_both_installs_and_node_modes() {
    let _serial = serial();
    let env = Env::start_with_reporter().await;
    let kube = env.kube();
    let nodes = constraint_nodes();
    env.add_nodes(&nodes).await;
    let by_name: HashMap<String, Value> = nodes.iter().map(|n| (name_of(n), n.clone())).collect();
    let model = |node: &str| label(&by_name[node], "aco/gpu-type");
    let latency = |node: &str| {
        label(&by_name[node], "aco/latency-us")
            .parse::<u32>()
            .unwrap()
    };
    let is_gpu = |node: &str| !model(node).is_empty();

    // Two verbs first: the webhook, once registered, applies to every later pod.
    for (one_verb, node_cache_capable) in
        [(false, false), (false, true), (true, false), (true, true)]
    {
        if one_verb && !node_cache_capable {
            env.install_webhook().await;
        }
        let ns = format!(
            "{}-{}",
            if one_verb { "one-verb" } else { "two-verbs" },
            if node_cache_capable {
                "names"
            } else {
                "objects"
            }
        );
        kube.create_namespace(&ns).await;
        let config = if one_verb {
            env.worker_config(node_cache_capable)
        } else {
            env.worker_config_filter(node_cache_capable)
        };
        let mut sched = env
            .cp
            .start_scheduler(&format!("scheduler-{ns}"), &config)
            .await;

        let v100 = || ("scheduling.aco/gpu-models", "V100M16|V100M32".to_owned());
        let mut pods = Vec::new();
        for i in 0..5 {
            pods.push(pod(
                &ns,
                &format!("gpu-v100-{i}"),
                PodOpts {
                    gpus: 1,
                    annotations: vec![v100()],
                    ..Default::default()
                },
            ));
        }
        for i in 0..3 {
            pods.push(pod(
                &ns,
                &format!("gpu-any-{i}"),
                PodOpts {
                    gpus: 1,
                    ..Default::default()
                },
            ));
        }
        for i in 0..4 {
            pods.push(pod(
                &ns,
                &format!("cpu-{i}"),
                PodOpts {
                    cpu: "2",
                    memory: "4Gi",
                    ..Default::default()
                },
            ));
        }
        for i in 0..4 {
            pods.push(pod(
                &ns,
                &format!("latency-{i}"),
                PodOpts {
                    labels: vec![("aco/workload-type", "latency-critical".into())],
                    annotations: vec![("scheduling.aco/latency-target-us", "200".into())],
                    ..Default::default()
                },
            ));
        }
        let names = create_pods(kube, &pods).await;
        // Impossible constraints: no A100 anywhere; no node within 50 µs.
        kube.create_pod(&pod(
            &ns,
            "gpu-a100",
            PodOpts {
                gpus: 1,
                annotations: vec![("scheduling.aco/gpu-models", "A100".into())],
                ..Default::default()
            },
        ))
        .await;
        kube.create_pod(&pod(
            &ns,
            "latency-impossible",
            PodOpts {
                labels: vec![("aco/workload-type", "latency-critical".into())],
                annotations: vec![("scheduling.aco/latency-target-us", "50".into())],
                ..Default::default()
            },
        ))
        .await;

        let placed = kube.wait_all_bound(&ns, &names, BIND_TIMEOUT).await;
        let placement: BTreeMap<&str, &str> = names
            .iter()
            .map(String::as_str)
            .zip(placed.iter().map(String::as_str))
            .collect();
        eprintln!("{ns}: {placement:#?}");
        for (pod, node) in &placement {
            if pod.starts_with("gpu-v100") {
                assert!(
                    model(node).starts_with("V100"),
                    "{pod} (V100 only) bound to {node} ({})",
                    model(node)
                );
            } else if pod.starts_with("gpu-any") {
                assert!(is_gpu(node), "{pod} (GPU) bound to CPU-only node {node}");
            } else if pod.starts_with("latency") {
                assert!(
                    latency(node) <= 200,
                    "{pod} (target 200 µs) bound to {node} at {} µs",
                    latency(node)
                );
            }
        }

        // 2: Pending. Two verbs: the Worker's FailedAndUnresolvableNodes reasons in status and
        // events. One verb: kube-scheduler's node affinity reason, and the webhook's annotation
        // on the pod (`kubectl describe pod`) naming what it requires, on the labels its
        // affinity reads.
        for (pod, needle, required, key) in [
            ("gpu-a100", "a100", "GPU model A100", "aco/gpu-type"),
            (
                "latency-impossible",
                "latency",
                "latency ≤ 50 µs",
                "aco/latency-us",
            ),
        ] {
            let message = kube.wait_unschedulable(&ns, pod, BIND_TIMEOUT).await;
            let events = failed_scheduling_messages(kube, &ns, pod).await;
            eprintln!("{pod}: condition: {message}\n  events: {events:?}");
            let needle = if one_verb {
                "didn't match pod's node affinity/selector"
            } else {
                needle
            };
            assert!(
                message.to_lowercase().contains(needle),
                "{pod}: condition lacks {needle:?}: {message}"
            );
            assert!(
                events.iter().any(|m| m.to_lowercase().contains(needle)),
                "{pod}: no FailedScheduling event mentions {needle:?}: {events:?}"
            );
            let stored = kube.pod(&ns, pod).await;
            let said = stored
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(WEBHOOK_ANNOTATION))
                .map(String::as_str);
            let affinity = stored
                .spec
                .as_ref()
                .and_then(|s| s.affinity.as_ref())
                .and_then(|a| a.node_affinity.as_ref())
                .map(|a| serde_json::to_string(a).unwrap())
                .unwrap_or_default();
            if one_verb {
                assert!(
                    said.is_some_and(|s| s.starts_with(required)) && affinity.contains(key),
                    "{pod}: annotation {said:?}, affinity {affinity}"
                );
            } else {
                assert_eq!(said, None, "{pod}: no webhook in the two-verb install");
            }
        }
        sched.assert_running();
        drop(sched);
        kube.delete_pods(&ns).await;
    }
}
