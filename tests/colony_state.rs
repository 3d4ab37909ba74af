//! The colony's state on the built Worker in Miniflare: it survives a restart, a corrupt stored
//! value is an error that is counted and a reset repairs, remembered decisions are capped per
//! tenant, tenants outside the allowlist get η scores and no colony.
//! (The storage per remembered decision is measured by `benches/decision_storage.rs`.)

use aco_testkit::api::{full_args, pod, Api, WorkerHttp};
use aco_testkit::colony_load::flood;
use aco_testkit::nodes::name_of;
use aco_testkit::openb::{long_named_nodes, priced_nodes};
use aco_testkit::state::{colony_sqlite_files, sqlite};
use aco_testkit::StartOptions;
use serde_json::{json, Value};

#[tokio::test]
async fn colony_state_survives_a_restart_of_the_runtime() {
    let state = tempfile::tempdir().unwrap();
    let mut api = Api::start(StartOptions {
        persist_dir: Some(state.path().to_path_buf()),
        ..Default::default()
    });
    let nodes = priced_nodes();
    api.put_facts(json!([{"name": "persisted-node", "latencyUs": 12}]))
        .await;
    for i in 0..3 {
        api.scores(
            &pod(
                &format!("p{i}"),
                "keep",
                json!({}),
                json!({}),
                json!({"cpu": "1"}),
            ),
            &nodes,
        )
        .await;
    }
    api.place_summary(json!([{"podUid": "uid-keep-p0", "namespace": "keep", "node": name_of(&nodes[1]), "outcome": "failed"}, {"podUid": "uid-keep-p1", "namespace": "keep", "node": name_of(&nodes[1])}])).await;
    let before = api.pheromone_table("keep").await;
    assert_eq!(
        before.nodes.len(),
        1,
        "the failure is on the trail: {before:?}"
    );

    api.worker.restart();
    let after = api.pheromone_table("keep").await;
    assert_eq!(api.trails("keep").await.len(), 1);
    assert_eq!(
        after
            .nodes
            .iter()
            .map(|n| (&n.node, n.failures))
            .collect::<Vec<_>>(),
        before
            .nodes
            .iter()
            .map(|n| (&n.node, n.failures))
            .collect::<Vec<_>>()
    );
    assert_eq!(after.counters.deposits, 2);
    assert_eq!(after.pending_decisions, 1);
    // The third decision is still remembered and still deposits; confirmations survived (a
    // replay is a duplicate); node facts survived too.
    assert_eq!(
        api.place_summary(
            json!([{"podUid": "uid-keep-p2", "namespace": "keep", "node": name_of(&nodes[0])}])
        )
        .await
        .deposited,
        1
    );
    let replay = api
        .place_summary(
            json!([{"podUid": "uid-keep-p0", "namespace": "keep", "node": name_of(&nodes[1])}]),
        )
        .await;
    assert_eq!((replay.deposited, replay.duplicates), (0, 1), "{replay:?}");
    assert_eq!(api.pheromone_table("keep").await.counters.deposits, 3);
    let probe = pod(
        "q",
        "keep",
        json!({}),
        json!({"scheduling.aco/latency-target-us": "20"}),
        json!({}),
    );
    assert_eq!(
        api.filter(&probe, &["persisted-node".to_string()])
            .await
            .node_names,
        Some(vec!["persisted-node".to_string()])
    );
}

#[tokio::test]
async fn a_corrupt_stored_epoch_is_an_error_that_is_counted_and_reset_repairs_it() {
    let mut api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    api.scores(
        &pod("c1", "corrupt", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    )
    .await;
    api.place(
        json!([{"podUid": "uid-corrupt-c1", "namespace": "corrupt", "node": name_of(&nodes[0])}]),
    )
    .await;
    // A scrape sends this isolate's counters (and the tenants seen) to the Telemetry object; a
    // restart would otherwise lose what is younger than TELEMETRY_FLUSH_MS.
    api.metrics_containing("aco_colony_deposits_total{tenant=\"corrupt\"} 1")
        .await;
    api.worker.while_stopped(|dir| {
        let files = colony_sqlite_files(dir);
        assert_eq!(files.len(), 1, "{files:?}");
        sqlite(&files[0], "UPDATE snapshot SET body = 'not-a-number'");
    });

    // Not a silent 0: the colony refuses, the verb answers 503 naming the value...
    let (status, body) = api
        .admin_refused(reqwest::Method::GET, "/v1/tenants/corrupt/pheromones", None)
        .await;
    assert_eq!(status, 503, "{body:?}");
    assert!(body.error.contains("snapshot["), "{body:?}");
    // Scores are advisory: prioritize still answers, from η alone (no copy of the colony survived
    // the restart), and counts why.
    let (status, body) = api
        .post_raw(
            "/v1/prioritize",
            full_args(
                &pod("c2", "corrupt", json!({}), json!({}), json!({"cpu": "1"})),
                &nodes,
            )
            .0,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let scores: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(scores.as_array().map(Vec::len), Some(nodes.len()), "{body}");
    // ...counted; the scrape never asks a colony, so it answers as ever.
    let text = api
        .metrics_containing("aco_colony_errors_total{reason=\"corrupt_state\"} 2")
        .await;
    assert!(
        text.contains("aco_colony_fallback_total{mode=\"eta_only\",reason=\"corrupt_state\"} 1"),
        "{text}"
    );
    assert!(api
        .worker
        .logs()
        .contains("corrupt colony state: snapshot["));
    // Reset repairs it.
    let (status, body) = api
        .admin(
            reqwest::Method::DELETE,
            "/v1/tenants/corrupt/pheromones",
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(api.pheromone_table("corrupt").await.counters.deposits, 0);
}

#[tokio::test]
async fn remembered_decisions_are_capped_per_tenant_oldest_first() {
    let mut api = Api::start(StartOptions::default().var("MAX_DECISIONS_PER_TENANT", "20"));
    let nodes = long_named_nodes(64);
    flood(&api, "flood", "f", 30, &nodes).await;
    // Read before any restart; decisions scored from the isolate's colony copy reach the colony
    // with (at the latest) this read.
    let table = api.pheromone_table("flood").await;
    assert_eq!(table.pending_decisions, 20, "{table:?}");
    assert_eq!(table.counters.evicted_decisions, 10);
    assert_eq!(table.counters.decisions, 30);
    // The survivors are the newest: an evicted pod's placement is unknown, a kept one deposits.
    let oldest_kept = (0..30).rev().take(20).min().unwrap();
    assert_eq!(oldest_kept, 10);
    let s = api
        .place_summary(
            json!([{"podUid": "uid-flood-f29", "namespace": "flood", "node": name_of(&nodes[0])}]),
        )
        .await;
    assert_eq!(s.deposited, 1, "{s:?}");
    api.metrics_containing("aco_colony_evicted_decisions_total{tenant=\"flood\"} 10")
        .await;
    let bytes = api.worker.while_stopped(|dir| {
        colony_sqlite_files(dir)
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum::<u64>()
    });
    eprintln!("colony database after 30 decisions of 64 long-named nodes, 20 kept: {bytes} bytes");
}

#[tokio::test]
async fn tenants_outside_the_allowlist_get_eta_scores_and_no_colony() {
    let api = Api::start(
        StartOptions::default()
            .var("TENANTS", "ml")
            .var("TENANT_PATTERN", "team-[a-z]+"),
    );
    let nodes = priced_nodes();
    for tenant in ["ml", "team-a", "intruder"] {
        let scores = api
            .scores(
                &pod("p", tenant, json!({}), json!({}), json!({"cpu": "1"})),
                &nodes,
            )
            .await;
        assert_eq!(scores.len(), nodes.len(), "{tenant} is scored");
    }
    assert_eq!(api.pheromone_table("ml").await.counters.decisions, 1);
    assert_eq!(api.pheromone_table("team-a").await.counters.decisions, 1);
    let (status, body) = api
        .admin(
            reqwest::Method::GET,
            "/v1/tenants/intruder/pheromones",
            None,
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = api
        .admin_refused(
            reqwest::Method::POST,
            "/v1/placements",
            Some(json!({"placements": [
            {"podUid": "uid-ml-p", "namespace": "ml", "node": name_of(&nodes[0])},
            {"podUid": "uid-intruder-p", "namespace": "intruder", "node": name_of(&nodes[0])}]})),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body.field.as_deref()),
        (400, Some("placements[1].tenant")),
        "{body:?}"
    );
    assert_eq!(
        api.pheromone_table("ml").await.counters.deposits,
        0,
        "the rejected batch changed nothing"
    );
    api.metrics_containing("aco_tenants_refused_total{verb=\"prioritize\"} 1")
        .await;
}
