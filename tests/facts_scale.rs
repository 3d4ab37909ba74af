//! Node facts at cluster scale, on the built Worker in Miniflare (the real Facts Durable Object,
//! SQLite persisted to disk): a 10,000-node report in one request, the hot path over 5,000
//! candidates within a few binding operations, the deadband, restarts, bad batches, deletions.
//! (What they cost is measured by `benches/worker_memory.rs`, `benches/facts_rows.rs` and
//! `benches/facts_isolates.rs`.)

use aco_core::api::nodes::NodeReport;
use aco_core::facts::NodeFacts;
use aco_testkit::extender::{FilterResult, HostPriority};
use aco_testkit::facts_api::{cpu_milli, node_name, pod, report, report_of, FactsApi, SHARDS};
use aco_testkit::fixtures;
use aco_testkit::nodes::name_of;
use aco_testkit::{now_ms, StartOptions};
use serde_json::{json, Value};

#[tokio::test]
async fn a_report_of_10000_nodes_is_one_request_and_5000_candidates_cost_one_operation() {
    let api = FactsApi::start(StartOptions::default());
    let t = now_ms();
    let batch = json!({"nodes": (0..10_000).map(|i| report(i, t, 0.3 + (i % 50) as f64 / 100.0)).collect::<Vec<_>>()});
    let first = api.put_ok(&batch).await;
    assert_eq!((first.stored, first.nodes), (10_000, 10_000), "{first:?}");
    assert_eq!(
        first.rows_written, SHARDS,
        "every shard row written once: {first:?}"
    );

    // The hot path over 5,000 of them: one request for the cluster's snapshot (this isolate's
    // copy was marked stale by the PUT), then the rules; prioritize adds the colony's request.
    let names: Vec<String> = (0..10_000).step_by(2).map(node_name).collect();
    let (filtered, ops) = api.filter(&names).await;
    assert_eq!(
        filtered.passed().len(),
        5_000,
        "{:?}",
        filtered.failed_nodes
    );
    assert_eq!(ops, 1);
    let scored = api
        .verb(
            "/v1/prioritize",
            json!({"Pod": pod("scored"), "NodeNames": names}).to_string(),
        )
        .await;
    assert_eq!(scored.status, 200, "{}", scored.body);
    assert_eq!(scored.json::<Vec<HostPriority>>().len(), 5_000);
    // 1 (colony) if this isolate's copy is still fresh, 2 if FACTS_CACHE_MS passed meanwhile.
    assert!((1..=2).contains(&scored.ops), "{}", scored.ops);

    // Deadband: the same report again folds no sample twice and writes no row.
    let again = api.put_ok(&batch).await;
    assert_eq!((again.stored, again.rows_written), (10_000, 0), "{again:?}");
    // A material change of one node rewrites its shard only, and readers see it.
    let moved = report_of(7, t, 0.37, "H100", cpu_milli(7));
    let one = api.put_ok(&json!({"nodes": [moved]})).await;
    assert_eq!(one.rows_written, 1, "{one:?}");
    assert_eq!(
        api.node(&node_name(7)).await.unwrap().labels["aco/gpu-type"],
        "H100"
    );
    let gpu = json!({"Pod": {"metadata": {"name": "g", "namespace": "scale", "annotations": {"scheduling.aco/gpu-models": "H100"}},
                             "spec": {"containers": [{"name": "m", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}},
                     "NodeNames": [node_name(6), node_name(7)]});
    let reply = api.verb("/v1/filter", gpu.to_string()).await;
    assert_eq!(
        (reply.json::<FilterResult>().passed(), reply.ops),
        (vec![node_name(7)], 1),
        "{}",
        reply.body
    );
}

#[tokio::test]
async fn facts_survive_a_restart_a_bad_batch_changes_nothing_and_deleted_nodes_are_forgotten() {
    let state = tempfile::tempdir().unwrap();
    let mut api = FactsApi::start(StartOptions {
        persist_dir: Some(state.path().to_path_buf()),
        ..Default::default()
    });
    let t = now_ms() - 60_000;
    let all: Vec<String> = (0..300).map(node_name).collect();
    api.put_ok(&json!({"nodes": (0..300).map(|i| report(i, t, 0.5)).collect::<Vec<_>>()}))
        .await;
    let before = api.node(&node_name(150)).await.unwrap();

    // One bad report (index 150) or one bad deleted name: the whole batch is refused.
    // (A utilisation of 1.5 is out of [0, 1].)
    let bad: Vec<NodeReport> = (0..300)
        .map(|i| report(i, t + 1_000, if i == 150 { 1.5 } else { 0.9 }))
        .collect();
    let r = api
        .put(&json!({"nodes": bad, "deleted": [node_name(1)]}))
        .await;
    assert_eq!(
        r.refusal(),
        (400, Some("nodes[150].utilisation[0].value".into())),
        "{}",
        r.body
    );
    let r = api
        .put(&json!({"nodes": [report(3, t + 1_000, 0.9)], "deleted": [node_name(1), "Bad_Name"]}))
        .await;
    assert_eq!(r.refusal(), (400, Some("deleted[1]".into())), "{}", r.body);
    assert_eq!(api.node(&node_name(150)).await.unwrap(), before);
    assert_eq!(samples(&api.node(&node_name(3)).await.unwrap()), 1);
    assert!(api.node(&node_name(1)).await.is_some());

    // 100 nodes leave the cluster.
    let gone: Vec<String> = (0..100).map(node_name).collect();
    let r = api.put_ok(&json!({"deleted": gone})).await;
    assert_eq!((r.forgotten, r.nodes), (100, 200), "{r:?}");
    // A change within the deadband (EMA 0.5 → 0.505) stays in memory only.
    let nudged = api
        .put_ok(&json!({"nodes": [report(150, t + 2_000, 0.51)]}))
        .await;
    assert_eq!(nudged.rows_written, 0, "{nudged:?}");
    let in_memory = api.node(&node_name(150)).await.unwrap();
    assert_eq!(samples(&in_memory), 2);

    api.worker.restart();
    // Every node, label and measurement survived; what a restart loses is exactly the change
    // within the deadband (the persisted record is the one before it).
    let (reply, ops) = api.filter(&all).await;
    assert_eq!(reply.passed(), all[100..].to_vec());
    assert_eq!(ops, 1);
    for gone in &all[..100] {
        assert!(reply.failed_nodes[gone].contains("no node facts"), "{gone}");
    }
    assert!(api.node(&node_name(0)).await.is_none());
    assert_eq!(api.node(&node_name(150)).await.unwrap(), before);
    let level = |f: &NodeFacts| f.load.as_ref().unwrap().value.level.unwrap();
    assert!((level(&in_memory) - level(&before)).abs() <= 0.02);
}

/// Utilisation samples folded into a node's load estimate.
fn samples(facts: &NodeFacts) -> u64 {
    facts.load.as_ref().expect("a load estimate").value.samples
}

/// Full-object mode reads each node object as it comes, keeping only what the verb needs; names
/// mode reads the same nodes' facts. Same nodes, same answers: every filter list and every score.
#[tokio::test]
async fn full_objects_of_3000_real_nodes_filter_and_score_as_names_mode() {
    let api = FactsApi::start(StartOptions::default());
    let nodes = fixtures::real_shaped_nodes(3000);
    let t = now_ms();
    // What names mode reads of a node object (labels, allocatable), and what both modes read from
    // facts (requested: some nodes too busy for the pod).
    let reports: Vec<NodeReport> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeReport {
            observed_at_ms: Some(t),
            requested: Some(
                serde_json::from_value(
                    json!({"cpu": format!("{}m", (i % 11) * 9000), "memory": "16Gi"}),
                )
                .unwrap(),
            ),
            ..serde_json::from_value(fixtures::identity_report(n)).unwrap()
        })
        .collect();
    let pod = fixtures::bench_pod();
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let full = json!({"Pod": pod, "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": null})
        .to_string();
    let by_name = json!({"Pod": pod, "NodeNames": names}).to_string();
    assert!(full.len() > 20_000_000, "{} bytes", full.len());
    api.put_ok(&json!({"nodes": reports})).await;

    let (f, n) = (
        api.verb("/v1/filter", full.clone()).await,
        api.verb("/v1/filter", by_name.clone()).await,
    );
    assert_eq!(
        (f.status.as_u16(), n.status.as_u16()),
        (200, 200),
        "{} {}",
        f.body,
        n.body
    );
    let (f, n) = (f.json::<FilterResult>(), n.json::<FilterResult>());
    // Everything but the echoed objects is the same in both modes.
    assert_eq!(
        FilterResult {
            nodes: None,
            ..f.clone()
        },
        n
    );
    let passed = f.passed();
    let (failed, unresolvable) = (&f.failed_nodes, &f.failed_and_unresolvable_nodes);
    assert!(passed.len() > 300 && !failed.is_empty() && !unresolvable.is_empty());
    assert_eq!(passed.len() + failed.len() + unresolvable.len(), 3000);
    // Full-object mode echoes exactly the passing objects, in order, as they were sent.
    let sent: std::collections::HashMap<String, &Value> =
        nodes.iter().map(|n| (name_of(n), n)).collect();
    let expected: Vec<&Value> = passed.iter().map(|name| sent[name]).collect();
    let echoed: Vec<&Value> = f.items().iter().collect();
    assert_eq!(echoed, expected);
    assert_eq!(n.nodes, None);

    let (f, n) = (
        api.verb("/v1/prioritize", full).await,
        api.verb("/v1/prioritize", by_name).await,
    );
    assert_eq!(
        (f.status.as_u16(), n.status.as_u16()),
        (200, 200),
        "{} {}",
        f.body,
        n.body
    );
    let (f, n) = (f.json::<Vec<HostPriority>>(), n.json::<Vec<HostPriority>>());
    assert_eq!(f, n, "every host, every score, the same order");
    let scores: std::collections::BTreeSet<i64> = f.iter().map(|h| h.score).collect();
    assert!(f.len() == 3000 && scores.len() > 1, "{scores:?}");
}
