//! Shadow mode through the built Worker on Miniflare: pods placed by another scheduler, reported
//! to `POST /v1/shadow`, scored by the tenant's colony; `GET /v1/tenants/{t}/shadow` and the
//! `aco_shadow_…` metrics. Costs are checked against figures computed here from the prices and
//! the core's documented rule (docs/shadow.md): a pod's marginal cost on a node busy with other
//! pods is `price × pod share` (largest share over CPU, memory, GPUs of the node's allocatable);
//! on a node idle before it, `price × (share + OPEN_NODE_IDLE_FRACTION × (1 − share))`.

use aco_core::api::shadow::{HotNodes, ShadowSummaryReply};
use aco_testkit::api::WorkerHttp;
use aco_testkit::api::{pod, Api};
use aco_testkit::StartOptions;
use aco_testkit::{now_ms, ADMIN_TOKEN};
use reqwest::Method;
use serde_json::{json, Value};

/// Every node: 8 CPU, 32 GiB.
const CPU: f64 = 8.0;
/// (name, $/h, CPU requested by pods on it as the reporter sees it after the binding).
const NODES: [(&str, f64, &str); 4] = [
    // Busy with 2 CPU of others' pods: the colony's pick for a 1-CPU pod (cheapest share).
    ("a-cheap", 0.45, "2"),
    // Idle: the whole price.
    ("b-mid", 1.20, "0"),
    // Expensive, 2 CPU of others plus the 1 CPU of the pod reported there.
    ("c-expensive", 3.20, "3"),
    // Holds only the pod reported there: idle before it.
    ("d-alone", 2.00, "1"),
];

fn facts(hot_node: Option<&str>) -> Value {
    let t = now_ms();
    let nodes: Vec<Value> = NODES
        .iter()
        .map(|(name, price, requested)| {
            let mut n = json!({
                "name": name,
                "labels": {"aco/cost-per-hour": price.to_string()},
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "requested": {"cpu": requested},
                "observedAtMs": t,
            });
            if hot_node == Some(name) {
                n["utilisation"] =
                    json!([{"atMs": t - 1000, "value": 0.9}, {"atMs": t, "value": 0.9}]);
            }
            n
        })
        .collect();
    json!({ "nodes": nodes })
}

/// A 1-CPU, 1 GiB pod of namespace `team` as bound by the default scheduler.
fn bound(name: &str, workload: Option<&str>, node: &str) -> Value {
    let labels = workload.map_or(json!({}), |w| json!({"aco/workload-type": w}));
    let mut p = pod(
        name,
        "team",
        labels,
        json!({}),
        json!({"cpu": "1", "memory": "1Gi"}),
    );
    p["spec"]["schedulerName"] = json!("default-scheduler");
    p["spec"]["nodeName"] = json!(node);
    p
}

fn report(name: &str, workload: Option<&str>, node: &str) -> Value {
    json!({"podUid": format!("uid-team-{name}"), "namespace": "team", "name": name, "node": node, "pod": bound(name, workload, node)})
}

async fn shadow(api: &Api, prefix: &str, placements: Value) -> (reqwest::StatusCode, Value, u64) {
    let r = api
        .http
        .post(api.worker.url(&format!("{prefix}/v1/shadow")))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({ "placements": placements }))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let ops = r
        .headers()
        .get("x-aco-binding-ops")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(u64::MAX);
    let text = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ops,
    )
}

/// (received, scored, outcomes, duplicates, unknownPod, notFeasible), checking the reply's shape.
fn tally(reply: &Value) -> (u64, u64, u64, u64, u64, u64) {
    assert_eq!(
        reply.as_object().map(|o| o.len()),
        Some(6),
        "unexpected reply shape: {reply}"
    );
    let n = |k: &str| {
        reply[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} missing in {reply}"))
    };
    (
        n("received"),
        n("scored"),
        n("outcomes"),
        n("duplicates"),
        n("unknownPod"),
        n("notFeasible"),
    )
}

async fn summary(api: &Api, prefix: &str, tenant: &str) -> ShadowSummaryReply {
    api.admin_as(
        Method::GET,
        &format!("{prefix}/v1/tenants/{tenant}/shadow"),
        None,
    )
    .await
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test]
async fn pods_placed_on_the_expensive_node_are_priced_against_the_colonys_choice() {
    let api = Api::start(StartOptions::default());
    api.put_facts(facts(Some("c-expensive"))["nodes"].clone())
        .await;
    let price = |n: &str| NODES.iter().find(|(name, _, _)| *name == n).unwrap().1;
    let share = 1.0 / CPU; // 1 CPU of 8 (1 GiB of 32 is less)

    let batch = json!([
        report("p1", None, "c-expensive"),
        report("p2", Some("batch"), "c-expensive"),
        report("lc", Some("latency-critical"), "c-expensive"),
        report("alone", None, "d-alone"),
    ]);
    let (status, reply, ops) = shadow(&api, "", batch.clone()).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(tally(&reply), (4, 4, 0, 0, 0, 0));
    // One facts read, the colony admitted (its first use in this isolate) and fetched once (no
    // copy yet), one batch: whatever the batch size.
    assert!(ops <= 4, "binding operations {ops}");

    let s = summary(&api, "", "team").await;
    // Busy before the pod (2 CPU of others): price × share. d-alone held nothing before the pod
    // (its own request taken off): the pod opens it, and pays its share plus
    // OPEN_NODE_IDLE_FRACTION (0.5) of the capacity left idle. The colony: a-cheap, busy, for all
    // four — the latency-critical pod too, since a-cheap after placement (3 CPU of 8) is far
    // below the load where η starts pricing SLA breaches.
    let opened = share + 0.5 * (1.0 - share);
    let chosen = 3.0 * price("c-expensive") * share + price("d-alone") * opened;
    let colony = 4.0 * price("a-cheap") * share;
    assert_eq!((s.pods, s.agreements, s.not_feasible), (4, 0, 0), "{s:?}");
    assert!(close(s.chosen_cost_per_hour, chosen), "{s:?} vs {chosen}");
    assert!(close(s.colony_cost_per_hour, colony), "{s:?} vs {colony}");
    assert!(close(s.saving_per_hour, chosen - colony), "{s:?}");
    assert!(
        close(s.saving_fraction, (chosen - colony) / chosen),
        "{s:?}"
    );
    assert!(close(s.agreement_rate, 0.0), "{s:?}");
    // c-expensive at 0.9 utilisation leaves no headroom for the latency-critical pod; a-cheap does.
    assert_eq!(s.latency_critical, 1, "{s:?}");
    assert_eq!(
        s.latency_critical_on_hot_nodes,
        HotNodes {
            chosen: 1,
            colony: 0
        },
        "{s:?}"
    );

    // At-least-once delivery: the batch again, and a pod twice in one batch, count nothing more.
    let (_, again, _) = shadow(&api, "", batch.clone()).await;
    assert_eq!(tally(&again), (4, 0, 0, 4, 0, 0));
    let (_, twice, _) = shadow(
        &api,
        "",
        json!([report("p3", None, "a-cheap"), report("p3", None, "a-cheap")]),
    )
    .await;
    assert_eq!(tally(&twice), (2, 1, 0, 1, 0, 0));
    let s = summary(&api, "", "team").await;
    assert_eq!(
        (s.pods, s.agreements),
        (5, 1),
        "p3 went where the colony would have put it: {s:?}"
    );
    assert!(
        close(s.chosen_cost_per_hour, chosen + price("a-cheap") * share),
        "{s:?}"
    );

    api.metrics_containing("aco_shadow_pods_total{tenant=\"team\"} 5")
        .await;
    let text = api
        .metrics_containing("aco_shadow_agreements_total{tenant=\"team\"} 1")
        .await;
    for line in [
        "aco_shadow_latency_critical_on_hot_nodes_total{tenant=\"team\",choice=\"chosen\"} 1",
        "aco_shadow_latency_critical_on_hot_nodes_total{tenant=\"team\",choice=\"colony\"} 0",
        "# TYPE aco_shadow_chosen_cost_dollars_per_hour_total counter",
        "aco_shadow_colony_cost_dollars_per_hour_total{tenant=\"team\"} ",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}

#[tokio::test]
async fn an_outcome_deposits_once_and_a_shadow_placement_nothing() {
    let api = Api::start(StartOptions::default());
    api.put_facts(facts(None)["nodes"].clone()).await;
    let (_, first, _) = shadow(&api, "", json!([report("p1", None, "c-expensive")])).await;
    assert_eq!(tally(&first), (1, 1, 0, 0, 0, 0));
    let mut failed = report("p1", None, "c-expensive");
    failed["outcome"] = json!("failed");
    let (_, r, _) = shadow(&api, "", json!([failed.clone()])).await;
    assert_eq!(tally(&r), (1, 0, 1, 0, 0, 0));
    for outcome in [json!("failed"), json!("succeeded"), json!(0.5)] {
        let mut again = failed.clone();
        again["outcome"] = outcome;
        let (_, r, _) = shadow(&api, "", json!([again])).await;
        assert_eq!(tally(&r), (1, 0, 0, 1, 0, 0));
    }
    // An outcome naming another node than where the pod was seen: nothing.
    let mut elsewhere = report("p1", None, "a-cheap");
    elsewhere["outcome"] = json!("failed");
    assert_eq!(
        tally(&shadow(&api, "", json!([elsewhere])).await.1),
        (1, 0, 0, 1, 0, 0)
    );
    // A first report that carries its outcome: scored, and the outcome applied with it.
    let mut short_job = report("job", None, "b-mid");
    short_job["outcome"] = json!("succeeded");
    assert_eq!(
        tally(&shadow(&api, "", json!([short_job])).await.1),
        (1, 1, 0, 0, 0, 0)
    );

    let table = api.pheromones("team").await;
    // Learning follows real outcomes only: the one failure was deposited on its node's trail,
    // once; no shadow placement was confirmed or deposited anything.
    assert_eq!(table["counters"]["failedOutcomes"], 1, "{table}");
    assert_eq!(table["counters"]["deposits"], 0, "{table}");
    let trails = table["nodes"].as_array().unwrap();
    let names: Vec<&str> = trails.iter().map(|t| t["node"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["c-expensive", "b-mid"],
        "the failed node first: {table}"
    );
    assert_eq!(
        (&trails[0]["failures"], &trails[1]["successes"]),
        (&json!(1.0), &json!(1.0)),
        "{table}"
    );
    assert!(trails[0]["tau"].as_f64().unwrap() < 1.0, "{table}");
    assert_eq!(trails[1]["tau"], 1.0, "a success costs nothing: {table}");
    assert_eq!(summary(&api, "", "team").await.pods, 2);
}

#[tokio::test]
async fn bad_batches_are_400_naming_the_field_and_change_nothing() {
    let api = Api::start(StartOptions::default());
    api.put_facts(facts(None)["nodes"].clone()).await;
    let good = report("p1", None, "c-expensive");
    let with = |field: &str, value: Value| {
        let mut r = good.clone();
        if value.is_null() {
            r.as_object_mut().unwrap().remove(field);
        } else {
            r[field] = value;
        }
        r
    };
    let mut bad_quantity = good.clone();
    bad_quantity["pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("lots");
    for (batch, field) in [
        (
            json!([good.clone(), with("pod", Value::Null)]),
            "placements[1].pod",
        ),
        (
            json!([with("pod", json!({"spec": {"containers": "x"}}))]),
            "placements[0].pod",
        ),
        (
            json!([
                good.clone(),
                good.clone(),
                with("node", json!("Not_A_Node"))
            ]),
            "placements[2].node",
        ),
        (
            json!([with("outcome", json!(2.0))]),
            "placements[0].outcome",
        ),
        (
            json!([with("tenant", json!("../etc"))]),
            "placements[0].tenant",
        ),
        (
            json!([bad_quantity]),
            "placements[0].pod.spec.containers[0].resources.requests.cpu",
        ),
    ] {
        let (status, body, _) = shadow(&api, "", batch).await;
        assert_eq!(status, 400, "{field}: {body}");
        assert_eq!(body["field"], field, "{body}");
    }
    let (status, body, _) = shadow(&api, "", json!([{"podUid": "u", "node": "a-cheap", "pod": bound("x", None, "a-cheap"), "surprise": 1}])).await;
    assert_eq!(status, 400, "{body}");
    let r = api
        .http
        .post(api.worker.url("/v1/shadow"))
        .json(&json!({"placements": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let (status, _) = api.admin(Method::PUT, "/v1/shadow", Some(json!({}))).await;
    assert_eq!(status, 405);
    // Nothing was counted: the good pod of a refused batch is new the first time it is accepted.
    assert_eq!(summary(&api, "", "team").await.pods, 0);
    assert_eq!(
        tally(&shadow(&api, "", json!([good])).await.1),
        (1, 1, 0, 0, 0, 0)
    );
    // A node without facts cannot be priced: counted, not remembered.
    assert_eq!(
        tally(
            &shadow(&api, "", json!([report("ghost", None, "no-such-node")]))
                .await
                .1
        ),
        (1, 0, 0, 0, 1, 0)
    );
    // Too big to fit anywhere by the core's filter: counted as not feasible, remembered.
    let mut huge = report("huge", None, "a-cheap");
    huge["pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("64");
    assert_eq!(
        tally(&shadow(&api, "", json!([huge.clone()])).await.1),
        (1, 0, 0, 0, 0, 1)
    );
    assert_eq!(
        tally(&shadow(&api, "", json!([huge])).await.1),
        (1, 0, 0, 1, 0, 0)
    );
    let s = summary(&api, "", "team").await;
    assert_eq!((s.pods, s.not_feasible), (1, 1), "{s:?}");
}

#[tokio::test]
async fn tenants_and_clusters_keep_their_own_summaries() {
    let api = Api::start(StartOptions::default());
    api.put_facts(facts(None)["nodes"].clone()).await;
    // The prod cluster knows only a-cheap and c-expensive.
    let mut prod = facts(None);
    prod["nodes"]
        .as_array_mut()
        .unwrap()
        .retain(|n| n["name"] == "a-cheap" || n["name"] == "c-expensive");
    let (status, body) = api.admin(Method::PUT, "/c/prod/v1/nodes", Some(prod)).await;
    assert_eq!(status, 200, "{body}");

    // Tenant from the report, from the pod's label, and the namespace by default.
    let mut labelled = report("l1", None, "c-expensive");
    labelled["pod"]["metadata"]["labels"]["scheduling.aco/tenant-id"] = json!("ml");
    let mut explicit = report("e1", None, "c-expensive");
    explicit["tenant"] = json!("ml");
    let (_, r, ops) = shadow(
        &api,
        "",
        json!([report("t1", None, "c-expensive"), labelled, explicit]),
    )
    .await;
    assert_eq!(tally(&r), (3, 3, 0, 0, 0, 0));
    assert!(
        ops <= 7,
        "one facts read and per tenant at most two colony requests and, the first time, its admission: {ops}"
    );
    assert_eq!(summary(&api, "", "team").await.pods, 1);
    assert_eq!(summary(&api, "", "ml").await.pods, 2);

    // The same pod key in the prod cluster is another pod of another colony.
    let (status, r, _) = shadow(
        &api,
        "/c/prod",
        json!([
            report("t1", None, "c-expensive"),
            report("t2", None, "d-alone")
        ]),
    )
    .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        tally(&r),
        (2, 1, 0, 0, 1, 0),
        "d-alone has no facts in prod"
    );
    let s = summary(&api, "/c/prod", "team").await;
    assert_eq!((s.pods, s.cluster.as_str()), (1, "prod"), "{s:?}");
    assert_eq!(
        summary(&api, "", "team").await.pods,
        1,
        "the default cluster's summary is untouched"
    );
    assert_eq!(summary(&api, "/c/prod", "ml").await.pods, 0);
    api.metrics_containing("aco_shadow_pods_total{cluster=\"prod\",tenant=\"team\"} 1")
        .await;
}
