//! Shadow mode end to end: the extender observes without steering. kube-apiserver + etcd +
//! kube-scheduler as the cluster's `default-scheduler` **without the extender** + the real
//! `aco-reporter` with `--shadow-scheduler-names default-scheduler` + the Worker over HTTPS.
//!
//! Pods that name no scheduler are bound by kube-scheduler alone (it spreads them: least
//! allocated first); the reporter reports each one, with the pod, to `POST /v1/shadow`; the
//! Worker scores it as the tenant's colony would have and the shadow summary
//! (`GET /v1/tenants/{t}/shadow`) says what the colony would have chosen. Nothing here reports
//! anything to the Worker: every fact and every shadow report came from the reporter.
//!
//! The summary is checked against the test's own computation from its own data: where
//! kube-scheduler put each pod (its `spec.nodeName` from the API), node prices and allocatable,
//! pod requests, and the core's documented rule. A fresh colony has uniform τ, so its choice is
//! the node of best η. The nodes are built so that this choice is the cheapest node whatever the
//! timing of facts and reports: identical allocatable, distinct prices, on-demand, no load
//! facts (spike safety neutral), no GPUs (fragmentation neutral), no outcomes (reliability
//! equal), batch pods well within the headroom floor (headroom neutral), and every node kept
//! busy by a pod bound beforehand by no scheduler the reporter watches, larger than any test
//! pod — so every candidate is "busy" even with the pod's own request subtracted, and the
//! marginal cost of a pod on node `n` is `price(n) × share`, `share` = the pod's largest share
//! of the node's allocatable over CPU and memory (`crates/core/src/heuristic/cost.rs`), the
//! same on every node. Then Σ chosen $/h = Σ price(nodeName) × share, Σ colony $/h =
//! Σ price(cheapest) × share, and agreements = pods that kube-scheduler put on the cheapest node.
//!
//! Then the reporter is killed and a new one started: it re-derives the shadow pods from the API
//! server and reports them again, and the summary still counts each pod once. Last, one pod
//! fails (its status set to `Failed` through the API, as a kubelet would): the reporter sends
//! its outcome to `/v1/shadow` once, and the summary still counts eight pods.
//!
//! Run with `scripts/e2e` (one test at a time; each starts its own cluster).

#![cfg(feature = "e2e")]

use std::time::Duration;

use aco_core::api::shadow::ShadowSummaryReply;
use aco_testkit::api::WorkerHttp;
use aco_testkit::kube::fixtures::*;

use aco_testkit::kube::kwok::quantity;
use aco_testkit::kube::reporter::Reporter;
use aco_testkit::kube::{wait_for, SchedulerConfig};
use aco_testkit::nodes::name_of;
use aco_testkit::pods::edit_spec;
use serde_json::Value;

/// The tenant is the namespace (no tenant label).
const NS: &str = "shop";
/// $/h of `shadow-0` … `shadow-3`: `shadow-0` is the cheapest, unambiguously.
const PRICES: [f64; 4] = [0.5, 1.0, 2.0, 4.0];
const ALLOC_CPU: &str = "16";
const ALLOC_MEMORY: &str = "64Gi";
/// CPU of the pod keeping each node busy: the cheapest node starts busier, so kube-scheduler
/// (least allocated first) tends to put pods elsewhere.
const BASE_CPU: [&str; 4] = ["2", "1", "1", "1"];
const BASE_MEMORY: &str = "8Gi";
/// The shadow pods' (CPU, memory) requests: each below every base pod.
const PODS: [(&str, &str); 8] = [
    ("500m", "512Mi"),
    ("750m", "1Gi"),
    ("500m", "512Mi"),
    ("250m", "4Gi"),
    ("500m", "512Mi"),
    ("750m", "1Gi"),
    ("500m", "512Mi"),
    ("250m", "256Mi"),
];
const TIMEOUT: Duration = Duration::from_secs(90);

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[tokio::test]
async fn pods_bound_by_the_default_scheduler_are_scored_in_shadow_and_the_summary_matches_the_tests_computation(
) {
    let mut env =
        Env::start_with_reporter_flags(&["--shadow-scheduler-names", "default-scheduler"]).await;
    let nodes: Vec<Value> = PRICES
        .iter()
        .enumerate()
        .map(|(i, price)| {
            label_node(
                cpu_node(&format!("shadow-{i}"), ALLOC_CPU, ALLOC_MEMORY),
                *price,
                300,
                false,
            )
        })
        .collect();
    env.add_nodes(&nodes).await;
    let kube = env.kube().clone();
    kube.create_namespace(NS).await;

    // Every node busy first: pods bound directly, by a scheduler nobody watches.
    for (i, n) in nodes.iter().enumerate() {
        let p = pod(
            NS,
            &format!("base-{i}"),
            PodOpts {
                cpu: BASE_CPU[i],
                memory: BASE_MEMORY,
                ..Default::default()
            },
        );
        let p = edit_spec(p, |spec| {
            spec.scheduler_name = Some("preplaced".into());
            spec.node_name = Some(name_of(n));
        });
        kube.create_pod(&p).await;
    }
    for (i, n) in nodes.iter().enumerate() {
        let name = name_of(n);
        let want = quantity(BASE_CPU[i]).unwrap() * 1000.0;
        let api = &env.api;
        wait_for(
            &format!("the reporter's facts for {name} to count its base pod"),
            TIMEOUT,
            || {
                let name = name.clone();
                async move {
                    let f = api.try_node_facts(&name).await?;
                    (f.requested?.value.get("cpu") as f64 >= want).then_some(())
                }
            },
        )
        .await;
    }

    // kube-scheduler alone, as the default scheduler; pods that name no scheduler.
    let _scheduler = env
        .cp
        .start_scheduler("default-scheduler", &SchedulerConfig::default_scheduler())
        .await;
    let pods: Vec<Value> = PODS
        .iter()
        .enumerate()
        .map(|(i, (cpu, memory))| {
            let p = pod(
                NS,
                &format!("web-{i}"),
                PodOpts {
                    cpu,
                    memory,
                    ..Default::default()
                },
            );
            edit_spec(p, |spec| spec.scheduler_name = None)
        })
        .collect();
    let names = create_pods(&kube, &pods).await;
    let placed = kube.wait_all_bound(NS, &names, TIMEOUT).await;
    for n in &names {
        let spec = kube.pod(NS, n).await.spec.expect("a pod spec");
        assert_eq!(
            spec.scheduler_name.as_deref(),
            Some("default-scheduler"),
            "{n}"
        );
    }
    eprintln!(
        "kube-scheduler placed: {:?}",
        names.iter().zip(&placed).collect::<Vec<_>>()
    );

    // The test's own computation.
    let price_of = |node: &str| -> f64 {
        let n = nodes
            .iter()
            .find(|n| name_of(n) == node)
            .unwrap_or_else(|| panic!("unknown node {node}"));
        label(n, "aco/cost-per-hour").parse().unwrap()
    };
    let cheapest = name_of(&nodes[0]);
    let (alloc_cpu, alloc_mem) = (
        quantity(ALLOC_CPU).unwrap(),
        quantity(ALLOC_MEMORY).unwrap(),
    );
    let (mut chosen, mut colony, mut agreements) = (0.0, 0.0, 0u64);
    for ((cpu, memory), node) in PODS.iter().zip(&placed) {
        let share = (quantity(cpu).unwrap() / alloc_cpu).max(quantity(memory).unwrap() / alloc_mem);
        chosen += price_of(node) * share;
        colony += price_of(&cheapest) * share;
        agreements += (*node == cheapest) as u64;
    }
    let n = PODS.len() as u64;
    assert!(
        agreements < n,
        "kube-scheduler spreads: not every pod on the cheapest node ({placed:?})"
    );
    eprintln!(
        "expected: {n} pods, {agreements} agreements, chosen {chosen} $/h, colony {colony} $/h"
    );

    let api = &env.api;
    let summary = wait_for("the shadow summary to count every pod", TIMEOUT, || async {
        let s = api.shadow_summary(NS).await?;
        (s.pods >= n).then_some(s)
    })
    .await;
    eprintln!("shadow summary: {summary:?}");
    let check = |s: &ShadowSummaryReply| {
        assert_eq!(s.pods, n, "{s:?}");
        assert_eq!(s.agreements, agreements, "{s:?}");
        assert!(
            close(s.chosen_cost_per_hour, chosen),
            "chosen $/h: {s:?} vs {chosen}"
        );
        assert!(
            close(s.colony_cost_per_hour, colony),
            "colony $/h: {s:?} vs {colony}"
        );
        assert!(
            close(s.saving_per_hour, chosen - colony),
            "saving $/h: {s:?} vs {}",
            chosen - colony
        );
        assert!(s.saving_per_hour > 0.0, "{s:?}");
        assert!(
            close(s.agreement_rate, agreements as f64 / n as f64),
            "{s:?}"
        );
        assert_eq!(s.latency_critical, 0, "{s:?}");
    };
    check(&summary);
    // Shadow mode observes: nothing was deposited, the tenant's trail did not move.
    assert_eq!(api.deposits(NS).await, 0);
    let reporter = env.reporter.as_mut().unwrap();
    // The summary may show the pods a moment before the reporter has read the Worker's answer.
    let reporter_ref = &*reporter;
    wait_for(
        "the reporter to count its shadow reports acknowledged",
        TIMEOUT,
        || async {
            (reporter_ref
                .metric("aco_reporter_reports_sent_total{kind=\"shadow\"}")
                .await
                >= n as f64)
                .then_some(())
        },
    )
    .await;
    assert_eq!(
        reporter
            .metric("aco_reporter_reports_sent_total{kind=\"shadow\"}")
            .await,
        n as f64
    );
    assert_eq!(
        reporter
            .metric("aco_reporter_reports_sent_total{kind=\"placements\"}")
            .await,
        0.0
    );
    reporter.server.assert_running();

    // A new reporter re-derives the shadow pods from the API server and reports them again;
    // the Worker counts each pod once.
    reporter.server.kill();
    let url = env.api.base.clone();
    let mut again = Reporter::start(
        &env.cp,
        &url,
        "reporter-2",
        &[
            "--no-node-metrics",
            "--shadow-scheduler-names",
            "default-scheduler",
        ],
        false,
    );
    let again_ref = &again;
    wait_for(
        "the restarted reporter to report the shadow pods again",
        TIMEOUT,
        || async {
            (again_ref
                .metric("aco_reporter_reports_sent_total{kind=\"shadow\"}")
                .await
                >= n as f64)
                .then_some(())
        },
    )
    .await;
    check(&api.shadow_summary(NS).await.expect("shadow summary"));

    // A shadow pod's outcome: sent once, by the same rules as our pods' outcomes (a kubelet
    // eviction: the node's doing, so an outcome is owed).
    kube.merge_patch(
        &format!("/api/v1/namespaces/{NS}/pods/{}/status", names[0]),
        &serde_json::json!({"status": {"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: memory."}}),
    )
    .await;
    wait_for(
        "the shadow pod's outcome to be delivered",
        TIMEOUT,
        || async {
            (again_ref
                .metric("aco_reporter_reports_sent_total{kind=\"shadow_outcomes\"}")
                .await
                >= 1.0)
                .then_some(())
        },
    )
    .await;
    assert_eq!(
        again
            .metric("aco_reporter_reports_sent_total{kind=\"shadow_outcomes\"}")
            .await,
        1.0
    );
    assert_eq!(
        again
            .metric("aco_reporter_reports_rejected_total{kind=\"shadow_outcomes\"}")
            .await,
        0.0
    );
    check(&api.shadow_summary(NS).await.expect("shadow summary"));
    again.server.assert_running();
}
