//! End-to-end with kube-scheduler: each tenant's placements are confirmed in its own colony, and
//! teach no trail by themselves (outcomes do: `e2e_reporter_reliability.rs`).
//!
//! A real kube-scheduler (built from k8s.io/kubernetes by `scripts/build-kube`) schedules pods
//! through the Worker (Miniflare, HTTPS with a private CA) using the shipped
//! `k8s/scheduler-config.yaml`. Nodes are Node objects from the OpenB trace
//! (`../shared/data/openb/`) with `status.allocatable` patched in (no kubelet) plus the labels the
//! Worker reads. The real `aco-reporter` binary runs beside them (`Env::start_with_reporter`):
//! node facts and placements reach the Worker only from it, never from test code. Run with
//! `scripts/e2e` (builds the control plane and the Worker first).

#![allow(clippy::await_holding_lock)]

use std::collections::BTreeMap;
use std::time::Duration;

use aco_testkit::api::WorkerHttp;

use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::name_of;

use aco_testkit::kube::serial;
use serde_json::{json, Value};

const BIND_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// 3: tenants kept apart; placements alone teach no trail

/// Steers a pod to `node`: required to land on `node` or `other` (two feasible nodes, so the
/// extender's prioritize is called and a decision remembered), preferring `node`. The required
/// part keeps the reporter's real `requested` facts (busy nodes are cheaper to add to) from
/// pulling the pod onto a third, busier node.
fn prefer_node(node: &str, other: &str) -> Value {
    json!({"nodeAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node, other]}]}]},
    "preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100,
        "preference": {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    }]}})
}

fn tenant_pod(ns: &str, name: &str, tenant: &str, affinity: Option<Value>) -> Value {
    pod(
        ns,
        name,
        PodOpts {
            labels: vec![
                ("scheduling.aco/tenant-id", tenant.into()),
                ("aco/workload-type", "batch".into()),
            ],
            affinity,
            ..Default::default()
        },
    )
}

/// The reporter reports every pod bound through the extender: the tenant's confirmed placements
/// grow by exactly the pods bound (never more).
async fn wait_reported(env: &Env, tenant: &str, before: u64, names: &[String]) {
    env.api
        .wait_deposits(tenant, before + names.len() as u64, Duration::from_secs(60))
        .await;
}

#[tokio::test]
async fn tenants_are_kept_apart_and_placements_alone_teach_no_trail() {
    let _serial = serial();
    let env = Env::start_with_reporter().await;
    let kube = env.kube();
    let nodes = identical_nodes(5, "same");
    env.add_nodes(&nodes).await;
    let (x, y) = (name_of(&nodes[1]), name_of(&nodes[3]));
    let (w, z) = (name_of(&nodes[0]), name_of(&nodes[4]));
    let ns = "tenants";
    kube.create_namespace(ns).await;
    let _sched = env
        .cp
        .start_scheduler("scheduler", &env.worker_config(false))
        .await;

    // team-a's pods on X, team-b's on Y (a soft node affinity makes kube-scheduler choose).
    let mut confirmed = BTreeMap::new();
    for (tenant, node, other) in [("team-a", &x, &w), ("team-b", &y, &z)] {
        let hist: Vec<Value> = (0..6)
            .map(|i| {
                tenant_pod(
                    ns,
                    &format!("{tenant}-hist-{i}"),
                    tenant,
                    Some(prefer_node(node, other)),
                )
            })
            .collect();
        let names = create_pods(kube, &hist).await;
        let placed = kube.wait_all_bound(ns, &names, BIND_TIMEOUT).await;
        assert!(
            placed.iter().all(|n| n == node),
            "{tenant}'s pods should be on {node}: {placed:?}"
        );
        // Each tenant's reporter-sent placements are confirmed in its own colony only.
        wait_reported(&env, tenant, 0, &names).await;
        confirmed.insert(tenant, names.len() as u64);
    }
    for tenant in ["team-a", "team-b"] {
        let table = env.api.pheromone_table(tenant).await;
        assert_eq!(
            Some(table.counters.deposits),
            confirmed.get(tenant).copied(),
            "{tenant}: {table:?}"
        );
        // The pods are still running: no outcome yet, so nothing learned about any node. Only an
        // outcome deposits (a placement is mostly the colony's own choice: self-reinforcing).
        assert!(table.nodes.is_empty(), "{tenant}: {table:?}");
    }
}
