//! The extender verbs on the built Worker in Miniflare: filter in full-Nodes and names mode
//! (GPU models, headroom from the reporter's facts, latency targets, unusable annotations), and
//! prioritize (η in dollars: price, spot and load risk; equal nodes equal; scored from the
//! isolate's copy of the colony).

use std::collections::BTreeMap;

use aco_core::colony::DecisionExplanation;
use aco_core::heuristic::CostTerms;
use aco_testkit::api::{full_args, gpu_pod, pod, Api, WorkerHttp};
use aco_testkit::extender::{FilterResult, HostPriority};
use aco_testkit::nodes::{allocatable_of, label_of, name_of, set_label};
use aco_testkit::openb::{openb_nodes, priced_nodes};
use aco_testkit::{now_ms, StartOptions};
use serde_json::{json, Value};

#[tokio::test]
async fn full_nodes_mode_keeps_allowed_gpu_models_and_echoes_node_bytes() {
    let api = Api::start(StartOptions::default());
    let nodes = openb_nodes(2);
    let (body, items) = full_args(&gpu_pod("train", Some("V100M16|V100M32")), &nodes);
    let (status, text) = api.post_raw("/v1/filter", body).await;
    assert_eq!(status, 200, "{text}");
    let reply: FilterResult = serde_json::from_str(&text).unwrap();

    let model = |n: &Value| label_of(n, "alibabacloud.com/gpu-card-model").unwrap();
    let expected: Vec<String> = nodes
        .iter()
        .filter(|n| model(n).starts_with("V100"))
        .map(name_of)
        .collect();
    assert_eq!(expected.len(), 4);
    assert_eq!(reply.passed(), expected);
    // kube-scheduler uses the returned objects as they are: each must be the original bytes.
    for (node, item) in nodes.iter().zip(&items) {
        assert_eq!(
            text.contains(item.as_str()),
            model(node).starts_with("V100"),
            "{}",
            name_of(node)
        );
    }
    assert_eq!(reply.items().len(), 4);
    let unresolvable = &reply.failed_and_unresolvable_nodes;
    assert_eq!(unresolvable.len(), nodes.len() - 4);
    let t4 = nodes.iter().find(|n| model(n) == "T4").unwrap();
    assert!(unresolvable[&name_of(t4)].contains("T4"));
    assert_eq!(reply.error, "");
}

#[tokio::test]
async fn nodes_sent_before_the_pod_get_the_same_replies_byte_for_byte() {
    // kube-scheduler writes Pod first; the Worker judges each node as it reads it, and holds the
    // nodes that come before the pod until it has it.
    let api = Api::start(StartOptions::default());
    let nodes = openb_nodes(2);
    let pod = gpu_pod("train", Some("V100M16|V100M32"));
    let items = serde_json::to_string(&nodes).unwrap();
    let list = format!(r#"{{"metadata":{{}},"items":{items}}}"#);
    let pod_first = format!(r#"{{"Pod":{pod},"Nodes":{list},"NodeNames":null}}"#);
    let nodes_first = format!(r#"{{"NodeNames":null,"Nodes":{list},"Pod":{pod}}}"#);
    for verb in ["/v1/filter", "/v1/prioritize"] {
        let (status, expected) = api.post_raw(verb, pod_first.clone()).await;
        assert_eq!(status, 200, "{verb}: {expected}");
        let (status, text) = api.post_raw(verb, nodes_first.clone()).await;
        assert_eq!(status, 200, "{verb}: {text}");
        assert_eq!(text, expected, "{verb}");
        let (answered, expected) = match verb {
            "/v1/filter" => (
                serde_json::from_str::<FilterResult>(&text)
                    .unwrap()
                    .items()
                    .len(),
                4,
            ),
            _ => (
                serde_json::from_str::<Vec<HostPriority>>(&text)
                    .unwrap()
                    .len(),
                nodes.len(),
            ),
        };
        assert_eq!(
            answered, expected,
            "{verb}: the V100 nodes pass; every node is scored"
        );
    }
}

#[tokio::test]
async fn lowercase_keys_from_old_schedulers_are_accepted() {
    let api = Api::start(StartOptions::default());
    let nodes = openb_nodes(1);
    let body = format!(
        r#"{{"pod":{},"nodes":{{"items":{}}}}}"#,
        gpu_pod("p", None),
        serde_json::to_string(&nodes).unwrap()
    );
    let reply = api.filter_args(body).await;
    assert_eq!(reply.passed().len(), nodes.len());
}

#[tokio::test]
async fn cpu_memory_and_gpu_headroom_use_requested_facts() {
    let api = Api::start(StartOptions::default());
    let nodes = openb_nodes(1);
    let (a, b) = (name_of(&nodes[0]), name_of(&nodes[1]));
    // Node a is nearly full of CPU; node b has all its GPUs taken.
    api.put_facts(json!([
        {"name": a, "requested": {"cpu": "62", "memory": "1Gi"}},
        {"name": b, "requested": {"alibabacloud.com/gpu-count": allocatable_of(&nodes[1], "alibabacloud.com/gpu-count").unwrap()}}
    ]))
    .await;
    let reply = api
        .filter_args(full_args(&gpu_pod("p", None), &nodes[..2]).0)
        .await;
    let failed = &reply.failed_nodes;
    assert!(failed[&a].starts_with("insufficient cpu"), "{reply:?}");
    assert!(
        failed[&b].starts_with("insufficient alibabacloud.com/gpu-count"),
        "{reply:?}"
    );
    assert_eq!(reply.node_names, Some(vec![]));
    assert_eq!(reply.nodes.map(|n| n.items), Some(vec![]));
}

#[tokio::test]
async fn names_mode_reads_stored_node_facts_and_rejects_unknown_names() {
    let api = Api::start(StartOptions::default());
    api.put_facts(json!([
        {"name": "gpu-a10", "labels": {"aco/gpu-type": "A10", "aco/latency-us": "80"}, "allocatable": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "1"}},
        {"name": "gpu-t4", "labels": {"aco/gpu-type": "T4", "aco/latency-us": "80"}, "allocatable": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "4"}},
        {"name": "cpu-1", "labels": {"aco/latency-us": "40"}, "allocatable": {"cpu": "64", "memory": "256Gi"}}
    ]))
    .await;
    let gpu = pod(
        "infer",
        "prod",
        json!({}),
        json!({"scheduling.aco/gpu-models": "A10"}),
        json!({"nvidia.com/gpu": "1", "cpu": "2"}),
    );
    let body =
        json!({"Pod": gpu, "Nodes": null, "NodeNames": ["gpu-a10", "gpu-t4", "cpu-1", "ghost"]})
            .to_string();
    let reply = api.filter_args(body).await;
    assert_eq!(reply.node_names, Some(vec!["gpu-a10".to_owned()]));
    assert_eq!(reply.nodes, None);
    let failed = |nodes: &BTreeMap<String, String>, node: &str, says: &str| {
        nodes.get(node).is_some_and(|reason| reason.contains(says))
    };
    assert!(
        failed(&reply.failed_nodes, "ghost", "no node facts"),
        "{reply:?}"
    );
    assert!(
        failed(&reply.failed_and_unresolvable_nodes, "gpu-t4", "T4"),
        "{reply:?}"
    );
    assert!(
        failed(&reply.failed_and_unresolvable_nodes, "cpu-1", "GPU"),
        "{reply:?}"
    );

    let cpu = pod("web", "prod", json!({}), json!({}), json!({"cpu": "1"}));
    let body = json!({"Pod": cpu, "NodeNames": ["gpu-a10", "gpu-t4", "cpu-1"]}).to_string();
    assert_eq!(
        api.filter_args(body).await.passed(),
        ["gpu-a10", "gpu-t4", "cpu-1"]
    );
}

#[tokio::test]
async fn latency_target_uses_fresh_facts_then_labels_and_counts_stale_facts() {
    let api = Api::start(StartOptions::default());
    let mut nodes = openb_nodes(1);
    nodes.truncate(3);
    set_label(&mut nodes[0], "aco/latency-us", "50");
    set_label(&mut nodes[1], "aco/latency-us", "200");
    // nodes[2] has no latency label at all.
    let (n0, n1, n2) = (name_of(&nodes[0]), name_of(&nodes[1]), name_of(&nodes[2]));
    let lc = pod(
        "quote",
        "trading",
        json!({"aco/workload-type": "latency-critical"}),
        json!({"scheduling.aco/latency-target-us": "100"}),
        json!({"cpu": "1"}),
    );

    let reply = api.filter_args(full_args(&lc, &nodes).0).await;
    assert_eq!(reply.passed(), std::slice::from_ref(&n0));
    let unresolvable = &reply.failed_and_unresolvable_nodes;
    assert!(unresolvable[&n1].contains("exceeds"), "{reply:?}");
    assert!(unresolvable[&n2].contains("unknown"), "{reply:?}");

    // A fresh measurement wins over the label; a stale one is ignored (fail open to the label).
    let old = now_ms() - 3_600_000;
    api.put_facts(
        json!([{"name": n1, "latencyUs": 30}, {"name": n0, "latencyUs": 900, "observedAtMs": old}]),
    )
    .await;
    let reply = api.filter_args(full_args(&lc, &nodes).0).await;
    assert_eq!(reply.passed(), [n0, n1]);
    api.metrics_containing("aco_stale_node_facts_total{verb=\"filter\"} 1")
        .await;

    // Pods without a target ignore latency entirely.
    let plain = pod(
        "batch",
        "trading",
        json!({}),
        json!({}),
        json!({"cpu": "1"}),
    );
    assert_eq!(
        api.filter_args(full_args(&plain, &nodes).0)
            .await
            .passed()
            .len(),
        3
    );
}

#[tokio::test]
async fn prioritize_prefers_cheaper_nodes_and_puts_one_of_equal_nodes_alone_at_the_top() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let p = pod("p", "team", json!({}), json!({}), json!({"cpu": "1"}));
    let scores = api.scores(&p, &nodes).await;
    let s: Vec<i64> = nodes.iter().map(|n| scores[&name_of(n)]).collect();
    assert!(s.iter().all(|x| (0..=10).contains(x)), "{s:?}");
    // The two equal cheapest nodes: one is the answer (kube-scheduler binds it, the Worker
    // assumes the pod there), the other one point below; then by price.
    let mut equal = [s[0], s[1]];
    equal.sort_unstable();
    assert_eq!(equal, [9, 10], "{s:?}");
    assert!(s[0].min(s[1]) > s[2] && s[2] > s[3], "{s:?}");
    // Reversing the input order changes nothing: the tie is told apart by the pod, not the order.
    let mut reversed = nodes.clone();
    reversed.reverse();
    assert_eq!(api.scores(&p, &reversed).await, scores);
}

/// The unique node at the top of a prioritize answer.
fn answer(reply: &[HostPriority]) -> String {
    let max = reply.iter().map(|h| h.score).max().unwrap();
    let best: Vec<&HostPriority> = reply.iter().filter(|h| h.score == max).collect();
    assert_eq!(best.len(), 1, "one node alone at the top: {reply:?}");
    best[0].host.clone()
}

/// The cost terms of `node` among a decision's candidates.
fn cost_terms(why: &DecisionExplanation, node: &str) -> CostTerms {
    why.candidates
        .iter()
        .find(|c| c.node == node)
        .unwrap_or_else(|| panic!("{node} is not a candidate: {why:?}"))
        .cost_per_hour
        .expect("cost terms recorded")
}

#[tokio::test]
async fn pods_scored_one_after_another_see_where_the_answers_before_them_went() {
    // Facts as the reporter pushed them a moment ago; kube-scheduler then schedules pods before
    // the next push. A latency-critical pod alone is cheapest on the small node; two there would
    // load it to 7/8, past the SLA threshold.
    let lc = |name: &str, cpu: &str| {
        pod(
            name,
            "team",
            json!({"aco/workload-type": "latency-critical"}),
            json!({}),
            json!({"cpu": cpu}),
        )
    };
    let names = |p: Value, names: &[&str]| json!({"Pod": p, "NodeNames": names}).to_string();
    let both = ["small", "big"];
    let run = |assumed_ttl_ms: &str| {
        let options = StartOptions::default().var("ASSUMED_TTL_MS", assumed_ttl_ms);
        async move {
            let api = Api::start(options);
            let t = now_ms();
            let node = |name: &str, cost: &str, cpu: &str| {
                json!({"name": name, "labels": {"aco/cost-per-hour": cost},
                    "allocatable": {"cpu": cpu, "memory": "64Gi"}, "requested": {"cpu": "0"},
                    "utilisation": [{"atMs": t - 1000, "value": 0.05}]})
            };
            api.put_facts(json!([node("small", "0.5", "8"), node("big", "2.0", "16")]))
                .await;
            let first = answer(&api.prioritize_args(names(lc("p1", "3500m"), &both)).await);
            // A guess never rejects a node: filter judges the pushed facts alone (5 of 8 CPUs
            // free by them, 1.5 if p1 is there), and kube-scheduler's own fit check is exact.
            let fits = api.filter_args(names(lc("p0", "5"), &["small"])).await;
            assert_eq!(fits.passed(), ["small"], "{fits:?}");
            let second = answer(&api.prioritize_args(names(lc("p2", "3500m"), &both)).await);
            // The filter's one passing node: kube-scheduler binds it without asking prioritize,
            // so the pod is assumed there too — 10 more CPUs on the big node.
            let only = api.filter_args(names(lc("p3", "10"), &["big"])).await;
            assert_eq!(only.passed(), ["big"]);
            answer(&api.prioritize_args(names(lc("p4", "500m"), &both)).await);
            let why = api.decision("team", "uid-team-p4").await;
            let big = cost_terms(&why, "big").qos_risk;
            (first, second, big)
        }
    };
    let (first, second, big_risk) = run("120000").await;
    assert_eq!((first.as_str(), second.as_str()), ("small", "big"));
    // 3.5 + 10 + 0.5 of 16 CPUs: within the band where the SLA starts to break.
    assert!(
        big_risk > 0.0,
        "p4 sees p2 and p3 on the big node: {big_risk}"
    );
    // Without assumptions every pod is scored on the pushed facts alone: they stack.
    let (first, second, big_risk) = run("0").await;
    assert_eq!((first.as_str(), second.as_str()), ("small", "small"));
    assert_eq!(big_risk, 0.0);
}

#[tokio::test]
async fn spot_and_loaded_nodes_carry_their_risk_in_dollars_for_latency_critical_pods() {
    let api = Api::start(StartOptions::default());
    let mut nodes = priced_nodes();
    nodes.truncate(3);
    for n in nodes.iter_mut() {
        set_label(n, "aco/cost-per-hour", "1.0");
    }
    set_label(&mut nodes[1], "aco/instance-type", "spot");
    let t = now_ms();
    api.put_facts(json!([{"name": name_of(&nodes[2]), "utilisation": [{"atMs": t - 2000, "value": 0.9}, {"atMs": t - 1000, "value": 0.97}]}])).await;
    let pod_of = |name: &str, class: &str| {
        pod(
            name,
            "team",
            json!({"aco/workload-type": class}),
            json!({}),
            json!({"cpu": "1"}),
        )
    };
    let s = api.scores(&pod_of("lc", "latency-critical"), &nodes).await;
    assert_eq!(s[&name_of(&nodes[0])], 10, "{s:?}");
    // Breaching the SLA on the loaded node costs more than the node: it ranks last.
    assert!(s[&name_of(&nodes[2])] < s[&name_of(&nodes[1])], "{s:?}");
    api.scores(&pod_of("b", "batch"), &nodes).await;
    let terms = |e: &DecisionExplanation, n: &Value| cost_terms(e, &name_of(n));
    let lc = api.decision("team", "uid-team-lc").await;
    let batch = api.decision("team", "uid-team-b").await;
    // Reclamation is priced only on the spot node, and dearer for the pod whose SLA it breaks
    // than for a batch pod that loses part of its run.
    assert_eq!(terms(&lc, &nodes[0]).reclamation_risk, 0.0, "{lc:?}");
    assert!(terms(&lc, &nodes[1]).reclamation_risk > 0.0, "{lc:?}");
    assert!(
        terms(&lc, &nodes[1]).reclamation_risk > terms(&batch, &nodes[1]).reclamation_risk,
        "{lc:?} vs {batch:?}"
    );
    assert!(
        terms(&lc, &nodes[2]).qos_risk > terms(&lc, &nodes[0]).qos_risk,
        "{lc:?}"
    );
}

#[tokio::test]
async fn unusable_pod_annotation_keeps_the_pod_pending_with_a_reason() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let p = pod(
        "p",
        "n",
        json!({}),
        json!({"scheduling.aco/latency-target-us": "asap"}),
        json!({}),
    );
    let reply = api.filter_args(full_args(&p, &nodes).0).await;
    assert_eq!(reply.node_names, Some(vec![]));
    let reasons = &reply.failed_and_unresolvable_nodes;
    assert_eq!(reasons.len(), nodes.len());
    assert!(reasons.values().all(|r| r.contains("asap")));
}

/// Binding operations a response reports (`x-aco-binding-ops`) and its scores.
async fn prioritize_counting_ops(
    api: &Api,
    pod: &Value,
    nodes: &[Value],
) -> (u64, Vec<HostPriority>) {
    let r = api
        .http
        .post(api.worker.url("/v1/prioritize"))
        .body(full_args(pod, nodes).0)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let ops = r.headers()["x-aco-binding-ops"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    (ops, r.json().await.unwrap())
}

#[tokio::test]
async fn prioritize_scores_from_the_isolate_copy_without_a_colony_round_trip_and_learning_is_unchanged(
) {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let cpu = |p: &str| pod(p, "copy", json!({}), json!({}), json!({"cpu": "1"}));
    // The first decision of a tenant in this isolate asks the colony (and seeds the copy)...
    let (ops, first) = prioritize_counting_ops(&api, &cpu("a"), &nodes).await;
    assert_eq!(
        ops, 3,
        "the registry (the colony's admission, once per isolate), the colony, and the node facts (cached for FACTS_CACHE_MS afterwards)"
    );
    // ...the next ones are scored from the copy: no binding operation before the answer, the
    // same scores (the colony has not changed), the decision sent after the response.
    let (ops, second) = prioritize_counting_ops(&api, &cpu("b"), &nodes).await;
    assert_eq!((ops, &second), (0, &first));
    // A placement of the locally scored pod, failed on the node answered at the top, counts
    // exactly once, even if it overtook the decision's delivery (the batch carries the
    // isolate's unacknowledged decisions).
    let top = first
        .iter()
        .find(|h| h.score == 10)
        .map(|h| h.host.clone())
        .unwrap();
    let placed =
        json!([{"podUid": "uid-copy-b", "namespace": "copy", "node": top, "outcome": "failed"}]);
    let s = api.place_summary(placed.clone()).await;
    assert_eq!((s.deposited, s.unknown_pod), (1, 0), "{s:?}");
    let s = api.place_summary(placed).await;
    assert_eq!(s.duplicates, 1, "{s:?}");
    // The colony moved on; the placement batch's reply brought this isolate's copy up to date,
    // so the next decision is local too and already sees the deposit; so is the one after.
    let (ops, third) = prioritize_counting_ops(&api, &cpu("c"), &nodes).await;
    assert_eq!(ops, 0);
    assert_ne!(third, first, "the failure on {top} changed the scores");
    let (ops, fourth) = prioritize_counting_ops(&api, &cpu("d"), &nodes).await;
    assert_eq!((ops, &fourth), (0, &third));
    let table = api.pheromone_table("copy").await;
    assert_eq!(
        (table.counters.deposits, table.counters.decisions),
        (1, 4),
        "{table:?}"
    );
    assert_eq!(
        table.pending_decisions, 3,
        "a, c and d are remembered; b was confirmed: {table:?}"
    );
    api.metrics_containing("aco_colony_local_decisions_total")
        .await;
}

#[tokio::test]
async fn with_colony_snapshot_ms_zero_every_decision_asks_the_colony() {
    let api = Api::start(StartOptions::default().var("COLONY_SNAPSHOT_MS", "0"));
    let nodes = priced_nodes();
    for (p, expected) in [("a", 3), ("b", 1), ("c", 1)] {
        let (ops, _) = prioritize_counting_ops(
            &api,
            &pod(p, "sync", json!({}), json!({}), json!({"cpu": "1"})),
            &nodes,
        )
        .await;
        assert_eq!(
            ops, expected,
            "pod {p}: the colony (and the registry's admission and the node facts the first time)"
        );
    }
    assert_eq!(api.pheromone_table("sync").await.counters.decisions, 3);
}
