//! Explanations (`GET /v1/tenants/{t}/decisions/{podUid}`, docs/explanations.md) on the built
//! Worker in Miniflare: every candidate's factors, τ and score and the filter's rejections, the
//! admin token and bad pod names, and a bound size with many nodes.

use aco_core::api::error::ErrorBody;
use aco_core::api::placements::{PlacementReport, PlacementsBatch, PlacementsSummary};
use aco_core::colony::DecisionExplanation;
use aco_testkit::api::{exact, full_args, gpu_pod, placed, pod, Api, WorkerHttp};
use aco_testkit::extender::{FilterResult, HostPriority};
use aco_testkit::nodes::{label_of, name_of};
use aco_testkit::openb::{long_named_nodes, priced_nodes};
use aco_testkit::pods::edit_pod;
use aco_testkit::{StartOptions, ADMIN_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};

// ---- Explanations (GET /v1/tenants/{t}/decisions/{podUid}, docs/explanations.md) ----

/// The GPU model label of an OpenB node.
fn gpu_model(n: &Value) -> String {
    label_of(n, "alibabacloud.com/gpu-card-model").expect("an OpenB node's GPU model")
}

/// Filter over `nodes`, then prioritize over the nodes that passed, as kube-scheduler does.
/// Returns (the filter reply, host → score of the prioritize reply).
async fn filter_then_prioritize(
    api: &Api,
    pod: &Value,
    nodes: &[Value],
) -> (FilterResult, std::collections::BTreeMap<String, i64>) {
    let filtered = api.filter_args(full_args(pod, nodes).0).await;
    let passed = filtered.passed();
    let passing: Vec<Value> = nodes
        .iter()
        .filter(|n| passed.contains(&name_of(n)))
        .cloned()
        .collect();
    (filtered, api.scores(pod, &passing).await)
}

/// Every candidate of an explanation: its cost terms add up to its total, η is
/// `exp(−total / COST_REFERENCE)` within the floor (defaults), its score is the one prioritize
/// answered, τ is what the colony holds.
fn check_candidates(
    e: &DecisionExplanation,
    scores: &std::collections::BTreeMap<String, i64>,
    tau: f64,
) {
    assert_eq!(e.candidates.len(), scores.len(), "{e:?}");
    for c in &e.candidates {
        let node = c.node.as_str();
        let terms = c.cost_per_hour.as_ref().unwrap();
        let sum = terms.facts_total() + terms.learned_total();
        let total = c.total_per_hour.unwrap();
        assert!((sum - total).abs() <= 1e-9 + 1e-6 * total, "{node}: {c:?}");
        let expected = (-total).exp().clamp(0.001, 1.0);
        assert!(
            (expected - c.eta).abs() <= 1e-6 * c.eta,
            "{node}: exp(−{total}) = {expected} vs η {}: {c:?}",
            c.eta
        );
        assert_eq!(c.score.map(i64::from), Some(scores[node]), "{node}: {c:?}");
        assert!((c.tau.unwrap() - tau).abs() < 1e-6, "{node}: {c:?}");
    }
}

#[tokio::test]
async fn an_explanation_lists_every_candidates_factors_tau_score_and_the_filters_rejections() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    // Three models allowed: the fourth node is rejected by GPU model.
    let allowed: Vec<String> = nodes[..3].iter().map(gpu_model).collect();
    // Nothing learned yet: τ is 1 on every node.
    let tau = 1.0;
    // The first decision of the tenant asks the colony (PrioritizeRequest carries the filter's
    // rejections); the second is scored from the isolate's copy and sent after the response.
    for pod_name in ["first", "second"] {
        let p = gpu_pod(pod_name, Some(&allowed.join("|")));
        let (filtered, scores) = filter_then_prioritize(&api, &p, &nodes).await;
        let e = api
            .decision("research", &format!("uid-research-{pod_name}"))
            .await;
        assert_eq!(
            (e.pod_uid.as_str(), e.tenant.as_str(), e.candidate_count),
            (&*format!("uid-research-{pod_name}"), "research", 3)
        );
        check_candidates(&e, &scores, tau);
        // Best first: the cheapest candidates (0.45/h) cost the least per hour and score 10.
        assert_eq!(e.candidates[0].score, Some(10), "{e:?}");
        let cost = |n: &Value| {
            e.candidates
                .iter()
                .find(|c| c.node == name_of(n))
                .and_then(|c| c.cost_per_hour.as_ref())
                .unwrap()
                .resources
        };
        assert!(cost(&nodes[0]) < cost(&nodes[2]), "{e:?}");
        assert_eq!(e.explored, None);
        let rejected = name_of(&nodes[3]);
        let f = e.filter_reasons.as_ref().unwrap();
        assert_eq!(
            (f.passed, f.rejected, f.by_reason.get("gpu_model").copied()),
            (3, 1, Some(1)),
            "{e:?}"
        );
        let first = &f.nodes[0];
        assert_eq!(
            (first.node.as_str(), first.code.as_str(), first.unresolvable),
            (rejected.as_str(), "gpu_model", true)
        );
        assert_eq!(
            Some(&first.reason),
            filtered.failed_and_unresolvable_nodes.get(&rejected),
            "the reason kube-scheduler was given"
        );
    }
    // A prioritize this isolate saw no filter for: explained, the filter's part null with a note.
    let p = gpu_pod("unfiltered", Some(&allowed.join("|")));
    let scores = api.scores(&p, &nodes[..3]).await;
    let e = api.decision("research", "uid-research-unfiltered").await;
    check_candidates(&e, &scores, tau);
    assert_eq!(e.filter_reasons, None, "{e:?}");
    assert!(
        e.notes.iter().any(|n| n.contains("filterReasons is null")),
        "{e:?}"
    );
    // A confirmed placement deletes the decision, not its explanation: it now names the node
    // the pod was bound on beside the one prioritize answered.
    let before = api.decision("research", "uid-research-first").await;
    let s = api
        .place_reports(&[placed(
            "uid-research-first",
            "research",
            &name_of(&nodes[2]),
        )])
        .await;
    assert_eq!(s.deposited, 1, "{s:?}");
    let e = api.decision("research", "uid-research-first").await;
    assert_eq!(e.bound_node, Some(name_of(&nodes[2])), "{e:?}");
    assert_eq!(e.answered_node, before.answered_node, "{e:?}");
    assert_eq!(e.candidates, before.candidates, "{e:?}");
    assert_eq!(e.filter_reasons, before.filter_reasons, "{e:?}");
    assert!(e.confirmed_ms.is_some(), "{e:?}");
}

/// Requests on the trace's clock (`TEST_CLOCK_HEADER`): each carries its time. Status and text.
async fn at(api: &Api, t: u64, method: Method, path: &str, body: Option<String>) -> (u16, String) {
    let mut req = api
        .http
        .request(method, api.worker.url(path))
        .header(aco_sim::replay::TEST_CLOCK_HEADER, t.to_string())
        .bearer_auth(ADMIN_TOKEN);
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// The batch of one placement of pod `name` of namespace `team` on `node`.
fn placement_batch(name: &str, node: &str) -> String {
    let placement = PlacementReport {
        name: Some(name.into()),
        tenant: Some("team".into()),
        ..placed(&format!("uid-team-{name}"), "team", node)
    };
    let batch = PlacementsBatch {
        placements: vec![placement],
    };
    serde_json::to_string(&batch).unwrap()
}

#[tokio::test]
async fn a_confirmed_pods_explanation_is_answered_an_hour_of_trace_time_later_naming_its_bound_node(
) {
    let api = Api::start(StartOptions::default().var("TEST_CLOCK_HEADER", "true"));
    let nodes = priced_nodes();
    let t0: u64 = 1_800_000_000_000;
    let p = pod("late", "team", json!({}), json!({}), json!({"cpu": "1"}));
    let path = api.verb_path("prioritize");
    let (status, scored) = at(&api, t0, Method::POST, &path, Some(full_args(&p, &nodes).0)).await;
    assert_eq!(status, 200, "{scored}");
    let scored: Vec<HostPriority> = serde_json::from_str(&scored).unwrap();
    let answered = scored.into_iter().find(|hp| hp.score == 10).unwrap().host;
    // Bound elsewhere than answered (kube-scheduler's own scores may overrule the extender).
    let bound = nodes.iter().map(name_of).find(|n| *n != answered).unwrap();
    let (status, s) = at(
        &api,
        t0 + 2_000,
        Method::POST,
        "/v1/placements",
        Some(placement_batch("late", &bound)),
    )
    .await;
    assert_eq!(status, 200, "{s}");
    let s: PlacementsSummary = exact("/v1/placements", &s);
    assert_eq!(s.deposited, 1, "{s:?}");
    // Other pods come and go in the hour: confirmations of their own.
    for i in 0..30u64 {
        let q = pod(
            &format!("other{i}"),
            "team",
            json!({}),
            json!({}),
            json!({"cpu": "1"}),
        );
        let t = t0 + 60_000 * (i + 1);
        assert_eq!(
            at(&api, t, Method::POST, &path, Some(full_args(&q, &nodes).0))
                .await
                .0,
            200
        );
        let placed = placement_batch(&format!("other{i}"), &bound);
        assert_eq!(
            at(
                &api,
                t + 1_000,
                Method::POST,
                "/v1/placements",
                Some(placed)
            )
            .await
            .0,
            200
        );
    }
    let decision = "/v1/tenants/team/decisions/uid-team-late";
    let hour_later = t0 + 2_000 + 3_600_000;
    let (status, e) = at(&api, hour_later, Method::GET, decision, None).await;
    assert_eq!(status, 200, "{e}");
    let e: DecisionExplanation = exact(decision, &e);
    assert_eq!(
        (&e.bound_node, &e.answered_node, e.confirmed_ms),
        (&Some(bound.clone()), &Some(answered), Some(t0 + 2_000)),
        "{e:?}"
    );
    assert_eq!(e.candidates.len(), nodes.len(), "{e:?}");
    assert!(e.notes.iter().any(|n| n.contains("overruled")), "{e:?}");
    // The same after a restart of the Worker: the explanation was committed with the colony.
    let mut api = api;
    api.worker.restart();
    let (status, e) = at(&api, hour_later + 1, Method::GET, decision, None).await;
    assert_eq!(status, 200, "{e}");
    let e: DecisionExplanation = exact(decision, &e);
    assert_eq!(e.bound_node, Some(bound), "{e:?}");
    // Beyond CONFIRMED_EXPLANATIONS_TTL_MS (a day): no longer kept.
    let (status, e) = at(&api, t0 + 2_000 + 86_400_001, Method::GET, decision, None).await;
    // The error may carry what the colony still knows of the pod beside the error's members.
    let field = ErrorBody::parse(&e).and_then(|b| b.field);
    assert_eq!((status, field.as_deref()), (404, Some("podUid")), "{e}");
}

#[tokio::test]
async fn the_explanation_route_needs_the_admin_token_and_names_an_unknown_or_bad_pod() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    api.scores(
        &pod("p", "team", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    )
    .await;
    let path = "/v1/tenants/team/decisions/uid-team-p";
    let r = api.http.get(api.worker.url(path)).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = api
        .http
        .get(api.worker.url(path))
        .bearer_auth("not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(
        api.decision("team", "uid-team-p").await.pod_uid,
        "uid-team-p"
    );
    // An unknown pod, a bad pod key, a bad tenant: refused naming the field.
    for (tenant, key, status, field) in [
        ("team", "no-such-pod", 404, "podUid"),
        ("team", "a%20b", 400, "podUid"),
        ("not%2Fa%20tenant", "uid-team-p", 400, "tenant"),
    ] {
        let path = format!("/v1/tenants/{tenant}/decisions/{key}");
        let (got, e) = api.admin_refused(Method::GET, &path, None).await;
        assert_eq!(
            (got.as_u16(), e.field.as_deref()),
            (status, Some(field)),
            "{path}: {e:?}"
        );
        if status == 404 {
            assert!(e.error.contains(key), "{e:?}");
        }
    }
    // A pod without a UID is remembered as namespace/name, and asked for the same way.
    let no_uid = edit_pod(
        pod("anon", "team", json!({}), json!({}), json!({"cpu": "1"})),
        |p| p.metadata.uid = Some(String::new()),
    );
    api.scores(&no_uid, &nodes).await;
    let e = api.decision("team", "team/anon").await;
    assert_eq!(e.pod_uid, "team/anon", "{e:?}");
    // In a named cluster, the cluster's colony answers (not the default cluster's).
    let (status, e) = api
        .admin_refused(
            Method::GET,
            "/c/other/v1/tenants/team/decisions/uid-team-p",
            None,
        )
        .await;
    assert_eq!(status, 404, "{e:?}");
    let r = api
        .http
        .post(api.worker.url(path))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
}

#[tokio::test]
async fn an_explanation_stays_bounded_with_many_nodes() {
    let api = Api::start(StartOptions::default());
    // 400 nodes with 253-character names, 100 of each of four GPU models; two models allowed.
    let nodes = long_named_nodes(400);
    let allowed: Vec<String> = nodes[..2].iter().map(gpu_model).collect();
    let p = gpu_pod("wide", Some(&allowed.join("|")));
    let (_, scores) = filter_then_prioritize(&api, &p, &nodes).await;
    assert_eq!(scores.len(), 200);
    let r = api
        .http
        .get(
            api.worker
                .url("/v1/tenants/research/decisions/uid-research-wide"),
        )
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let e: DecisionExplanation = exact("the explanation", &text);
    assert_eq!(
        (e.candidate_count, e.candidates.len()),
        (200, 64),
        "DECISION_KEEP_TOP"
    );
    let f = e.filter_reasons.as_ref().expect("the filter's rejections");
    assert_eq!(
        (
            f.rejected,
            f.by_reason.get("gpu_model").copied(),
            f.nodes.len()
        ),
        (200, Some(200), 64)
    );
    assert!(
        e.notes.iter().any(|n| n.contains("64 of 200 rejected")),
        "{e:?}"
    );
    // 64 candidates and 64 rejections with the longest node names: tens of KB, whatever the cluster.
    eprintln!(
        "explanation of 200 candidates and 200 rejections (253-character names): {} bytes",
        text.len()
    );
    assert!(text.len() < 96 * 1024, "{} bytes", text.len());
}
