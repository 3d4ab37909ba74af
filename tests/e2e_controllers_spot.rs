//! End-to-end, aco-reporter under real controllers: a spot node deleted with its pods (reclaimed,
//! forgotten by the Worker; PodGC's deletions charged to that node).
//!
//! The cluster of these tests (`aco_testkit::kube::controllers::Cluster`) is a real one's:
//! kube-apiserver with `--authorization-mode=Node,RBAC` and the ServiceAccount admission plugin,
//! **kube-controller-manager**, kube-scheduler through the Worker, kwok's fake kubelets, and the
//! reporter **installed** from `k8s/` as a user does it, running with the token of its
//! ServiceAccount: a missing verb in the shipped RBAC breaks a watch or the Lease and fails the
//! test. Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use std::time::{Duration, Instant};

use aco_testkit::api::WorkerHttp;
use aco_testkit::kube::fixtures::*;

use aco_testkit::nodes::name_of;
use aco_testkit::openb::openb_cpu_nodes;

use aco_testkit::kube::controllers::*;
use aco_testkit::kube::kwok::JobStages;
use aco_testkit::kube::serial;
use aco_testkit::kube::wait_for;
use aco_testkit::pods::node_of;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// 3. a spot node deleted with its pods

#[tokio::test]
async fn a_spot_node_deleted_under_its_pods_is_reclaimed_and_its_pods_failures_not_charged_to_it() {
    let _serial = serial();
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(2)
        .enumerate()
        .map(|(i, n)| kwok_node(label_node(n, 1.0, 300, i == 0)))
        .collect();
    let spot = name_of(&nodes[0]);
    let c = Cluster::start(&nodes, JobStages::default(), false, &[]).await;
    let mut r = c
        .reporter("aco-reporter-0", None, &["--metrics-source", "none"])
        .await;
    r.wait_nodes_reported(nodes.len(), Duration::from_secs(90))
        .await;
    let kube = c.kube();
    let ns = "spot";
    c.namespace(ns).await;
    // Preferred, not required: both nodes stay feasible, so the extender scores (and remembers)
    // each pod, and kube-scheduler's node affinity score puts it on the spot node.
    let pin = json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [spot]}]}}]}}});
    kube.post(
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &deployment(ns, "api", 2, pin),
    )
    .await;
    wait_for("2 pods on the spot node", BIND_TIMEOUT, || async {
        (c.pods_where(ns, |p| node_of(p) == Some(spot.as_str()))
            .await
            .len()
            == 2)
            .then_some(())
    })
    .await;
    c.env.api.wait_deposits(ns, 2, TENANT_WAIT).await;
    assert!(c.env.api.try_node_facts(&spot).await.is_some());

    // The cloud reclaims it: the Node object goes, its pods are still bound (nothing drained).
    let deleted_at = Instant::now();
    kube.delete(&format!("/api/v1/nodes/{spot}")).await.unwrap();
    wait_for(
        "the reclaimed node reported and forgotten",
        TENANT_WAIT,
        || async {
            let reclaimed = r.metric("aco_reporter_reclaimed_nodes_total").await >= 1.0;
            (reclaimed && c.env.api.try_node_facts(&spot).await.is_none()).then_some(())
        },
    )
    .await;
    // PodGC deletes the orphans (after its 40 s quarantine): failed outcomes whose cause is the
    // node gone. The colony counts them; the node's reliability does not learn them — the pool's
    // interruption rate prices a reclamation, and a replacement joins under another name.
    let counters = wait_for(
        "the orphaned pods' failed outcomes counted",
        Duration::from_secs(180),
        || async {
            let t = c.table(ns).await;
            (t.counters.failed_outcomes >= 2).then_some(t.counters)
        },
    )
    .await;
    let f = c.failures(ns).await;
    eprintln!(
        "counted {:?} after the node was deleted: {counters:?}, failures by node {f:?}",
        deleted_at.elapsed()
    );
    assert!(f.values().all(|v| *v == 0.0), "no node charged: {f:?}");
    let gone = r
        .metric("aco_reporter_pod_ends_total{verdict=\"node_failed\",reason=\"DeletionByPodGC\"}")
        .await
        + r.metric("aco_reporter_pod_ends_total{verdict=\"node_failed\",reason=\"NodeGone\"}")
            .await;
    assert!(
        gone >= 2.0,
        "the pods' ends read as their node gone: {gone}"
    );
    r.server.assert_running();
}
