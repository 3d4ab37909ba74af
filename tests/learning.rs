//! Learning on the built Worker in Miniflare: placements are confirmed once per pod
//! (`/v1/placements`, `/v1/bind`) and only their outcomes deposit on the trail, once, tenants
//! isolated; unknown pods and tenants change nothing; a batch failing in one tenant is retried
//! exactly.

use aco_testkit::api::{pod, Api, WorkerHttp};
use aco_testkit::nodes::name_of;
use aco_testkit::openb::priced_nodes;
use aco_testkit::StartOptions;
use serde_json::{json, Value};

#[tokio::test]
async fn only_outcomes_deposit_and_tenants_are_isolated() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let tenant_pod = |tenant: &str, i: usize| {
        pod(
            &format!("p{i}"),
            "shared-ns",
            json!({"scheduling.aco/tenant-id": tenant}),
            json!({}),
            json!({"cpu": "1"}),
        )
    };

    let baseline_a = api.scores(&tenant_pod("alpha", 0), &nodes).await;
    let baseline_b = api.scores(&tenant_pod("beta", 0), &nodes).await;
    assert_eq!(baseline_a, baseline_b);
    // The node the colony likes best: where failures will show.
    let best = baseline_a
        .iter()
        .max_by_key(|(_, s)| **s)
        .map(|(n, _)| n.clone())
        .unwrap();
    // Scoring alone never deposits, however often.
    for i in 1..=20 {
        api.scores(&tenant_pod("alpha", i), &nodes).await;
    }
    let table = api.pheromones("alpha").await;
    assert_eq!(
        (
            table["counters"]["deposits"].as_u64(),
            table["nodes"].as_array().unwrap().len()
        ),
        (Some(0), 0),
        "{table}"
    );

    // Confirmed placements of alpha's pods are counted, and teach nothing by themselves.
    let placement = |i: usize| json!({"podUid": format!("uid-shared-ns-p{i}"), "namespace": "shared-ns", "name": format!("p{i}"), "tenant": "alpha", "node": best});
    let placements: Vec<Value> = (1..=20).map(placement).collect();
    let summary = api.place(json!(placements)).await;
    assert_eq!(summary["deposited"], 20, "{summary}");
    let table = api.pheromones("alpha").await;
    assert_eq!(table["counters"]["deposits"], 20);
    assert_eq!(
        table["nodes"],
        json!([]),
        "a placement deposits nothing: {table}"
    );
    assert_eq!(
        api.scores(&tenant_pod("alpha", 0), &nodes).await,
        baseline_a
    );

    // Their outcomes do: the pods failed there, alpha's trail on that node falls.
    let failed: Vec<Value> = (1..=20)
        .map(|i| {
            let mut p = placement(i);
            p["outcome"] = json!("failed");
            p
        })
        .collect();
    let summary = api.place(json!(failed)).await;
    assert_eq!(summary["outcomes"], 20, "{summary}");
    let table = api.pheromones("alpha").await;
    assert_eq!(table["nodes"][0]["node"], best.as_str(), "{table}");
    assert!(table["nodes"][0]["tau"].as_f64().unwrap() < 1.0, "{table}");

    let after_a = api.scores(&tenant_pod("alpha", 99), &nodes).await;
    // The same pod as the baseline: among equal nodes the answer's top is told apart by the pod.
    let after_b = api.scores(&tenant_pod("beta", 0), &nodes).await;
    assert!(
        after_a[&best] < baseline_a[&best],
        "{after_a:?} vs {baseline_a:?}"
    );
    assert_eq!(after_b, baseline_b);
    assert_eq!(api.pheromones("beta").await["nodes"], json!([]));

    // A repeated or unknown report deposits nothing more.
    let again = api
        .place(
            json!([failed[0].clone(), {"podUid": "never-scored", "tenant": "alpha", "node": best}]),
        )
        .await;
    assert_eq!(
        (
            again["deposited"].as_u64(),
            again["duplicates"].as_u64(),
            again["held"].as_u64()
        ),
        (Some(0), Some(1), Some(1)),
        "{again}"
    );
    assert_eq!(
        api.pheromones("alpha").await["counters"]["failedOutcomes"],
        20
    );

    // Reset clears the tenant's colony.
    let (status, _) = api
        .admin(
            reqwest::Method::DELETE,
            "/v1/tenants/alpha/pheromones",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let table = api.pheromones("alpha").await;
    assert_eq!(
        (&table["counters"]["deposits"], &table["nodes"]),
        (&json!(0), &json!([]))
    );
}

#[tokio::test]
async fn bind_verb_records_the_placement() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let p = pod("web-1", "shop", json!({}), json!({}), json!({"cpu": "1"}));
    api.scores(&p, &nodes).await;
    let target = name_of(&nodes[2]);
    let args = json!({"PodName": "web-1", "PodNamespace": "shop", "PodUID": "uid-shop-web-1", "Node": target});
    let reply = api.post("/v1/bind", args.to_string()).await;
    assert_eq!(reply, json!({"Error": ""}));
    let table = api.pheromones("shop").await;
    assert_eq!(
        (
            table["counters"]["deposits"].as_u64(),
            table["confirmedPods"].as_u64()
        ),
        (Some(1), Some(1)),
        "{table}"
    );
}

#[tokio::test]
async fn bind_verb_finds_label_chosen_tenants_through_the_bind_index() {
    let api = Api::start(StartOptions::default().var("BIND_INDEX", "true"));
    let nodes = priced_nodes();
    let p = pod(
        "web-2",
        "shop",
        json!({"scheduling.aco/tenant-id": "storefront"}),
        json!({}),
        json!({"cpu": "1"}),
    );
    api.scores(&p, &nodes).await;
    let target = name_of(&nodes[1]);
    let args = json!({"PodName": "web-2", "PodNamespace": "shop", "PodUID": "uid-shop-web-2", "Node": target});
    assert_eq!(
        api.post("/v1/bind", args.to_string()).await,
        json!({"Error": ""})
    );
    assert_eq!(
        api.pheromones("storefront").await["counters"]["deposits"],
        1
    );
    assert_eq!(api.pheromones("shop").await["counters"]["deposits"], 0);
}

/// The summary of a placements batch as (deposited, outcomes, duplicates, unknownPod,
/// notACandidate, held).
fn tally(summary: &Value) -> (u64, u64, u64, u64, u64, u64) {
    let keys: Vec<&String> = summary.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 7, "unexpected summary shape: {summary}");
    let n = |k: &str| {
        summary[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} missing in {summary}"))
    };
    (
        n("deposited"),
        n("outcomes"),
        n("duplicates"),
        n("unknownPod"),
        n("notACandidate"),
        n("held"),
    )
}

fn trail_of<'a>(table: &'a Value, node: &str) -> &'a Value {
    table["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["node"] == node)
        .unwrap_or_else(|| panic!("no trail for {node}: {table}"))
}

#[tokio::test]
async fn a_replayed_placement_deposits_once_and_its_later_outcome_counts_once() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let (x, y) = (name_of(&nodes[0]), name_of(&nodes[1]));
    for p in ["p1", "p2"] {
        api.scores(
            &pod(p, "replay", json!({}), json!({}), json!({"cpu": "1"})),
            &nodes,
        )
        .await;
    }
    let placed = |p: &str, node: &str| json!({"podUid": format!("uid-replay-{p}"), "namespace": "replay", "name": p, "tenant": "replay", "node": node});
    let with_outcome = |p: &str, node: &str, outcome: Value| {
        let mut v = placed(p, node);
        v["outcome"] = outcome;
        v
    };

    // The placement, delivered three times (and twice more inside one batch), counts once.
    let first = api.place(json!([placed("p1", &x)])).await;
    assert_eq!(first["received"], 1);
    assert_eq!(tally(&first), (1, 0, 0, 0, 0, 0), "{first}");
    let after_deposit = api.pheromones("replay").await;
    assert_eq!(
        after_deposit["nodes"],
        json!([]),
        "a placement deposits nothing"
    );
    for _ in 0..2 {
        assert_eq!(
            tally(&api.place(json!([placed("p1", &x)])).await),
            (0, 0, 1, 0, 0, 0)
        );
    }
    assert_eq!(
        tally(&api.place(json!([placed("p1", &x), placed("p1", &x)])).await),
        (0, 0, 2, 0, 0, 0)
    );
    let table = api.pheromones("replay").await;
    assert_eq!(table["counters"]["deposits"], 1);
    assert_eq!(table["nodes"], after_deposit["nodes"]);
    assert_eq!(
        (
            table["pendingDecisions"].as_u64(),
            table["confirmedPods"].as_u64()
        ),
        (Some(1), Some(1)),
        "{table}"
    );

    // The pod's fate, reported later: deposited on the confirmed node's trail, once.
    assert_eq!(
        tally(
            &api.place(json!([with_outcome("p1", &x, json!("failed"))]))
                .await
        ),
        (0, 1, 0, 0, 0, 0)
    );
    for outcome in [
        json!("failed"),
        json!("failed"),
        json!("succeeded"),
        json!(0.9),
    ] {
        assert_eq!(
            tally(&api.place(json!([with_outcome("p1", &x, outcome)])).await),
            (0, 0, 1, 0, 0, 0)
        );
    }
    assert_eq!(
        tally(&api.place(json!([placed("p1", &x)])).await),
        (0, 0, 1, 0, 0, 0)
    );
    let table = api.pheromones("replay").await;
    let trail = trail_of(&table, &x);
    assert_eq!(
        (trail["successes"].as_f64(), trail["failures"].as_f64()),
        (Some(0.0), Some(1.0)),
        "{table}"
    );
    // One failure: reliability 9/11 against the prior's 0.9; τ for the reference (batch) pod
    // prices half of the difference per $ (faded by the moments since: a hair higher).
    let tau = trail["tau"].as_f64().unwrap();
    let one_failure = (-(0.9 - 9.0 / 11.0) / 2.0f64).exp();
    assert!(
        tau >= one_failure && tau - one_failure < 1e-6,
        "τ after a failed outcome: {tau}, want {one_failure}"
    );
    assert_eq!(table["counters"]["deposits"], 1);
    assert_eq!(table["counters"]["lateOutcomes"], 1);

    // An outcome naming another node than the confirmed one changes nothing; placement and
    // outcome in one batch count once each, however often the batch is replayed (once the
    // outcome is recorded, every report of the pod is a duplicate).
    let batch = json!([
        placed("p2", &x),
        with_outcome("p2", &y, json!("failed")),
        with_outcome("p2", &x, json!("succeeded"))
    ]);
    assert_eq!(tally(&api.place(batch.clone()).await), (1, 1, 0, 0, 1, 0));
    for _ in 0..2 {
        assert_eq!(tally(&api.place(batch.clone()).await), (0, 0, 3, 0, 0, 0));
    }
    let table = api.pheromones("replay").await;
    let trail = trail_of(&table, &x);
    // The earlier failure has faded (OUTCOME_HALF_LIFE_MS, 1 h) for the moments since it.
    let failures = trail["failures"].as_f64().unwrap();
    assert_eq!(trail["successes"].as_f64(), Some(1.0), "{table}");
    assert!(failures > 0.999 && failures <= 1.0, "{table}");
    assert!(
        table["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["node"] != y.as_str()),
        "{table}"
    );
    assert_eq!(table["counters"]["deposits"], 2);
}

#[tokio::test]
async fn an_outcome_for_a_pod_we_never_scored_changes_nothing() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    api.scores(
        &pod("known", "fate", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    )
    .await;
    let before = api.pheromones("fate").await;
    let ghost = json!([{"podUid": "uid-ghost", "namespace": "fate", "name": "ghost", "node": name_of(&nodes[0]), "outcome": "failed"}]);
    // Held for a decision that may still be on its way; the redelivery is a duplicate.
    assert_eq!(tally(&api.place(ghost.clone()).await), (0, 0, 0, 0, 0, 1));
    assert_eq!(tally(&api.place(ghost.clone()).await), (0, 0, 1, 0, 0, 0));
    let after = api.pheromones("fate").await;
    assert_eq!(
        (
            &after["counters"]["deposits"],
            &after["nodes"],
            &after["pendingDecisions"]
        ),
        (
            &before["counters"]["deposits"],
            &before["nodes"],
            &before["pendingDecisions"]
        )
    );
    assert_eq!(after["confirmedPods"], 0);
    assert_eq!(after["heldPlacements"], 1);
    assert_eq!(after["counters"]["failedOutcomes"], 0);
}

#[tokio::test]
async fn a_placement_for_a_tenant_that_never_scored_a_pod_is_unknown_not_an_error() {
    let api = Api::start(StartOptions::default());
    let (status, body) = api
        .admin(reqwest::Method::POST, "/v1/placements", Some(json!({"placements": [{"podUid": "u1", "namespace": "brand-new", "name": "p", "node": "n1"}]})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["received"], 1);
    assert_eq!(tally(&body), (0, 0, 0, 0, 0, 1));
    let table = api.pheromones("brand-new").await;
    assert_eq!(
        (
            table["counters"]["deposits"].as_u64(),
            table["tenant"].as_str()
        ),
        (Some(0), Some("brand-new")),
        "{table}"
    );
}

#[tokio::test]
async fn a_batch_failing_in_its_second_tenant_is_retried_exactly() {
    // The second tenant's colony (alphabetical order: t-a, t-b, t-c) fails its first commit.
    let api = Api::start(StartOptions::default().var("TEST_FAULT_PLACEMENTS", "t-b:1"));
    let nodes = priced_nodes();
    let mut batch = Vec::new();
    for tenant in ["t-a", "t-b", "t-c"] {
        for i in 0..3 {
            api.scores(
                &pod(
                    &format!("p{i}"),
                    tenant,
                    json!({}),
                    json!({}),
                    json!({"cpu": "1"}),
                ),
                &nodes,
            )
            .await;
            batch.push(json!({"podUid": format!("uid-{tenant}-p{i}"), "namespace": tenant, "node": name_of(&nodes[i])}));
        }
    }
    let (status, body) = api
        .admin(
            reqwest::Method::POST,
            "/v1/placements",
            Some(json!({"placements": batch})),
        )
        .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["tenants"]["t-a"]["committed"], true, "{body}");
    assert_eq!(body["tenants"]["t-b"]["committed"], false, "{body}");
    assert_eq!(body["tenants"]["t-c"]["committed"], true, "{body}");
    assert_eq!(
        api.pheromones("t-b").await["counters"]["deposits"],
        0,
        "the failed tenant's commit was rolled back"
    );
    // The reporter retries the whole batch: every pod counts exactly once over both attempts.
    let retry = api.place(json!(batch)).await;
    assert_eq!(tally(&retry), (3, 0, 6, 0, 0, 0), "{retry}");
    for tenant in ["t-a", "t-b", "t-c"] {
        let table = api.pheromones(tenant).await;
        assert_eq!(
            table["counters"]["deposits"].as_u64(),
            Some(3),
            "{tenant}: {table}"
        );
        assert_eq!(table["pendingDecisions"], 0);
    }
    let again = api.place(json!(batch)).await;
    assert_eq!(tally(&again), (0, 0, 9, 0, 0, 0), "{again}");
}

#[tokio::test]
async fn a_thousand_concurrent_placements_of_one_pod_deposit_exactly_once() {
    use futures::StreamExt;
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    api.scores(
        &pod("hot", "race", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    )
    .await;
    let report = json!({"placements": [{"podUid": "uid-race-hot", "namespace": "race", "node": name_of(&nodes[0])}]});
    let summaries: Vec<Value> = futures::stream::iter(0..1000)
        .map(|_| async {
            api.admin(
                reqwest::Method::POST,
                "/v1/placements",
                Some(report.clone()),
            )
            .await
        })
        .buffer_unordered(100)
        .map(|(status, body)| {
            assert_eq!(status, 200, "{body}");
            body
        })
        .collect()
        .await;
    let deposited: u64 = summaries
        .iter()
        .map(|s| s["deposited"].as_u64().unwrap())
        .sum();
    let duplicates: u64 = summaries
        .iter()
        .map(|s| s["duplicates"].as_u64().unwrap())
        .sum();
    assert_eq!((deposited, duplicates), (1, 999));
    let table = api.pheromones("race").await;
    assert_eq!(table["counters"]["deposits"].as_u64(), Some(1), "{table}");
}

#[tokio::test]
async fn placements_to_never_scored_tenants_in_one_batch_are_unknown_and_change_nothing() {
    let api = Api::start(StartOptions::default());
    let batch: Vec<Value> = (0..5)
        .map(
            |i| json!({"podUid": format!("u{i}"), "namespace": format!("fresh-{i}"), "node": "n1"}),
        )
        .collect();
    let s = api.place(json!(batch)).await;
    assert_eq!(tally(&s), (0, 0, 0, 0, 0, 5), "{s}");
    for i in 0..5 {
        assert_eq!(
            api.pheromones(&format!("fresh-{i}")).await["counters"]["deposits"],
            0
        );
    }
}

#[tokio::test]
async fn a_placement_that_overtakes_its_decision_is_held_and_deposits_when_the_decision_comes() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let placed = json!([{"podUid": "uid-overtake-early", "namespace": "overtake", "node": name_of(&nodes[0]), "outcome": "succeeded"}]);
    // The reporter saw the binding before the decision reached the colony (in production the
    // batch may come through another isolate, which cannot carry this one's queue).
    assert_eq!(tally(&api.place(placed.clone()).await), (0, 0, 0, 0, 0, 1));
    api.scores(
        &pod(
            "early",
            "overtake",
            json!({}),
            json!({}),
            json!({"cpu": "1"}),
        ),
        &nodes,
    )
    .await;
    // The decision arrives (with this read, which carries the isolate's queue, or
    // DECISION_FLUSH_MS after the answer) and the held report deposits, once.
    let table = api.pheromones("overtake").await;
    assert_eq!(
        (
            table["counters"]["deposits"].as_u64(),
            table["pendingDecisions"].as_u64(),
            table["heldPlacements"].as_u64(),
            table["confirmedPods"].as_u64()
        ),
        (Some(1), Some(0), Some(0), Some(1)),
        "{table}"
    );
    assert_eq!(tally(&api.place(placed).await), (0, 0, 1, 0, 0, 0));
}

#[tokio::test]
async fn decisions_scored_from_the_copy_reach_the_colony_after_their_window_without_any_read() {
    let api = Api::start(StartOptions::default().var("DECISION_FLUSH_MS", "200"));
    let nodes = priced_nodes();
    // The first prioritize fetches the colony; the next five are scored from the copy, and
    // their decisions wait for one send.
    api.scores(
        &pod("p0", "gathered", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    )
    .await;
    api.metrics_containing("aco_colony_decisions_total{tenant=\"gathered\"} 1")
        .await;
    futures::future::join_all((1..=5).map(|i| {
        let p = pod(
            &format!("p{i}"),
            "gathered",
            json!({}),
            json!({}),
            json!({"cpu": "1"}),
        );
        let (api, nodes) = (&api, &nodes);
        async move { api.scores(&p, nodes).await }
    }))
    .await;
    // /metrics reads the colony's own counter and sends no decision itself.
    let text = api
        .metrics_containing("aco_colony_decisions_total{tenant=\"gathered\"} 6")
        .await;
    assert!(
        text.contains("aco_colony_local_decisions_total{result=\"recorded\"} 6"),
        "{text}"
    );
}
