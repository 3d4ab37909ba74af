//! End-to-end, aco-reporter under real controllers: one leader. A leader cut off from the API
//! server (a proxy) stops pushing within its renew deadline while the standby takes over; an
//! API-server stop freezes the facts' observation time, shows in `/readyz` and makes the leader
//! step down (it cannot renew).
//!
//! The cluster of these tests (`aco_testkit::kube::controllers::Cluster`) is a real one's:
//! kube-apiserver with `--authorization-mode=Node,RBAC` and the ServiceAccount admission plugin,
//! **kube-controller-manager**, kube-scheduler through the Worker, kwok's fake kubelets, and the
//! reporter **installed** from `k8s/` as a user does it, running with the token of its
//! ServiceAccount: a missing verb in the shipped RBAC breaks a watch or the Lease and fails the
//! test. Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use std::time::{Duration, Instant};

use aco_core::facts::NodeFacts;
use aco_testkit::api::WorkerHttp;
use aco_testkit::kube::fixtures::*;
use aco_testkit::pods::edit_pod;

use aco_testkit::kube::controllers::*;
use aco_testkit::kube::kwok::JobStages;
use aco_testkit::kube::serial;
use aco_testkit::kube::wait_for;
use aco_testkit::now_ms;
use serde_json::Value;

/// The Worker's FACTS_TTL_MS in the outage test (above the reporter's 20 s full refresh).
const FACTS_TTL_MS: u64 = 25_000;

// ---------------------------------------------------------------------------------------------
// 4. one leader, fresh facts

#[tokio::test]
async fn a_leader_cut_off_from_the_api_steps_down_and_an_api_outage_freezes_the_facts() {
    let _serial = serial();
    let nodes: Vec<Value> = openb_kwok_nodes(2);
    // The facts' TTL just above the reporter's full refresh (20 s): healthy facts stay fresh,
    // frozen ones go stale soon after the outage begins.
    let mut c = Cluster::start(
        &nodes,
        JobStages::default(),
        false,
        &[("FACTS_TTL_MS", &FACTS_TTL_MS.to_string())],
    )
    .await;
    // Replica a reaches the API server through a proxy we can cut; replica b directly. Both
    // reach the Worker.
    let proxy = c.env.cp.start_proxy(
        "api-proxy",
        &aco_testkit::kube::host_port(&c.env.cp.api_url),
        Duration::ZERO,
    );
    let mut a = c
        .reporter(
            "aco-reporter-a",
            Some(&proxy.addr),
            &["--metrics-source", "none"],
        )
        .await;
    wait_for("a leads", Duration::from_secs(60), || async {
        (a.metric("aco_reporter_leader").await == 1.0).then_some(())
    })
    .await;
    let mut b = c
        .reporter("aco-reporter-b", None, &["--metrics-source", "none"])
        .await;
    a.wait_nodes_reported(nodes.len(), Duration::from_secs(60))
        .await;
    wait_for("b synced as standby", Duration::from_secs(60), || async {
        reqwest::get(format!("http://127.0.0.1:{}/readyz", b.ops))
            .await
            .ok()?
            .status()
            .is_success()
            .then_some(())
    })
    .await;
    assert_eq!(b.metric("aco_reporter_leader").await, 0.0);

    proxy.set_mode(aco_testkit::kube::ProxyMode::Refuse).await;
    let cut = Instant::now();
    wait_for("a steps down", Duration::from_secs(15), || async {
        (a.metric("aco_reporter_leader").await == 0.0).then_some(())
    })
    .await;
    let stepped_down = cut.elapsed();
    let sent_then = a
        .metric("aco_reporter_requests_total{kind=\"nodes\"}")
        .await;
    let ticks_then = a.metric("aco_reporter_push_ticks_total").await;
    wait_for("b takes over", Duration::from_secs(30), || async {
        (b.metric("aco_reporter_leader").await == 1.0).then_some(())
    })
    .await;
    let took_over = cut.elapsed();
    eprintln!("cut off: a stepped down after {stepped_down:?}, b led after {took_over:?} (renew deadline 5 s, lease 8 s)");
    assert!(
        stepped_down <= Duration::from_secs(5 + 3),
        "{stepped_down:?}"
    );
    assert!(
        stepped_down < took_over,
        "never two leaders: {stepped_down:?} vs {took_over:?}"
    );
    b.wait_nodes_reported(nodes.len(), Duration::from_secs(30))
        .await;
    // Three more rounds of a's push loop: three chances to push that it must not take.
    wait_for(
        "3 rounds of a's push loop",
        Duration::from_secs(30),
        || async {
            (a.metric("aco_reporter_push_ticks_total").await >= ticks_then + 3.0).then_some(())
        },
    )
    .await;
    assert_eq!(
        a.metric("aco_reporter_requests_total{kind=\"nodes\"}")
            .await,
        sent_then,
        "the cut-off replica pushes nothing once it stepped down"
    );

    // The API server stops: b's watches break; the facts keep the time they were confirmed.
    let node = c.nodes[0].clone();
    // `requested.atMs`: when the reporter says its inputs were observed.
    let observed = |f: &NodeFacts| f.requested.as_ref().map(|r| r.at_ms);
    let before = c.env.api.try_node_facts(&node).await.unwrap();
    eprintln!("facts before the outage: {before:?}");
    c.env.cp.stop_apiserver();
    let stopped = now_ms();
    wait_for(
        "b's readyz names the broken watches",
        Duration::from_secs(60),
        || async {
            let r = reqwest::get(format!("http://127.0.0.1:{}/readyz", b.ops))
                .await
                .ok()?;
            let code = r.status().as_u16();
            let text = r.text().await.ok()?;
            (code == 503 && text.contains("pods")).then_some(())
        },
    )
    .await;
    // The gauge follows at the next push tick.
    wait_for(
        "b's source_healthy{pods} 0",
        Duration::from_secs(30),
        || async {
            (b.metric("aco_reporter_source_healthy{kind=\"pods\"}").await == 0.0).then_some(())
        },
    )
    .await;
    // b cannot renew its Lease either: it steps down too, so nothing stale is pushed as fresh;
    // the Worker's copy ages past FACTS_TTL_MS from the frozen observation time. Once b has
    // stepped down nothing more reaches the Worker: its copy is the last b pushed.
    wait_for(
        "b steps down while the API server is gone",
        Duration::from_secs(30),
        || async { (b.metric("aco_reporter_leader").await == 0.0).then_some(()) },
    )
    .await;
    let during = c.env.api.try_node_facts(&node).await.unwrap();
    eprintln!("facts during the outage: {during:?}");
    let t = observed(&during).expect("requested.atMs");
    assert!(
        t <= stopped + 1_000,
        "observation time {t} after the stop {stopped}"
    );
    assert!(observed(&before).is_some_and(|b| b <= t));
    // While b still led with broken watches it said so: the facts' age at its last push.
    let age = b.metric("aco_reporter_facts_age_seconds").await;
    eprintln!("b's facts age when it stepped down: {age} s");
    assert!(age > 0.0, "{age}");
    // The Worker judges the facts by that frozen time: a filter ignores them as stale (fails
    // open) once FACTS_TTL_MS has passed since the last confirmation, not later.
    let probe = edit_pod(pod("ops", "probe", PodOpts::default()), |p| {
        p.metadata.uid = Some("probe-uid".into())
    });
    let stale = "aco_stale_node_facts_total{verb=\"filter\"}";
    wait_for(
        "the Worker ignores the frozen facts as stale",
        Duration::from_millis(FACTS_TTL_MS + 30_000),
        || async {
            c.env.api.filter(&probe, std::slice::from_ref(&node)).await;
            let m = c.env.api.metrics().await;
            (aco_testkit::kube::reporter::sample(&m, stale) >= 1.0).then_some(())
        },
    )
    .await;
    let judged_stale = now_ms();
    eprintln!(
        "stale at the Worker {} ms after the last confirmation, {} ms after the stop (TTL {FACTS_TTL_MS} ms)",
        judged_stale - t,
        judged_stale - stopped
    );
    assert!(judged_stale >= t + FACTS_TTL_MS, "stale too early");
    assert!(
        judged_stale <= stopped + FACTS_TTL_MS + 10_000,
        "stale too late: {} ms after the stop",
        judged_stale - stopped
    );
    c.env.cp.start_apiserver_again().await;
    wait_for("b healthy again", Duration::from_secs(90), || async {
        (b.metric("aco_reporter_source_healthy{kind=\"pods\"}").await == 1.0
            && b.metric("aco_reporter_facts_age_seconds").await < 3.0)
            .then_some(())
    })
    .await;
    b.server.assert_running();
}
