//! Shadow mode through the built Worker on Miniflare: pods placed by another scheduler, reported
//! to `POST /v1/shadow`, scored by the tenant's colony; `GET /v1/tenants/{t}/shadow` and the
//! `aco_shadow_…` metrics. Costs are checked against figures computed here from the prices and
//! the core's documented rule (docs/shadow.md): a pod's marginal cost on a node busy with other
//! pods is `price × pod share` (largest share over CPU, memory, GPUs of the node's allocatable);
//! on a node idle before it, `price × (share + OPEN_NODE_IDLE_FRACTION × (1 − share))`.

use std::collections::BTreeMap;

use aco_core::api::nodes::{NodeReport, NodesBatch, NodesReply, UtilisationSample};
use aco_core::api::placements::PlacementReport;
use aco_core::api::shadow::{
    HotNodes, ShadowBatch, ShadowBatchSummary, ShadowReport, ShadowSummaryReply,
};
use aco_core::colony::{Outcome, OutcomeLabel};
use aco_core::k8s::{QuantityText, RawResourceList};
use aco_core::names::NodeName;
use aco_testkit::api::{error_body, exact, placed, pod, Api, WorkerHttp};
use aco_testkit::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use aco_testkit::pods::{edit_pod, edit_spec};
use aco_testkit::StartOptions;
use aco_testkit::{now_ms, ADMIN_TOKEN};
use reqwest::{Method, StatusCode};
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

const FAILED: Outcome = Outcome::Label(OutcomeLabel::Failed);
const SUCCEEDED: Outcome = Outcome::Label(OutcomeLabel::Succeeded);

fn quantities(pairs: &[(&str, &str)]) -> RawResourceList {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), QuantityText(v.to_string())))
        .collect()
}

/// The reports of [`NODES`], `hot_node` (if any) at 0.9 utilisation.
fn facts(hot_node: Option<&str>) -> Vec<NodeReport> {
    let t = now_ms();
    NODES
        .iter()
        .map(|(name, price, requested)| NodeReport {
            labels: Some(BTreeMap::from([(
                "aco/cost-per-hour".to_string(),
                price.to_string(),
            )])),
            allocatable: Some(quantities(&[
                ("cpu", "8"),
                ("memory", "32Gi"),
                ("pods", "110"),
            ])),
            requested: Some(quantities(&[("cpu", requested)])),
            observed_at_ms: Some(t),
            utilisation: if hot_node == Some(name) {
                [t - 1000, t]
                    .map(|at_ms| UtilisationSample { at_ms, value: 0.9 })
                    .to_vec()
            } else {
                Vec::new()
            },
            ..NodeReport::named(NodeName::parse(name).unwrap())
        })
        .collect()
}

/// A 1-CPU, 1 GiB pod of namespace `team` as bound by the default scheduler.
fn bound(name: &str, workload: Option<&str>, node: &str) -> Value {
    let labels = workload.map_or(json!({}), |w| json!({"aco/workload-type": w}));
    let p = pod(
        name,
        "team",
        labels,
        json!({}),
        json!({"cpu": "1", "memory": "1Gi"}),
    );
    edit_spec(p, |spec| {
        spec.scheduler_name = Some("default-scheduler".into());
        spec.node_name = Some(node.into());
    })
}

/// `pod` asking for `cpu` in its first container's requests (its limits as they were).
fn asking_cpu(pod: Value, cpu: &str) -> Value {
    edit_spec(pod, |spec| {
        let resources = spec.containers[0]
            .resources
            .get_or_insert_with(Default::default);
        let requests = resources.requests.get_or_insert_with(Default::default);
        requests.insert("cpu".into(), Quantity(cpu.into()));
    })
}

/// The shadow report of `pod`, named `name` in namespace `team`, seen on `node`.
fn report_of(name: &str, node: &str, pod: Value) -> ShadowReport {
    let placement = PlacementReport {
        name: Some(name.into()),
        ..placed(&format!("uid-team-{name}"), "team", node)
    };
    ShadowReport::of(&placement, pod)
}

fn report(name: &str, workload: Option<&str>, node: &str) -> ShadowReport {
    report_of(name, node, bound(name, workload, node))
}

fn with_outcome(report: ShadowReport, outcome: Outcome) -> ShadowReport {
    ShadowReport {
        outcome: Some(outcome),
        ..report
    }
}

/// `POST {prefix}/v1/shadow` of `body` as given: status, reply text, and the binding operations
/// the Worker counted.
async fn shadow_body(api: &Api, prefix: &str, body: Value) -> (StatusCode, String, u64) {
    let r = api
        .http
        .post(api.worker.url(&format!("{prefix}/v1/shadow")))
        .bearer_auth(ADMIN_TOKEN)
        .json(&body)
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
    (status, r.text().await.unwrap(), ops)
}

/// `POST {prefix}/v1/shadow` of these reports: as [`shadow_body`].
async fn shadow(api: &Api, prefix: &str, placements: &[ShadowReport]) -> (StatusCode, String, u64) {
    let batch = ShadowBatch {
        placements: placements.to_vec(),
    };
    shadow_body(api, prefix, serde_json::to_value(batch).unwrap()).await
}

/// (received, scored, outcomes, duplicates, unknownPod, notFeasible) of a reply, which must be
/// exactly a summary.
fn tally(reply: &str) -> (u64, u64, u64, u64, u64, u64) {
    let s: ShadowBatchSummary = exact("/v1/shadow", reply);
    (
        s.received,
        s.scored,
        s.outcomes,
        s.duplicates,
        s.unknown_pod,
        s.not_feasible,
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
    api.put_facts(facts(Some("c-expensive"))).await;
    let price = |n: &str| NODES.iter().find(|(name, _, _)| *name == n).unwrap().1;
    let share = 1.0 / CPU; // 1 CPU of 8 (1 GiB of 32 is less)

    let batch = [
        report("p1", None, "c-expensive"),
        report("p2", Some("batch"), "c-expensive"),
        report("lc", Some("latency-critical"), "c-expensive"),
        report("alone", None, "d-alone"),
    ];
    let (status, reply, ops) = shadow(&api, "", &batch).await;
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
    let (_, again, _) = shadow(&api, "", &batch).await;
    assert_eq!(tally(&again), (4, 0, 0, 4, 0, 0));
    let (_, twice, _) = shadow(
        &api,
        "",
        &[report("p3", None, "a-cheap"), report("p3", None, "a-cheap")],
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
    api.put_facts(facts(None)).await;
    let (_, first, _) = shadow(&api, "", &[report("p1", None, "c-expensive")]).await;
    assert_eq!(tally(&first), (1, 1, 0, 0, 0, 0));
    let failed = with_outcome(report("p1", None, "c-expensive"), FAILED);
    let (_, r, _) = shadow(&api, "", std::slice::from_ref(&failed)).await;
    assert_eq!(tally(&r), (1, 0, 1, 0, 0, 0));
    for outcome in [FAILED, SUCCEEDED, Outcome::Quality(0.5)] {
        let again = with_outcome(failed.clone(), outcome);
        let (_, r, _) = shadow(&api, "", &[again]).await;
        assert_eq!(tally(&r), (1, 0, 0, 1, 0, 0));
    }
    // An outcome naming another node than where the pod was seen: nothing.
    let elsewhere = with_outcome(report("p1", None, "a-cheap"), FAILED);
    assert_eq!(
        tally(&shadow(&api, "", &[elsewhere]).await.1),
        (1, 0, 0, 1, 0, 0)
    );
    // A first report that carries its outcome: scored, and the outcome applied with it.
    let short_job = with_outcome(report("job", None, "b-mid"), SUCCEEDED);
    assert_eq!(
        tally(&shadow(&api, "", &[short_job]).await.1),
        (1, 1, 0, 0, 0, 0)
    );

    let table = api.pheromone_table("team").await;
    // Learning follows real outcomes only: the one failure was deposited on its node's trail,
    // once; no shadow placement was confirmed or deposited anything.
    assert_eq!(table.counters.failed_outcomes, 1, "{table:?}");
    assert_eq!(table.counters.deposits, 0, "{table:?}");
    let trails = &table.nodes;
    let names: Vec<&str> = trails.iter().map(|t| t.node.as_str()).collect();
    assert_eq!(
        names,
        ["c-expensive", "b-mid"],
        "the failed node first: {table:?}"
    );
    assert_eq!(
        (trails[0].failures, trails[1].successes),
        (1.0, 1.0),
        "{table:?}"
    );
    assert!(trails[0].tau < 1.0, "{table:?}");
    assert_eq!(trails[1].tau, 1.0, "a success costs nothing: {table:?}");
    assert_eq!(summary(&api, "", "team").await.pods, 2);
}

#[tokio::test]
async fn bad_batches_are_400_naming_the_field_and_change_nothing() {
    let api = Api::start(StartOptions::default());
    api.put_facts(facts(None)).await;
    let good = report("p1", None, "c-expensive");
    let bad_quantity = report_of(
        "p1",
        "c-expensive",
        asking_cpu(bound("p1", None, "c-expensive"), "lots"),
    );
    // Names the typed report cannot carry, written out: refused as the batch is read, naming
    // the field and the item (a podUid as a placement's is).
    for (i, key, value, needle) in [
        (2, "node", "Not_A_Node", "is not a valid Kubernetes name"),
        (0, "podUid", "a b", "is not a pod UID"),
    ] {
        let mut items = vec![serde_json::to_value(&good).unwrap(); 3];
        if let Some(item) = items[i].as_object_mut() {
            item.insert(key.to_owned(), json!(value));
        }
        let batch = json!({ "placements": items });
        let (status, body, _) = shadow_body(&api, "", batch).await;
        assert_eq!(status, 400, "{body}");
        let e = error_body(&body);
        let field = format!("placements[{i}].{key}");
        assert_eq!(
            (e.field.as_deref(), e.item),
            (Some(field.as_str()), Some(i)),
            "{body}"
        );
        assert!(e.error.contains(needle), "{body}");
    }
    for (batch, field) in [
        (
            vec![
                good.clone(),
                ShadowReport {
                    pod: None,
                    ..good.clone()
                },
            ],
            "placements[1].pod",
        ),
        (
            vec![ShadowReport {
                pod: Some(json!({"spec": {"containers": "x"}})),
                ..good.clone()
            }],
            "placements[0].pod",
        ),
        (
            vec![with_outcome(good.clone(), Outcome::Quality(2.0))],
            "placements[0].outcome",
        ),
        (
            vec![ShadowReport {
                tenant: Some("../etc".into()),
                ..good.clone()
            }],
            "placements[0].tenant",
        ),
        (
            vec![bad_quantity],
            "placements[0].pod.spec.containers[0].resources.requests.cpu",
        ),
    ] {
        let (status, body, _) = shadow(&api, "", &batch).await;
        assert_eq!(status, 400, "{field}: {body}");
        assert_eq!(error_body(&body).field.as_deref(), Some(field), "{body}");
    }
    // A report with a key the type lacks (written out: the typed report cannot carry one).
    let (status, body, _) = shadow_body(&api, "", json!({"placements": [{"podUid": "u", "node": "a-cheap", "pod": bound("x", None, "a-cheap"), "surprise": 1}]})).await;
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
        tally(&shadow(&api, "", &[good]).await.1),
        (1, 1, 0, 0, 0, 0)
    );
    // A node without facts cannot be priced: counted, not remembered.
    assert_eq!(
        tally(
            &shadow(&api, "", &[report("ghost", None, "no-such-node")])
                .await
                .1
        ),
        (1, 0, 0, 0, 1, 0)
    );
    // Too big to fit anywhere by the core's filter: counted as not feasible, remembered.
    let huge = report_of(
        "huge",
        "a-cheap",
        asking_cpu(bound("huge", None, "a-cheap"), "64"),
    );
    assert_eq!(
        tally(&shadow(&api, "", std::slice::from_ref(&huge)).await.1),
        (1, 0, 0, 0, 0, 1)
    );
    assert_eq!(
        tally(&shadow(&api, "", &[huge]).await.1),
        (1, 0, 0, 1, 0, 0)
    );
    let s = summary(&api, "", "team").await;
    assert_eq!((s.pods, s.not_feasible), (1, 1), "{s:?}");
}

#[tokio::test]
async fn tenants_and_clusters_keep_their_own_summaries() {
    let api = Api::start(StartOptions::default());
    api.put_facts(facts(None)).await;
    // The prod cluster knows only a-cheap and c-expensive.
    let prod = NodesBatch {
        nodes: facts(None)
            .into_iter()
            .filter(|n| n.name == "a-cheap" || n.name == "c-expensive")
            .collect(),
        ..NodesBatch::default()
    };
    let reply: NodesReply = api
        .admin_as(
            Method::PUT,
            "/c/prod/v1/nodes",
            Some(serde_json::to_value(prod).unwrap()),
        )
        .await;
    assert_eq!(reply.nodes, 2, "{reply:?}");

    // Tenant from the report, from the pod's label, and the namespace by default.
    let labelled = report_of(
        "l1",
        "c-expensive",
        edit_pod(bound("l1", None, "c-expensive"), |p| {
            let labels = p.metadata.labels.get_or_insert_with(Default::default);
            labels.insert("scheduling.aco/tenant-id".into(), "ml".into());
        }),
    );
    let explicit = ShadowReport {
        tenant: Some("ml".into()),
        ..report("e1", None, "c-expensive")
    };
    let (_, r, ops) = shadow(
        &api,
        "",
        &[report("t1", None, "c-expensive"), labelled, explicit],
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
        &[
            report("t1", None, "c-expensive"),
            report("t2", None, "d-alone"),
        ],
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
