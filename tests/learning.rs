//! Learning on the built Worker in Miniflare: placements are confirmed once per pod
//! (`/v1/placements`, `/v1/bind`) and only their outcomes deposit on the trail, once, tenants
//! isolated; unknown pods and tenants change nothing; a batch failing in one tenant is retried
//! exactly.

use aco_core::api::batch_failure::BatchFailure;
use aco_core::api::pheromones::{NodeTrail, PheromoneTableReply, ResetReply};
use aco_core::api::placements::{PlacementReport, PlacementsSummary};
use aco_core::colony::{Outcome, OutcomeLabel};
use aco_testkit::api::{exact, placed, pod, Api, WorkerHttp};
use aco_testkit::nodes::name_of;
use aco_testkit::openb::priced_nodes;
use aco_testkit::StartOptions;
use serde_json::json;

const FAILED: Outcome = Outcome::Label(OutcomeLabel::Failed);
const SUCCEEDED: Outcome = Outcome::Label(OutcomeLabel::Succeeded);

/// `report` with its outcome.
fn with_outcome(report: PlacementReport, outcome: Outcome) -> PlacementReport {
    PlacementReport {
        outcome: Some(outcome),
        ..report
    }
}

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
    let table = api.pheromone_table("alpha").await;
    assert_eq!(
        (table.counters.deposits, table.nodes.len()),
        (0, 0),
        "{table:?}"
    );

    // Confirmed placements of alpha's pods are counted, and teach nothing by themselves.
    let placement = |i: usize| PlacementReport {
        name: Some(format!("p{i}")),
        tenant: Some("alpha".into()),
        ..placed(&format!("uid-shared-ns-p{i}"), "shared-ns", &best)
    };
    let placements: Vec<PlacementReport> = (1..=20).map(placement).collect();
    let summary = api.place_reports(&placements).await;
    assert_eq!(summary.deposited, 20, "{summary:?}");
    let table = api.pheromone_table("alpha").await;
    assert_eq!(table.counters.deposits, 20);
    assert_eq!(table.nodes, [], "a placement deposits nothing: {table:?}");
    assert_eq!(
        api.scores(&tenant_pod("alpha", 0), &nodes).await,
        baseline_a
    );

    // Their outcomes do: the pods failed there, alpha's trail on that node falls.
    let failed: Vec<PlacementReport> = (1..=20)
        .map(|i| with_outcome(placement(i), FAILED))
        .collect();
    let summary = api.place_reports(&failed).await;
    assert_eq!(summary.outcomes, 20, "{summary:?}");
    let table = api.pheromone_table("alpha").await;
    assert_eq!(
        table
            .nodes
            .iter()
            .map(|t| t.node.as_str())
            .collect::<Vec<_>>(),
        [best.as_str()],
        "{table:?}"
    );
    assert!(table.nodes[0].tau < 1.0, "{table:?}");

    let after_a = api.scores(&tenant_pod("alpha", 99), &nodes).await;
    // The same pod as the baseline: among equal nodes the answer's top is told apart by the pod.
    let after_b = api.scores(&tenant_pod("beta", 0), &nodes).await;
    assert!(
        after_a[&best] < baseline_a[&best],
        "{after_a:?} vs {baseline_a:?}"
    );
    assert_eq!(after_b, baseline_b);
    assert_eq!(api.pheromone_table("beta").await.nodes, []);

    // A repeated or unknown report deposits nothing more.
    let never_scored = PlacementReport {
        namespace: None,
        tenant: Some("alpha".into()),
        ..placed("never-scored", "", &best)
    };
    let again = api.place_reports(&[failed[0].clone(), never_scored]).await;
    assert_eq!(
        (again.deposited, again.duplicates, again.held),
        (0, 1, 1),
        "{again:?}"
    );
    assert_eq!(
        api.pheromone_table("alpha").await.counters.failed_outcomes,
        20
    );

    // Reset clears the tenant's colony.
    let before_reset = api.pheromone_table("alpha").await;
    let reset: ResetReply = api
        .admin_as(
            reqwest::Method::DELETE,
            "/v1/tenants/alpha/pheromones",
            None,
        )
        .await;
    assert!(reset.reset, "{reset:?}");
    assert!(
        reset.version > before_reset.version,
        "{reset:?} after {before_reset:?}"
    );
    let table = api.pheromone_table("alpha").await;
    assert_eq!((table.counters.deposits, table.nodes.len()), (0, 0));
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
    let table = api.pheromone_table("shop").await;
    assert_eq!(
        (table.counters.deposits, table.confirmed_pods),
        (1, 1),
        "{table:?}"
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
    assert_eq!(api.deposits("storefront").await, 1);
    assert_eq!(api.deposits("shop").await, 0);
}

/// The summary of a placements batch as (deposited, outcomes, duplicates, unknownPod,
/// notACandidate, held).
fn tally(s: &PlacementsSummary) -> (u64, u64, u64, u64, u64, u64) {
    (
        s.deposited,
        s.outcomes,
        s.duplicates,
        s.unknown_pod,
        s.not_a_candidate,
        s.held,
    )
}

fn trail_of<'a>(table: &'a PheromoneTableReply, node: &str) -> &'a NodeTrail {
    table
        .nodes
        .iter()
        .find(|t| t.node == node)
        .unwrap_or_else(|| panic!("no trail for {node}: {table:?}"))
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
    let placed = |p: &str, node: &str| PlacementReport {
        name: Some(p.into()),
        tenant: Some("replay".into()),
        ..placed(&format!("uid-replay-{p}"), "replay", node)
    };
    let with_outcome =
        |p: &str, node: &str, outcome: Outcome| with_outcome(placed(p, node), outcome);

    // The placement, delivered three times (and twice more inside one batch), counts once.
    let first = api.place_reports(&[placed("p1", &x)]).await;
    assert_eq!(first.received, 1);
    assert_eq!(tally(&first), (1, 0, 0, 0, 0, 0), "{first:?}");
    let after_deposit = api.pheromone_table("replay").await;
    assert_eq!(after_deposit.nodes, [], "a placement deposits nothing");
    for _ in 0..2 {
        assert_eq!(
            tally(&api.place_reports(&[placed("p1", &x)]).await),
            (0, 0, 1, 0, 0, 0)
        );
    }
    assert_eq!(
        tally(
            &api.place_reports(&[placed("p1", &x), placed("p1", &x)])
                .await
        ),
        (0, 0, 2, 0, 0, 0)
    );
    let table = api.pheromone_table("replay").await;
    assert_eq!(table.counters.deposits, 1);
    assert_eq!(table.nodes, after_deposit.nodes);
    assert_eq!(
        (table.pending_decisions, table.confirmed_pods),
        (1, 1),
        "{table:?}"
    );

    // The pod's fate, reported later: deposited on the confirmed node's trail, once.
    let failure_sent = std::time::Instant::now();
    assert_eq!(
        tally(&api.place_reports(&[with_outcome("p1", &x, FAILED)]).await),
        (0, 1, 0, 0, 0, 0)
    );
    for outcome in [FAILED, FAILED, SUCCEEDED, Outcome::Quality(0.9)] {
        assert_eq!(
            tally(&api.place_reports(&[with_outcome("p1", &x, outcome)]).await),
            (0, 0, 1, 0, 0, 0)
        );
    }
    assert_eq!(
        tally(&api.place_reports(&[placed("p1", &x)]).await),
        (0, 0, 1, 0, 0, 0)
    );
    let table = api.pheromone_table("replay").await;
    let trail = trail_of(&table, &x);
    assert_eq!((trail.successes, trail.failures), (0.0, 1.0), "{table:?}");
    // One failure: reliability 9/11 against the prior's 0.9 (RELIABILITY_PRIOR_* 9 and 1); τ
    // for the reference (batch) pod prices half of the difference per $. The failure has faded
    // (OUTCOME_HALF_LIFE_MS, 1 h) for the moments since it, at most the time measured here: on
    // a loaded machine that is a fraction of a second, not a fixed hair.
    let tau_after = |failures: f64| (-(0.9 - 9.0 / (10.0 + failures)) / 2.0f64).exp();
    let since_ms = failure_sent.elapsed().as_secs_f64() * 1000.0;
    let (one_failure, faded_most) = (
        tau_after(1.0),
        tau_after(0.5f64.powf(since_ms / 3_600_000.0)),
    );
    let tau = trail.tau;
    assert!(
        (one_failure..=faded_most).contains(&tau),
        "τ after a failed outcome {since_ms} ms ago: {tau}, want {one_failure}..={faded_most}"
    );
    assert_eq!(
        (table.counters.deposits, table.counters.late_outcomes),
        (1, 1)
    );

    // An outcome naming another node than the confirmed one changes nothing; placement and
    // outcome in one batch count once each, however often the batch is replayed (once the
    // outcome is recorded, every report of the pod is a duplicate).
    let batch = [
        placed("p2", &x),
        with_outcome("p2", &y, FAILED),
        with_outcome("p2", &x, SUCCEEDED),
    ];
    assert_eq!(tally(&api.place_reports(&batch).await), (1, 1, 0, 0, 1, 0));
    for _ in 0..2 {
        assert_eq!(tally(&api.place_reports(&batch).await), (0, 0, 3, 0, 0, 0));
    }
    let table = api.pheromone_table("replay").await;
    let trail = trail_of(&table, &x);
    // The earlier failure has faded (OUTCOME_HALF_LIFE_MS, 1 h) for the moments since it.
    let failures = trail.failures;
    assert_eq!(trail.successes, 1.0, "{table:?}");
    assert!(failures > 0.999 && failures <= 1.0, "{table:?}");
    assert!(table.nodes.iter().all(|t| t.node != y), "{table:?}");
    assert_eq!(table.counters.deposits, 2);
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
    let before = api.pheromone_table("fate").await;
    let ghost = [with_outcome(
        PlacementReport {
            name: Some("ghost".into()),
            ..placed("uid-ghost", "fate", &name_of(&nodes[0]))
        },
        FAILED,
    )];
    // Held for a decision that may still be on its way; the redelivery is a duplicate.
    assert_eq!(tally(&api.place_reports(&ghost).await), (0, 0, 0, 0, 0, 1));
    assert_eq!(tally(&api.place_reports(&ghost).await), (0, 0, 1, 0, 0, 0));
    let after = api.pheromone_table("fate").await;
    assert_eq!(
        (
            after.counters.deposits,
            &after.nodes,
            after.pending_decisions
        ),
        (
            before.counters.deposits,
            &before.nodes,
            before.pending_decisions
        )
    );
    // The pod was scored: a decision pends, so an equal count means it was not consumed.
    assert_eq!(before.pending_decisions, 1, "{before:?}");
    assert_eq!(after.confirmed_pods, 0);
    assert_eq!(after.held_placements, 1);
    assert_eq!(after.counters.failed_outcomes, 0);
}

#[tokio::test]
async fn a_placement_for_a_tenant_that_never_scored_a_pod_is_unknown_not_an_error() {
    let api = Api::start(StartOptions::default());
    let report = PlacementReport {
        name: Some("p".into()),
        ..placed("u1", "brand-new", "n1")
    };
    let summary = api.place_reports(&[report]).await;
    assert_eq!(summary.received, 1);
    assert_eq!(tally(&summary), (0, 0, 0, 0, 0, 1));
    let table = api.pheromone_table("brand-new").await;
    assert_eq!(
        (table.counters.deposits, table.tenant.as_str()),
        (0, "brand-new"),
        "{table:?}"
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
            batch.push(placed(
                &format!("uid-{tenant}-p{i}"),
                tenant,
                &name_of(&nodes[i]),
            ));
        }
    }
    let (status, text) = api.post_placements(&batch).await;
    assert_eq!(status, 503, "{text}");
    let failure: BatchFailure = exact("/v1/placements", &text);
    let committed: Vec<(&str, bool)> = failure
        .tenants
        .iter()
        .map(|(t, c)| (t.as_str(), c.committed))
        .collect();
    assert_eq!(
        committed,
        [("t-a", true), ("t-b", false), ("t-c", true)],
        "{failure:?}"
    );
    // The committed tenants say what their colonies did: each deposited its three pods.
    for tenant in ["t-a", "t-c"] {
        let applied = failure.tenants[tenant].applied.as_ref();
        assert_eq!(applied.map(|a| a.deposited), Some(3), "{failure:?}");
    }
    assert_eq!(
        api.deposits("t-b").await,
        0,
        "the failed tenant's commit was rolled back"
    );
    // The reporter retries the whole batch: every pod counts exactly once over both attempts.
    let retry = api.place_reports(&batch).await;
    assert_eq!(tally(&retry), (3, 0, 6, 0, 0, 0), "{retry:?}");
    for tenant in ["t-a", "t-b", "t-c"] {
        let table = api.pheromone_table(tenant).await;
        assert_eq!(table.counters.deposits, 3, "{tenant}: {table:?}");
        assert_eq!(table.pending_decisions, 0);
    }
    let again = api.place_reports(&batch).await;
    assert_eq!(tally(&again), (0, 0, 9, 0, 0, 0), "{again:?}");
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
    let report = [placed("uid-race-hot", "race", &name_of(&nodes[0]))];
    let summaries: Vec<PlacementsSummary> = futures::stream::iter(0..1000)
        .map(|_| api.place_reports(&report))
        .buffer_unordered(100)
        .collect()
        .await;
    let deposited: u64 = summaries.iter().map(|s| s.deposited).sum();
    let duplicates: u64 = summaries.iter().map(|s| s.duplicates).sum();
    assert_eq!((deposited, duplicates), (1, 999));
    let table = api.pheromone_table("race").await;
    assert_eq!(table.counters.deposits, 1, "{table:?}");
}

#[tokio::test]
async fn placements_to_never_scored_tenants_in_one_batch_are_unknown_and_change_nothing() {
    let api = Api::start(StartOptions::default());
    let batch: Vec<PlacementReport> = (0..5)
        .map(|i| placed(&format!("u{i}"), &format!("fresh-{i}"), "n1"))
        .collect();
    let s = api.place_reports(&batch).await;
    assert_eq!(tally(&s), (0, 0, 0, 0, 0, 5), "{s:?}");
    for i in 0..5 {
        assert_eq!(api.deposits(&format!("fresh-{i}")).await, 0);
    }
}

#[tokio::test]
async fn a_placement_that_overtakes_its_decision_is_held_and_deposits_when_the_decision_comes() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let placed = [with_outcome(
        placed("uid-overtake-early", "overtake", &name_of(&nodes[0])),
        SUCCEEDED,
    )];
    // The reporter saw the binding before the decision reached the colony (in production the
    // batch may come through another isolate, which cannot carry this one's queue).
    assert_eq!(tally(&api.place_reports(&placed).await), (0, 0, 0, 0, 0, 1));
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
    let table = api.pheromone_table("overtake").await;
    assert_eq!(
        (
            table.counters.deposits,
            table.pending_decisions,
            table.held_placements,
            table.confirmed_pods
        ),
        (1, 0, 0, 1),
        "{table:?}"
    );
    assert_eq!(tally(&api.place_reports(&placed).await), (0, 0, 1, 0, 0, 0));
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
