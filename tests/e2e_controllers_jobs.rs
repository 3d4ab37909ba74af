//! End-to-end, aco-reporter under real controllers: Jobs. One whose pods fail on one node only
//! (that node charged, no other), one with a native sidecar that exits 143 when the work is done
//! (successes, not failures), running longer on one node (a run-time slowdown reported for that
//! node's pods).
//!
//! The cluster of these tests (`aco_testkit::kube::controllers::Cluster`) is a real one's:
//! kube-apiserver with `--authorization-mode=Node,RBAC` and the ServiceAccount admission plugin,
//! **kube-controller-manager**, kube-scheduler through the Worker, kwok's fake kubelets, and the
//! reporter **installed** from `k8s/` as a user does it, running with the token of its
//! ServiceAccount: a missing verb in the shipped RBAC breaks a watch or the Lease and fails the
//! test. Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use std::time::Duration;

use aco_testkit::k8s_openapi::api::batch::v1::Job;
use aco_testkit::k8s_openapi::api::core::v1::PodStatus;
use aco_testkit::kube::fixtures::*;

use aco_testkit::nodes::{name_of, set_label};
use aco_testkit::openb::openb_cpu_nodes;

use aco_testkit::kube::controllers::*;
use aco_testkit::kube::kwok::{JobStages, JOB};
use aco_testkit::kube::serial;
use aco_testkit::kube::wait_for;
use aco_testkit::pods::node_of;
use serde_json::{json, Value};

/// The reporter's log line of a run-time slowdown (tracing's JSON: the event's fields).
#[derive(serde::Deserialize)]
struct SlowdownLine {
    fields: SlowdownFields,
}

#[derive(serde::Deserialize)]
struct SlowdownFields {
    node: String,
    slowdown: f64,
}

#[allow(clippy::too_many_arguments)]
fn job(
    ns: &str,
    name: &str,
    completions: u32,
    parallelism: u32,
    cpu: &str,
    backoff: u32,
    extra_spec: Value,
) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"completions": completions, "parallelism": parallelism, "backoffLimit": backoff,
                 "template": template(json!({"job": name}), json!({JOB: "run"}), cpu, "Never", extra_spec)}})
}

// ---------------------------------------------------------------------------------------------
// 2. Jobs: failing on one node only; a sidecar's exit at the end; slower on one node

#[tokio::test]
async fn jobs_charge_the_node_they_fail_on_and_report_slowdown_of_the_slow_node() {
    let _serial = serial();
    let shapes = openb_cpu_nodes();
    let mut nodes: Vec<Value> = shapes
        .into_iter()
        .take(4)
        .enumerate()
        // The flaky node is the cheapest: without outcomes every pod would go there.
        .map(|(i, n)| kwok_node(label_node(n, if i == 0 { 0.2 } else { 1.0 }, 300, false)))
        .collect();
    for n in &mut nodes {
        set_label(n, "aco-test/role", "worker");
    }
    set_label(&mut nodes[0], "aco-test/role", "flaky");
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let (flaky, slow) = (names[0].clone(), names[1].clone());
    let stages = JobStages {
        failing: vec![flaky.clone()],
        slow: vec![slow.clone()],
        run_ms: 1_000,
        slow_run_ms: 4_000,
    };
    let c = Cluster::start(&nodes, stages, false, &[]).await;
    let mut r = c
        .reporter("aco-reporter-0", None, &["--metrics-source", "none"])
        .await;
    r.wait_nodes_reported(nodes.len(), Duration::from_secs(90))
        .await;
    let kube = c.kube();

    // A Job whose pods fail on the flaky node and succeed elsewhere.
    c.namespace("batch").await;
    kube.post(
        "/apis/batch/v1/namespaces/batch/jobs",
        &job("batch", "etl", 6, 2, "100m", 8, json!({})),
    )
    .await;
    let charged = wait_for(
        "the flaky node charged for the Job's failures",
        Duration::from_secs(240),
        || async {
            let f = c.failures("batch").await;
            (f.get(&flaky).copied().unwrap_or(0.0) >= 2.0).then_some(f)
        },
    )
    .await;
    assert!(
        charged
            .iter()
            .filter(|(n, _)| **n != flaky)
            .all(|(_, f)| *f == 0.0),
        "only the flaky node: {charged:?}"
    );

    // A Job with a native sidecar, one pod per node at a time (each takes 60% of a node's CPU),
    // kept off the flaky node: slower on the slow node.
    c.namespace("train").await;
    let alloc = allocatable_cpu;
    let cpu = format!(
        "{}m",
        (nodes[1..].iter().map(alloc).fold(f64::MAX, f64::min) * 600.0) as u64
    );
    let sidecar = json!({
        "initContainers": [{"name": "log-shipper", "image": "registry.k8s.io/pause:3.10", "restartPolicy": "Always",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "aco-test/role", "operator": "In", "values": ["worker"]}]}]}}}
    });
    kube.post(
        "/apis/batch/v1/namespaces/train/jobs",
        &job("train", "resnet", 15, 3, &cpu, 0, sidecar),
    )
    .await;
    wait_for(
        "the training Job to complete",
        Duration::from_secs(300),
        || async {
            let j: Job = kube
                .get_as("/apis/batch/v1/namespaces/train/jobs/resnet")
                .await
                .ok()?;
            (j.status?.succeeded? >= 15).then_some(())
        },
    )
    .await;
    let pods = kube.typed_pods("train").await;
    let on_slow = pods
        .iter()
        .filter(|p| node_of(p) == Some(slow.as_str()))
        .count();
    let statuses: Vec<_> = pods
        .iter()
        .map(|p| p.status.clone().unwrap_or_default())
        .collect();
    assert!(statuses
        .iter()
        .all(|s| s.phase.as_deref() == Some("Succeeded")));
    let sidecar_exit = |s: &PodStatus| {
        let init = s.init_container_statuses.as_ref()?.first()?;
        Some(init.state.as_ref()?.terminated.as_ref()?.exit_code)
    };
    assert!(
        statuses.iter().all(|s| sidecar_exit(s) == Some(143)),
        "the sidecars exited 143 at the end"
    );
    // The sidecars' 143 is no failure; the slow node's pods carry a slowdown.
    let t = c.failures("train").await;
    assert!(t.values().all(|f| *f == 0.0), "{t:?}");
    let slowdowns: Vec<(String, f64)> = wait_for(
        "slowdowns reported for the slow node",
        TENANT_WAIT,
        || async {
            let log = r.server.log_text();
            let found: Vec<(String, f64)> = log
                .lines()
                .filter(|l| l.contains("run-time slowdown"))
                .filter_map(|l| {
                    let line: SlowdownLine = serde_json::from_str(l).ok()?;
                    Some((line.fields.node, line.fields.slowdown))
                })
                .collect();
            found.iter().any(|(n, _)| *n == slow).then_some(found)
        },
    )
    .await;
    eprintln!("{on_slow} of 15 pods on the slow node; slowdowns: {slowdowns:?}");
    // kwok's timestamps have whole-second resolution and a run on a fast node is ~1 s, so one
    // fast run can read 2× the median under load: the fast nodes are judged by their median,
    // the slow node by every run.
    let mut fast: Vec<f64> = Vec::new();
    for (node, s) in &slowdowns {
        if *node == slow {
            assert!(*s > 2.0, "slow node {node}: {s}");
        } else {
            fast.push(*s);
        }
    }
    fast.sort_by(f64::total_cmp);
    if let Some(median) = fast.get(fast.len() / 2) {
        assert!(
            *median < 1.5,
            "fast nodes' median slowdown {median}: {fast:?}"
        );
    }
    let succeeded = r
        .metric("aco_reporter_pod_ends_total{verdict=\"succeeded\",reason=\"Succeeded\"}")
        .await;
    assert!(succeeded >= 15.0, "succeeded: {succeeded}");
    r.server.assert_running();
}
