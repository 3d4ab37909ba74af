//! Integration tests of the built Worker on Miniflare (workerd, real Durable Objects and KV),
//! driven over HTTP with real v1.Node objects from the OpenB trace and real-shaped v1.Pods.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use support::api::{full_args, pod, Api, TOKEN};
use support::prometheus::{Prometheus, ScrapeJob};
use support::{object_sqlite_files, repo_root, StartOptions};

/// The OpenB GPU nodes as v1.Node JSON values, `count` of each GPU model, with the labels our
/// filter and heuristic read added to each.
fn openb_nodes(per_model: usize) -> Vec<Value> {
    let path = repo_root().join("../shared/data/openb/openb_node_list_gpu_node.yaml");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let node: Value = serde::Deserialize::deserialize(doc).expect("OpenB node YAML");
        let model = node["metadata"]["labels"]["alibabacloud.com/gpu-card-model"]
            .as_str()
            .unwrap_or("CPU")
            .to_string();
        let n = seen.entry(model).or_default();
        if *n < per_model {
            *n += 1;
            out.push(node);
        }
    }
    out
}

fn label(node: &mut Value, key: &str, value: &str) {
    node["metadata"]["labels"][key] = json!(value);
}

fn name(node: &Value) -> String {
    node["metadata"]["name"].as_str().unwrap().to_string()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn gpu_pod(name: &str, models: Option<&str>) -> Value {
    let annotations = models.map_or(json!({}), |m| json!({ "scheduling.aco/gpu-models": m }));
    pod(
        name,
        "research",
        json!({}),
        annotations,
        json!({"cpu": "4", "memory": "16Gi", "alibabacloud.com/gpu-count": "1"}),
    )
}

#[tokio::test]
async fn full_nodes_mode_keeps_allowed_gpu_models_and_echoes_node_bytes() {
    let api = Api::start(StartOptions::default());
    let nodes = openb_nodes(2);
    let (body, items) = full_args(&gpu_pod("train", Some("V100M16|V100M32")), &nodes);
    let (status, text) = api.post_raw("/v1/filter", body).await;
    assert_eq!(status, 200, "{text}");
    let reply: Value = serde_json::from_str(&text).unwrap();

    let model = |n: &Value| {
        n["metadata"]["labels"]["alibabacloud.com/gpu-card-model"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let expected: Vec<String> = nodes
        .iter()
        .filter(|n| model(n).starts_with("V100"))
        .map(name)
        .collect();
    assert_eq!(expected.len(), 4);
    let passed: Vec<String> = reply["NodeNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(passed, expected);
    // kube-scheduler uses the returned objects as they are: each must be the original bytes.
    for (node, item) in nodes.iter().zip(&items) {
        assert_eq!(
            text.contains(item.as_str()),
            model(node).starts_with("V100"),
            "{}",
            name(node)
        );
    }
    assert_eq!(reply["Nodes"]["items"].as_array().unwrap().len(), 4);
    let unresolvable = reply["FailedAndUnresolvableNodes"].as_object().unwrap();
    assert_eq!(unresolvable.len(), nodes.len() - 4);
    let t4 = nodes.iter().find(|n| model(n) == "T4").unwrap();
    assert!(unresolvable[&name(t4)].as_str().unwrap().contains("T4"));
    assert_eq!(reply["Error"], "");
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
    let reply = api.post("/v1/filter", body).await;
    assert_eq!(reply["NodeNames"].as_array().unwrap().len(), nodes.len());
}

#[tokio::test]
async fn cpu_memory_and_gpu_headroom_use_requested_facts() {
    let api = Api::start(StartOptions::default());
    let nodes = openb_nodes(1);
    let (a, b) = (name(&nodes[0]), name(&nodes[1]));
    // Node a is nearly full of CPU; node b has all its GPUs taken.
    api.put_facts(json!([
        {"name": a, "requested": {"cpu": "62", "memory": "1Gi"}},
        {"name": b, "requested": {"alibabacloud.com/gpu-count": nodes[1]["status"]["allocatable"]["alibabacloud.com/gpu-count"]}}
    ]))
    .await;
    let reply = api
        .post("/v1/filter", full_args(&gpu_pod("p", None), &nodes[..2]).0)
        .await;
    let failed = reply["FailedNodes"].as_object().unwrap();
    assert!(
        failed[&a].as_str().unwrap().starts_with("insufficient cpu"),
        "{reply}"
    );
    assert!(
        failed[&b]
            .as_str()
            .unwrap()
            .starts_with("insufficient alibabacloud.com/gpu-count"),
        "{reply}"
    );
    assert_eq!(reply["NodeNames"], json!([]));
    assert_eq!(reply["Nodes"]["items"], json!([]));
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
    let reply = api.post("/v1/filter", body).await;
    assert_eq!(reply["NodeNames"], json!(["gpu-a10"]));
    assert_eq!(reply["Nodes"], Value::Null);
    assert!(reply["FailedNodes"]["ghost"]
        .as_str()
        .unwrap()
        .contains("no node facts"));
    assert!(reply["FailedAndUnresolvableNodes"]["gpu-t4"]
        .as_str()
        .unwrap()
        .contains("T4"));
    assert!(reply["FailedAndUnresolvableNodes"]["cpu-1"]
        .as_str()
        .unwrap()
        .contains("GPU"));

    let cpu = pod("web", "prod", json!({}), json!({}), json!({"cpu": "1"}));
    let body = json!({"Pod": cpu, "NodeNames": ["gpu-a10", "gpu-t4", "cpu-1"]}).to_string();
    assert_eq!(
        api.post("/v1/filter", body).await["NodeNames"],
        json!(["gpu-a10", "gpu-t4", "cpu-1"])
    );
}

#[tokio::test]
async fn latency_target_uses_fresh_facts_then_labels_and_counts_stale_facts() {
    let api = Api::start(StartOptions::default());
    let mut nodes = openb_nodes(1);
    nodes.truncate(3);
    label(&mut nodes[0], "aco/latency-us", "50");
    label(&mut nodes[1], "aco/latency-us", "200");
    // nodes[2] has no latency label at all.
    let (n0, n1, n2) = (name(&nodes[0]), name(&nodes[1]), name(&nodes[2]));
    let lc = pod(
        "quote",
        "trading",
        json!({"aco/workload-type": "latency-critical"}),
        json!({"scheduling.aco/latency-target-us": "100"}),
        json!({"cpu": "1"}),
    );

    let reply = api.post("/v1/filter", full_args(&lc, &nodes).0).await;
    assert_eq!(reply["NodeNames"], json!([n0]));
    let unresolvable = &reply["FailedAndUnresolvableNodes"];
    assert!(
        unresolvable[&n1].as_str().unwrap().contains("exceeds"),
        "{reply}"
    );
    assert!(
        unresolvable[&n2].as_str().unwrap().contains("unknown"),
        "{reply}"
    );

    // A fresh measurement wins over the label; a stale one is ignored (fail open to the label).
    let old = now_ms() - 3_600_000;
    api.put_facts(
        json!([{"name": n1, "latencyUs": 30}, {"name": n0, "latencyUs": 900, "observedAtMs": old}]),
    )
    .await;
    let reply = api.post("/v1/filter", full_args(&lc, &nodes).0).await;
    assert_eq!(reply["NodeNames"], json!([n0, n1]));
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
        api.post("/v1/filter", full_args(&plain, &nodes).0).await["NodeNames"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

/// The trail counts in the scores (`ALPHA` 1; the default 0 scores by η alone and lets the
/// trail learn unseen).
fn trail_on() -> StartOptions {
    StartOptions::default().var("ALPHA", "1")
}

fn priced_nodes() -> Vec<Value> {
    let mut nodes = openb_nodes(1);
    nodes.truncate(4);
    for (node, cost) in nodes.iter_mut().zip(["0.45", "0.45", "1.20", "3.20"]) {
        label(node, "aco/cost-per-hour", cost);
    }
    nodes
}

#[tokio::test]
async fn prioritize_prefers_cheaper_nodes_and_scores_equal_nodes_equally() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let scores = api
        .scores(
            &pod("p", "team", json!({}), json!({}), json!({"cpu": "1"})),
            &nodes,
        )
        .await;
    let s: Vec<i64> = nodes.iter().map(|n| scores[&name(n)]).collect();
    assert!(s.iter().all(|x| (0..=10).contains(x)), "{s:?}");
    assert_eq!((s[0], s[1]), (10, 10), "{s:?}");
    assert!(s[1] > s[2] && s[2] > s[3], "{s:?}");
    // Reversing the input order changes nothing.
    let mut reversed = nodes.clone();
    reversed.reverse();
    assert_eq!(
        api.scores(
            &pod("p2", "team", json!({}), json!({}), json!({"cpu": "1"})),
            &reversed
        )
        .await,
        scores
    );
}

#[tokio::test]
async fn spot_and_loaded_nodes_carry_their_risk_in_dollars_for_latency_critical_pods() {
    let api = Api::start(StartOptions::default());
    let mut nodes = priced_nodes();
    nodes.truncate(3);
    for n in nodes.iter_mut() {
        label(n, "aco/cost-per-hour", "1.0");
    }
    label(&mut nodes[1], "aco/instance-type", "spot");
    let t = now_ms();
    api.put_facts(json!([{"name": name(&nodes[2]), "utilisation": [{"atMs": t - 2000, "value": 0.9}, {"atMs": t - 1000, "value": 0.97}]}])).await;
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
    assert_eq!(s[&name(&nodes[0])], 10, "{s:?}");
    // Breaching the SLA on the loaded node costs more than the node: it ranks last.
    assert!(s[&name(&nodes[2])] < s[&name(&nodes[1])], "{s:?}");
    api.scores(&pod_of("b", "batch"), &nodes).await;
    let terms = |e: &Value, n: &Value, term: &str| {
        e["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["node"] == name(n))
            .unwrap()["costPerHour"][term]
            .as_f64()
            .unwrap()
    };
    let (status, lc) = explanation(&api, "team", "uid-team-lc").await;
    assert_eq!(status, 200, "{lc}");
    let (status, batch) = explanation(&api, "team", "uid-team-b").await;
    assert_eq!(status, 200, "{batch}");
    // Reclamation is priced only on the spot node, and dearer for the pod whose SLA it breaks
    // than for a batch pod that loses part of its run.
    assert_eq!(terms(&lc, &nodes[0], "reclamationRisk"), 0.0, "{lc}");
    assert!(terms(&lc, &nodes[1], "reclamationRisk") > 0.0, "{lc}");
    assert!(
        terms(&lc, &nodes[1], "reclamationRisk") > terms(&batch, &nodes[1], "reclamationRisk"),
        "{lc} vs {batch}"
    );
    assert!(
        terms(&lc, &nodes[2], "qosRisk") > terms(&lc, &nodes[0], "qosRisk"),
        "{lc}"
    );
}

#[tokio::test]
async fn only_confirmed_placements_deposit_and_tenants_are_isolated() {
    let api = Api::start(trail_on());
    let nodes = priced_nodes();
    // Dear (1.20/h against 0.45/h) but not so dear that a rounded score could not rise.
    let expensive = name(&nodes[2]);
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
    // Scoring alone never deposits, however often.
    for i in 1..=20 {
        api.scores(&tenant_pod("alpha", i), &nodes).await;
    }
    let table = api.pheromones("alpha").await;
    assert_eq!(
        (
            table["epoch"].as_u64(),
            table["nodes"].as_array().unwrap().len()
        ),
        (Some(0), 0),
        "{table}"
    );

    // Confirmed placements of alpha's pods on the expensive node move alpha's trail only.
    let placements: Vec<Value> = (1..=20)
        .map(|i| json!({"podUid": format!("uid-shared-ns-p{i}"), "namespace": "shared-ns", "name": format!("p{i}"), "tenant": "alpha", "node": expensive}))
        .collect();
    let summary = api.place(json!(placements)).await;
    assert_eq!(summary["deposited"], 20, "{summary}");
    let table = api.pheromones("alpha").await;
    assert_eq!(table["epoch"], 20);
    assert_eq!(table["nodes"][0]["node"], expensive);
    // Deposits are worth less on a dear node (quality × exp(−cost)), but its trail now stands
    // above what every unreinforced node has.
    assert!(
        table["nodes"][0]["tau"].as_f64().unwrap() > table["tauInitialNow"].as_f64().unwrap(),
        "{table}"
    );

    let after_a = api.scores(&tenant_pod("alpha", 99), &nodes).await;
    let after_b = api.scores(&tenant_pod("beta", 99), &nodes).await;
    assert!(
        after_a[&expensive] > baseline_a[&expensive],
        "{after_a:?} vs {baseline_a:?}"
    );
    assert_eq!(after_b, baseline_b);
    assert_eq!(api.pheromones("beta").await["epoch"], 0);

    // A repeated or unknown report deposits nothing more.
    let again = api.place(json!([placements[0].clone(), {"podUid": "never-scored", "tenant": "alpha", "node": expensive}])).await;
    assert_eq!(
        (
            again["deposited"].as_u64(),
            again["duplicates"].as_u64(),
            again["unknownPod"].as_u64()
        ),
        (Some(0), Some(1), Some(1)),
        "{again}"
    );
    assert_eq!(api.pheromones("alpha").await["epoch"], 20);

    // Reset clears the tenant's colony.
    let (status, _) = api
        .admin(
            reqwest::Method::DELETE,
            "/v1/tenants/alpha/pheromones",
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(api.pheromones("alpha").await["epoch"], 0);
}

#[tokio::test]
async fn bind_verb_records_the_placement() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let p = pod("web-1", "shop", json!({}), json!({}), json!({"cpu": "1"}));
    api.scores(&p, &nodes).await;
    let target = name(&nodes[2]);
    let args = json!({"PodName": "web-1", "PodNamespace": "shop", "PodUID": "uid-shop-web-1", "Node": target});
    let reply = api.post("/v1/bind", args.to_string()).await;
    assert_eq!(reply, json!({"Error": ""}));
    let table = api.pheromones("shop").await;
    assert_eq!(
        (table["epoch"].as_u64(), table["nodes"][0]["node"].as_str()),
        (Some(1), Some(target.as_str())),
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
    let target = name(&nodes[1]);
    let args = json!({"PodName": "web-2", "PodNamespace": "shop", "PodUID": "uid-shop-web-2", "Node": target});
    assert_eq!(
        api.post("/v1/bind", args.to_string()).await,
        json!({"Error": ""})
    );
    assert_eq!(api.pheromones("storefront").await["epoch"], 1);
    assert_eq!(api.pheromones("shop").await["epoch"], 0);
}

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
    api.place(json!([{"podUid": "uid-keep-p0", "namespace": "keep", "node": name(&nodes[1])}, {"podUid": "uid-keep-p1", "namespace": "keep", "node": name(&nodes[1])}])).await;
    let before = api.pheromones("keep").await;

    api.worker.restart();
    let after = api.pheromones("keep").await;
    assert_eq!(after["nodes"], before["nodes"]);
    assert_eq!(after["epoch"], 2);
    assert_eq!(after["pendingDecisions"], 1);
    // The third decision is still remembered and still deposits; confirmations survived (a
    // replay is a duplicate); node facts survived too.
    assert_eq!(
        api.place(json!([{"podUid": "uid-keep-p2", "namespace": "keep", "node": name(&nodes[0])}]))
            .await["deposited"],
        1
    );
    let replay = api
        .place(json!([{"podUid": "uid-keep-p0", "namespace": "keep", "node": name(&nodes[1])}]))
        .await;
    assert_eq!(
        (replay["deposited"].as_u64(), replay["duplicates"].as_u64()),
        (Some(0), Some(1)),
        "{replay}"
    );
    assert_eq!(api.pheromones("keep").await["epoch"], 3);
    let body = json!({"Pod": pod("q", "keep", json!({}), json!({"scheduling.aco/latency-target-us": "20"}), json!({})), "NodeNames": ["persisted-node"]});
    assert_eq!(
        api.post("/v1/filter", body.to_string()).await["NodeNames"],
        json!(["persisted-node"])
    );
}

#[tokio::test]
async fn bad_inputs_get_4xx_json_naming_the_problem_and_change_nothing() {
    let api = Api::start(StartOptions::default().var("MAX_BODY_BYTES", "65536"));
    let nodes = priced_nodes();
    let cases: Vec<(&str, String, u16, &str)> = vec![
        ("/v1/filter", "{not json".into(), 400, "invalid ExtenderArgs"),
        ("/v1/filter", r#"{"Pod":{"metadata":{"name":"p"}},"NodeNames":"n1"}"#.into(), 400, "invalid ExtenderArgs"),
        ("/v1/filter", r#"{"Pod":{"metadata":{"name":"p"}}}"#.into(), 400, "neither Nodes nor NodeNames"),
        ("/v1/prioritize", json!({"Pod": pod("p", "n", json!({}), json!({}), json!({"cpu": "two"})), "NodeNames": []}).to_string(), 400, "Pod.spec.containers[0].resources.requests.cpu"),
        ("/v1/filter", json!({"Pod": {}, "Nodes": {"items": [{"metadata": {"name": "n"}, "status": {"allocatable": {"memory": "12XB"}}}]}}).to_string(), 400, "Nodes.items[0].status.allocatable.memory"),
        ("/v1/bind", r#"{"PodName":"p"}"#.into(), 400, "ExtenderBindingArgs"),
        ("/v1/bind", json!({"PodName": "p", "PodNamespace": "n", "PodUID": "u", "Node": "n".repeat(254)}).to_string(), 400, "not a valid Kubernetes name"),
        ("/v1/nope", "{}".into(), 404, "no route"),
    ];
    for (path, body, status, needle) in cases {
        let (got, text) = api.post_raw(path, body).await;
        assert_eq!(got.as_u16(), status, "{path}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
        let message = format!("{} {}", v["error"], v["field"]);
        assert!(message.contains(needle), "{path}: {message}");
    }
    let r = api
        .http
        .get(api.worker.url("/v1/filter"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    // Oversized: drained without being stored, then refused with a message.
    let oversized = format!(r#"{{"Pod":{{}},"NodeNames":["{}"]}}"#, "x".repeat(70_000));
    let r = api
        .http
        .post(api.worker.url("/v1/filter"))
        .body(oversized)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("(Content-Length) exceeds the limit"),
        "refused from its Content-Length, before reading: {v}"
    );
    // Without a Content-Length (chunked), the same limit is met while streaming.
    let reply = post_chunked(&api.worker.base_url, "/v1/filter", &"x".repeat(70_000));
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(
        reply.contains("request body of 70000 bytes exceeds the limit"),
        "{reply}"
    );

    // Admin endpoints need the token.
    let r = api
        .http
        .put(api.worker.url("/v1/nodes"))
        .json(&json!({"nodes": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = api
        .http
        .get(api.worker.url("/v1/tenants/a/pheromones"))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    // A facts batch with one bad report stores nothing.
    let (status, body) = api
        .admin(reqwest::Method::PUT, "/v1/nodes", Some(json!({"nodes": [{"name": "good", "latencyUs": 5}, {"name": "bad", "utilisation": [{"atMs": 1, "value": 7}]}]})))
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["field"], "nodes[1].utilisation[0].value");
    let filter =
        json!({"Pod": pod("p", "n", json!({}), json!({}), json!({})), "NodeNames": ["good"]})
            .to_string();
    assert!(api.post("/v1/filter", filter).await["FailedNodes"]["good"]
        .as_str()
        .unwrap()
        .contains("no node facts"));

    // A placement batch with one bad item deposits nothing.
    api.scores(&pod("p1", "iso", json!({}), json!({}), json!({})), &nodes)
        .await;
    let (status, body) = api
        .admin(
            reqwest::Method::POST,
            "/v1/placements",
            Some(json!({"placements": [
            {"podUid": "uid-iso-p1", "namespace": "iso", "node": name(&nodes[0])},
            {"podUid": "x", "namespace": "iso", "node": name(&nodes[0]), "outcome": 3.5}]})),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["field"], "placements[1].outcome");
    assert_eq!(api.pheromones("iso").await["epoch"], 0);
    let (status, body) = api
        .admin(
            reqwest::Method::GET,
            "/v1/tenants/bad..%2F/pheromones",
            None,
        )
        .await;
    assert!(status == 400 || status == 404, "{status} {body}");

    // The Worker is still healthy and the failures are counted.
    assert_eq!(
        api.http
            .get(api.worker.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    api.metrics_containing("aco_request_errors_total{verb=\"filter\",code=\"413\"} 2")
        .await;
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
    let reply = api.post("/v1/filter", full_args(&p, &nodes).0).await;
    assert_eq!(reply["NodeNames"], json!([]));
    let reasons = reply["FailedAndUnresolvableNodes"].as_object().unwrap();
    assert_eq!(reasons.len(), nodes.len());
    assert!(reasons
        .values()
        .all(|r| r.as_str().unwrap().contains("asap")));
}

#[tokio::test]
async fn metrics_report_verbs_filter_reasons_deposits_and_pheromones() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let (body, _) = full_args(&gpu_pod("g", Some("A10")), &nodes);
    api.post("/v1/filter", body).await;
    api.scores(
        &pod(
            "m1",
            "metrics-team",
            json!({}),
            json!({}),
            json!({"cpu": "1"}),
        ),
        &nodes,
    )
    .await;
    api.place(json!([{"podUid": "uid-metrics-team-m1", "namespace": "metrics-team", "node": name(&nodes[0])}])).await;
    let text = api
        .metrics_containing("aco_requests_total{verb=\"placements\",code=\"200\"} 1")
        .await;
    for needle in [
        "aco_requests_total{verb=\"filter\",code=\"200\"} 1",
        "aco_filter_nodes_rejected_total{reason=\"gpu_model\"}",
        "aco_request_duration_seconds_count{verb=\"prioritize\"} 1",
        "aco_colony_deposits_total{tenant=\"metrics-team\"} 1",
        &format!(
            "aco_pheromone{{tenant=\"metrics-team\",node=\"{}\"}}",
            name(&nodes[0])
        ),
        "# TYPE aco_request_duration_seconds histogram",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[tokio::test]
async fn deleted_nodes_are_forgotten_and_a_batch_with_a_bad_name_changes_nothing() {
    let api = Api::start(StartOptions::default());
    let facts = |name: &str| json!({"name": name, "allocatable": {"cpu": "8", "memory": "32Gi"}});
    api.put_facts(json!([facts("gone-1"), facts("gone-2"), facts("stays")]))
        .await;
    assert_eq!(
        api.filter_names(&["gone-1", "gone-2", "stays"]).await.0,
        vec!["gone-1", "gone-2", "stays"]
    );

    // A bad name, or a name both reported and deleted, rejects the whole batch: nothing is
    // stored and nothing forgotten.
    let (status, body) = api
        .put_batch(json!({"nodes": [facts("newcomer")], "deleted": ["gone-1", "Bad_Name"]}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["field"], "deleted[1]");
    let (status, body) = api
        .put_batch(json!({"nodes": [facts("stays")], "deleted": ["gone-2", "stays"]}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["field"], "deleted[1]");
    assert!(body["error"].as_str().unwrap().contains("both"), "{body}");
    assert!(api.node_facts("gone-1").await.is_some());
    assert!(api.node_facts("newcomer").await.is_none());
    let (passed, failed) = api
        .filter_names(&["gone-1", "gone-2", "stays", "newcomer"])
        .await;
    assert_eq!(passed, vec!["gone-1", "gone-2", "stays"]);
    assert!(
        failed["newcomer"]
            .as_str()
            .unwrap()
            .contains("no node facts"),
        "{failed}"
    );

    // `nodes` may be absent when only `deleted` is given; a repeated name counts once.
    let (status, body) = api
        .put_batch(json!({"deleted": ["gone-1", "gone-2", "gone-1"]}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["stored"], &body["forgotten"], &body["nodes"]),
        (&json!(0), &json!(2), &json!(1)),
        "{body}"
    );
    let (passed, failed) = api.filter_names(&["gone-1", "gone-2", "stays"]).await;
    assert_eq!(passed, vec!["stays"]);
    for gone in ["gone-1", "gone-2"] {
        assert!(
            failed[gone].as_str().unwrap().contains("no node facts"),
            "{failed}"
        );
        assert!(api.node_facts(gone).await.is_none(), "{gone}");
    }
    // Forgetting a node we never knew is harmless; reports and deletions mix in one batch.
    let (status, body) = api
        .put_batch(json!({"nodes": [facts("newcomer")], "deleted": ["never-seen"]}))
        .await;
    assert_eq!(
        (status.as_u16(), &body["stored"], &body["forgotten"]),
        (200, &json!(1), &json!(1)),
        "{body}"
    );
    assert_eq!(
        api.filter_names(&["newcomer", "stays"]).await.0,
        vec!["newcomer", "stays"]
    );
}

#[tokio::test]
async fn gpu_free_milli_is_stored_and_more_than_one_gpu_is_rejected_with_the_field_named() {
    let api = Api::start(StartOptions::default());
    let t = now_ms();
    api.put_facts(
        json!([{"name": "gpu-frag", "observedAtMs": t, "gpuFreeMilli": [1000, 250, 0, 1000]}]),
    )
    .await;
    let facts = api.node_facts("gpu-frag").await.expect("stored");
    assert_eq!(
        facts["gpuFreeMilli"],
        json!({"value": [1000, 250, 0, 1000], "atMs": t}),
        "{facts}"
    );

    let (status, body) = api.put_batch(json!({"nodes": [{"name": "other", "gpuFreeMilli": [0]}, {"name": "gpu-frag", "gpuFreeMilli": [0, 1001]}]})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["field"], "nodes[1].gpuFreeMilli[1]");
    assert_eq!(
        api.node_facts("gpu-frag").await.unwrap()["gpuFreeMilli"]["value"],
        json!([1000, 250, 0, 1000])
    );
    assert!(api.node_facts("other").await.is_none());
}

#[tokio::test]
async fn negative_or_huge_quantities_and_repeated_map_keys_are_refused_with_the_field_named() {
    let api = Api::start(StartOptions::default());
    api.put_facts(json!([{"name": "q-node", "allocatable": {"cpu": "4", "memory": "16Gi"}, "requested": {"cpu": "0"}}])).await;
    let before = api.node_facts("q-node").await.expect("stored");

    // Negative or out-of-range allocatable/requested: 400 naming the field, nothing stored.
    for (report, field) in [
        (
            json!({"name": "q-node", "requested": {"cpu": "-100"}}),
            "nodes[1].requested.cpu",
        ),
        (
            json!({"name": "q-node", "allocatable": {"memory": "-1Gi"}}),
            "nodes[1].allocatable.memory",
        ),
        (
            json!({"name": "q-node", "allocatable": {"memory": "9Ei"}}),
            "nodes[1].allocatable.memory",
        ),
        (
            json!({"name": "q-node", "requested": {"cpu": "1e13"}}),
            "nodes[1].requested.cpu",
        ),
    ] {
        let (status, body) = api
            .put_batch(json!({"nodes": [{"name": "q-other", "latencyUs": 5}, report]}))
            .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["field"], field, "{body}");
    }
    // A repeated key inside a map, as kube's strict decoder refuses it.
    let (status, body) = api
        .put_batch_raw(
            r#"{"nodes":[{"name":"q-other"},{"name":"q-node","requested":{"cpu":"0","cpu":"4"}}]}"#
                .into(),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    // (The batch is parsed without path tracking, which made a 10,000-node batch drop the
    // isolate in tests/facts_scale.rs: the message names the key and its position.)
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains(r#"duplicate key "cpu""#),
        "{body}"
    );
    assert_eq!(api.node_facts("q-node").await.unwrap(), before);
    assert!(api.node_facts("q-other").await.is_none());

    // A pod whose containers ask 100 and −99 CPUs does not pass a 4-CPU node as 1 CPU.
    let mut p = pod("q-pod", "q", json!({}), json!({}), json!({"cpu": "100"}));
    p["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "side", "resources": {"requests": {"cpu": "-99"}}}));
    let (status, text) = api
        .post_raw(
            "/v1/filter",
            json!({"Pod": p, "NodeNames": ["q-node"]}).to_string(),
        )
        .await;
    assert_eq!(status, 400, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        body["field"], "Pod.spec.containers[1].resources.requests.cpu",
        "{body}"
    );
    // Repeated keys in a pod's requests and in a full node's labels.
    let (status, text) = api
        .post_raw("/v1/prioritize", r#"{"Pod":{"metadata":{"name":"d","namespace":"q"},"spec":{"containers":[{"resources":{"requests":{"cpu":"1","cpu":"64"}}}]}},"NodeNames":["q-node"]}"#.into())
        .await;
    assert_eq!(status, 400, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        body["field"], "Pod.spec.containers[0].resources.requests",
        "{body}"
    );
    let (status, text) = api
        .post_raw("/v1/filter", r#"{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"n","labels":{"a":"1","a":"2"}}}]}}"#.into())
        .await;
    assert_eq!(status, 400, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["field"], "Nodes.items[0].metadata.labels", "{body}");
}

/// The summary of a placements batch as (deposited, outcomes, duplicates, unknownPod, notACandidate).
fn tally(summary: &Value) -> (u64, u64, u64, u64, u64) {
    let keys: Vec<&String> = summary.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 6, "unexpected summary shape: {summary}");
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
    let (x, y) = (name(&nodes[0]), name(&nodes[1]));
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

    // The placement, delivered three times (and twice more inside one batch), deposits once.
    let first = api.place(json!([placed("p1", &x)])).await;
    assert_eq!(first["received"], 1);
    assert_eq!(tally(&first), (1, 0, 0, 0, 0), "{first}");
    let after_deposit = api.pheromones("replay").await;
    for _ in 0..2 {
        assert_eq!(
            tally(&api.place(json!([placed("p1", &x)])).await),
            (0, 0, 1, 0, 0)
        );
    }
    assert_eq!(
        tally(&api.place(json!([placed("p1", &x), placed("p1", &x)])).await),
        (0, 0, 2, 0, 0)
    );
    let table = api.pheromones("replay").await;
    assert_eq!(table["epoch"], 1);
    assert_eq!(table["nodes"], after_deposit["nodes"]);
    assert_eq!(
        (
            table["pendingDecisions"].as_u64(),
            table["confirmedPods"].as_u64()
        ),
        (Some(1), Some(1)),
        "{table}"
    );

    // The pod's fate, reported later: reliability of the confirmed node moves once, and its
    // deposit is revised to the outcome's quality, once.
    assert_eq!(
        tally(
            &api.place(json!([with_outcome("p1", &x, json!("failed"))]))
                .await
        ),
        (0, 1, 0, 0, 0)
    );
    for outcome in [
        json!("failed"),
        json!("failed"),
        json!("succeeded"),
        json!(0.9),
    ] {
        assert_eq!(
            tally(&api.place(json!([with_outcome("p1", &x, outcome)])).await),
            (0, 0, 1, 0, 0)
        );
    }
    assert_eq!(
        tally(&api.place(json!([placed("p1", &x)])).await),
        (0, 0, 1, 0, 0)
    );
    let table = api.pheromones("replay").await;
    let trail = trail_of(&table, &x);
    assert_eq!(
        (trail["successes"].as_f64(), trail["failures"].as_f64()),
        (Some(0.0), Some(1.0)),
        "{table}"
    );
    // As if the deposit had been Q × 0: τ_initial (1.0) evaporated over one epoch.
    let tau = trail["tau"].as_f64().unwrap();
    assert!(
        (tau - 0.95).abs() < 1e-9,
        "τ after a failed outcome: {tau} (was {})",
        trail_of(&after_deposit, &x)["tau"]
    );
    assert_eq!(table["epoch"], 1, "a revision passes no epoch");
    assert_eq!(table["counters"]["lateOutcomes"], 1);

    // An outcome naming another node than the confirmed one changes nothing; placement and
    // outcome in one batch count once each, however often the batch is replayed (once the
    // outcome is recorded, every report of the pod is a duplicate).
    let batch = json!([
        placed("p2", &x),
        with_outcome("p2", &y, json!("failed")),
        with_outcome("p2", &x, json!("succeeded"))
    ]);
    assert_eq!(tally(&api.place(batch.clone()).await), (1, 1, 0, 0, 1));
    for _ in 0..2 {
        assert_eq!(tally(&api.place(batch.clone()).await), (0, 0, 3, 0, 0));
    }
    let table = api.pheromones("replay").await;
    let trail = trail_of(&table, &x);
    assert_eq!(
        (trail["successes"].as_f64(), trail["failures"].as_f64()),
        (Some(1.0), Some(1.0)),
        "{table}"
    );
    assert!(
        table["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["node"] != y.as_str()),
        "{table}"
    );
    assert_eq!(table["epoch"], 2);
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
    let ghost = json!([{"podUid": "uid-ghost", "namespace": "fate", "name": "ghost", "node": name(&nodes[0]), "outcome": "failed"}]);
    for _ in 0..2 {
        assert_eq!(tally(&api.place(ghost.clone()).await), (0, 0, 0, 1, 0));
    }
    let after = api.pheromones("fate").await;
    assert_eq!(
        (&after["epoch"], &after["nodes"], &after["pendingDecisions"]),
        (
            &before["epoch"],
            &before["nodes"],
            &before["pendingDecisions"]
        )
    );
    assert_eq!(after["confirmedPods"], 0);
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
    assert_eq!(tally(&body), (0, 0, 0, 1, 0));
    let table = api.pheromones("brand-new").await;
    assert_eq!(
        (table["epoch"].as_u64(), table["tenant"].as_str()),
        (Some(0), Some("brand-new")),
        "{table}"
    );
}

/// The SQLite files of every Colony Durable Object in a Worker's state directory.
fn colony_sqlite_files(persist_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    object_sqlite_files(persist_dir, "Colony")
}

fn sqlite(file: &std::path::Path, statement: &str) {
    let out = std::process::Command::new("sqlite3")
        .arg(file)
        .arg(statement)
        .output()
        .expect("sqlite3 (scripts/setup installs it)");
    assert!(
        out.status.success(),
        "sqlite3 {statement}: {}",
        String::from_utf8_lossy(&out.stderr)
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
        json!([{"podUid": "uid-corrupt-c1", "namespace": "corrupt", "node": name(&nodes[0])}]),
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
        .admin(reqwest::Method::GET, "/v1/tenants/corrupt/pheromones", None)
        .await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("snapshot["),
        "{body}"
    );
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
    // ...counted, and the scrape still answers, skipping the colony and counting that too.
    let text = api
        .metrics_containing("aco_colony_errors_total{reason=\"corrupt_state\"} 2")
        .await;
    assert!(
        text.contains("aco_colony_fallback_total{mode=\"eta_only\",reason=\"corrupt_state\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("aco_metrics_colonies{result=\"failed\"} 1"),
        "{text}"
    );
    api.metrics_containing("aco_metrics_colony_errors_total 1")
        .await;
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
    assert_eq!(api.pheromones("corrupt").await["epoch"], 0);
}

/// `promtool check metrics` on a scrape: (ok, promtool's complaints).
fn promtool_check(text: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; scripts/setup installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test]
async fn metrics_pass_promtool_with_several_tenants_and_a_failing_colony_is_skipped() {
    let mut api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    for tenant in ["prom-a", "prom-b", "prom-c"] {
        api.scores(
            &pod("m", tenant, json!({}), json!({}), json!({"cpu": "1"})),
            &nodes,
        )
        .await;
        api.place(json!([{"podUid": format!("uid-{tenant}-m"), "namespace": tenant, "node": name(&nodes[0])}])).await;
    }
    api.post_raw("/v1/filter", "{bad".into()).await;
    let text = api
        .metrics_containing("aco_colony_deposits_total{tenant=\"prom-c\"} 1")
        .await;
    let (ok, complaints) = promtool_check(&text);
    assert!(
        ok && complaints.trim().is_empty(),
        "promtool check metrics:\n{complaints}\n{text}"
    );
    for family in [
        "aco_colony_deposits_total",
        "aco_pheromone",
        "aco_requests_total",
    ] {
        assert_eq!(
            text.matches(&format!("# TYPE {family} ")).count(),
            1,
            "{family}:\n{text}"
        );
    }

    // Corrupt one colony: the scrape still answers 200, without it, and counts it.
    api.worker.while_stopped(|dir| {
        for file in colony_sqlite_files(dir) {
            let out = std::process::Command::new("sqlite3")
                .arg(&file)
                .arg("SELECT count(*) FROM snapshot WHERE body LIKE '%\"tenant\":\"prom-b\"%'")
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).trim() == "1" {
                sqlite(&file, "UPDATE snapshot SET body = '{oops'");
            }
        }
    });
    let text = api
        .metrics_containing("aco_metrics_colonies{result=\"failed\"} 1")
        .await;
    assert!(!text.contains("tenant=\"prom-b\""), "{text}");
    assert!(
        text.contains("aco_colony_deposits_total{tenant=\"prom-a\"} 1"),
        "{text}"
    );
    let (ok, complaints) = promtool_check(&text);
    assert!(
        ok && complaints.trim().is_empty(),
        "promtool check metrics:\n{complaints}\n{text}"
    );
    api.metrics_containing("aco_metrics_colony_errors_total 1")
        .await;
}

#[tokio::test]
async fn a_real_prometheus_scrapes_the_worker_and_reads_back_a_deposit_counter() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    api.scores(
        &pod("p1", "scraped", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    )
    .await;
    api.scores(
        &pod("p2", "scraped", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    )
    .await;
    api.place(json!([
        {"podUid": "uid-scraped-p1", "namespace": "scraped", "node": name(&nodes[0])},
        {"podUid": "uid-scraped-p2", "namespace": "scraped", "node": name(&nodes[1])}
    ]))
    .await;
    let prometheus = Prometheus::start(&[ScrapeJob::new("aco", &api.worker.base_url)]);
    let query = "aco_colony_deposits_total{tenant=\"scraped\"}";
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(sample) = prometheus
            .query(query)
            .await
            .ok()
            .and_then(|series| series.into_iter().next())
        {
            assert_eq!(sample["metric"]["job"], "aco");
            assert_eq!(sample["value"][1], "2", "{sample}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Prometheus never returned {query}; its log:\n{}",
            prometheus.log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // The scrape target is healthy (every scrape parsed).
    let targets = prometheus.api("targets", &[]).await.unwrap();
    assert_eq!(targets["activeTargets"][0]["health"], "up", "{targets}");
}

const TOKEN_A: &str = "extender-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const TOKEN_B: &str = "extender-token-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

#[tokio::test]
async fn path_token_auth_serves_both_rotation_tokens_and_refuses_anything_else() {
    let api = Api::start(
        StartOptions::default()
            .var("EXTENDER_AUTH", "path-token")
            .var("EXTENDER_TOKENS", format!("{TOKEN_A},{TOKEN_B}")),
    );
    let nodes = priced_nodes();
    let (args, _) = full_args(
        &pod("t1", "tokened", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    );
    for token in [TOKEN_A, TOKEN_B] {
        for verb in ["filter", "prioritize"] {
            let (status, body) = api
                .post_raw(&format!("/t/{token}/v1/{verb}"), args.clone())
                .await;
            assert_eq!(status, 200, "{verb} with a valid token: {body}");
        }
    }
    let wrong = "extender-token-cccccccccccccccccccccccccccccccc";
    for path in [
        "/v1/filter".to_string(),
        format!("/t/{wrong}/v1/filter"),
        format!("/t/{wrong}/v1/prioritize"),
        format!("/t/{wrong}/v1/bind"),
        "/t//v1/filter".into(),
    ] {
        let (status, body) = api.post_raw(&path, args.clone()).await;
        assert_eq!(status, 401, "{path}: {body}");
        assert!(
            serde_json::from_str::<Value>(&body).unwrap()["error"].is_string(),
            "{body}"
        );
    }
    // The token path only carries the extender verbs; admin routes keep their bearer token.
    let (status, _) = api
        .post_raw(&format!("/t/{TOKEN_A}/v1/placements"), "{}".into())
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        api.place(
            json!([{"podUid": "uid-tokened-t1", "namespace": "tokened", "node": name(&nodes[0])}])
        )
        .await["deposited"],
        1
    );
    // Refused calls wrote nothing: two decisions were made (one per token), one confirmed.
    let table = api.pheromones("tokened").await;
    assert_eq!(
        (
            table["counters"]["decisions"].as_u64(),
            table["confirmedPods"].as_u64()
        ),
        (Some(2), Some(1)),
        "{table}"
    );
    api.metrics_containing("aco_extender_auth_failures_total{status=\"401\"} 5")
        .await;
}

#[tokio::test]
async fn refused_and_unauthenticated_cluster_requests_add_no_label_and_no_object() {
    let api = Api::start(
        StartOptions::default()
            .var("EXTENDER_AUTH", "path-token")
            .var("EXTENDER_TOKENS", TOKEN_A)
            .var("CLUSTERS", "prod"),
    );
    let nodes = priced_nodes();
    let (args, _) = full_args(
        &pod("c1", "clustered", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    );
    let objects = || {
        let dir = api.worker.persist_dir();
        (
            object_sqlite_files(dir, "Colony").len(),
            object_sqlite_files(dir, "Facts").len(),
        )
    };
    let put_nodes = |path: String, token: Option<&'static str>| {
        let mut req = api
            .http
            .put(api.worker.url(&path))
            .json(&json!({"nodes": [{"name": "n1"}]}));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move { req.send().await.unwrap().status().as_u16() }
    };
    // Unknown clusters: 404 naming the cluster, with or without credentials.
    for i in 0..20 {
        assert_eq!(put_nodes(format!("/c/x{i}/v1/nodes"), None).await, 404);
        assert_eq!(
            put_nodes(format!("/c/x{i}/v1/nodes"), Some(TOKEN)).await,
            404
        );
        let (status, body) = api
            .post_raw(&format!("/c/x{i}/t/{TOKEN_A}/v1/prioritize"), args.clone())
            .await;
        assert_eq!(status, 404, "{body}");
        assert!(body.contains("\"field\":\"cluster\""), "{body}");
    }
    // The allowed cluster without credentials: 401, no label either.
    assert_eq!(put_nodes("/c/prod/v1/nodes".into(), None).await, 401);
    for verb in ["filter", "prioritize", "echo"] {
        let (status, _) = api
            .post_raw(&format!("/c/prod/v1/{verb}"), args.clone())
            .await;
        assert_eq!(status, 401, "{verb}");
    }
    let (status, _) = api.post_raw("/v1/echo", "{}".into()).await;
    assert_eq!(status, 401, "echo is behind the verbs' auth");
    assert_eq!(
        objects(),
        (0, 0),
        "a refused request created a Durable Object"
    );
    let text = api
        .metrics_containing("aco_requests_total{verb=\"nodes\",code=\"404\"} 40")
        .await;
    assert!(
        !text.contains("cluster=\""),
        "a refused request added a cluster label:\n{text}"
    );
    assert!(
        text.contains("aco_requests_total{verb=\"nodes\",code=\"401\"} 1"),
        "{text}"
    );

    // Authenticated calls of the allowed cluster are labelled and stored.
    assert_eq!(put_nodes("/c/prod/v1/nodes".into(), Some(TOKEN)).await, 200);
    let (status, body) = api
        .post_raw(&format!("/c/prod/t/{TOKEN_A}/v1/echo"), "{\"a\":1}".into())
        .await;
    assert_eq!((status.as_u16(), body.as_str()), (200, "{\"a\":1}"));
    api.metrics_containing("aco_requests_total{cluster=\"prod\",verb=\"nodes\",code=\"200\"} 1")
        .await;
    assert_eq!(objects().1, 1, "the allowed cluster's Facts object");
}

#[tokio::test]
async fn mtls_auth_needs_a_verified_allowed_client_certificate() {
    let fingerprint = "3f".repeat(32);
    let cert = |verified: &str| {
        json!({"tlsClientAuth": {"certPresented": "1", "certVerified": verified,
        "certFingerprintSHA256": fingerprint, "certIssuerDN": "CN=aco test CA"}})
    };
    let args = full_args(
        &pod("m1", "mtls", json!({}), json!({}), json!({"cpu": "1"})),
        &priced_nodes(),
    )
    .0;
    for (cf, allowed, expected) in [
        (cert("SUCCESS"), fingerprint.clone(), 200),
        (cert("SUCCESS"), "00".repeat(32), 403),
        (
            cert("FAILED:certificate has expired"),
            fingerprint.clone(),
            401,
        ),
        (json!({}), fingerprint.clone(), 401),
    ] {
        let options = StartOptions {
            cf: Some(cf.clone()),
            ..StartOptions::default()
        }
        .var("EXTENDER_AUTH", "mtls")
        .var("EXTENDER_CERT_FINGERPRINTS", allowed);
        let api = Api::start(options);
        let (status, body) = api.post_raw("/v1/prioritize", args.clone()).await;
        assert_eq!(status.as_u16(), expected, "cf {cf}: {body}");
    }
    // The issuer allowlist alone also admits it.
    let options = StartOptions {
        cf: Some(cert("SUCCESS")),
        ..StartOptions::default()
    }
    .var("EXTENDER_AUTH", "mtls")
    .var("EXTENDER_CERT_ISSUERS", "CN=aco test CA");
    let api = Api::start(options);
    assert_eq!(api.post_raw("/v1/filter", args).await.0, 200);
}

#[tokio::test]
async fn extender_auth_must_be_set_explicitly() {
    let api = Api::start(StartOptions::default().var("EXTENDER_AUTH", "open"));
    let (status, body) = api.post_raw("/v1/filter", "{}".into()).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("EXTENDER_AUTH"), "{body}");
    let ready = api
        .http
        .get(api.worker.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
}

/// `n` nodes with long (253-character) names: the largest decision a prioritize call can make.
fn long_named_nodes(n: usize) -> Vec<Value> {
    let base = priced_nodes();
    (0..n)
        .map(|i| {
            let mut node = base[i % base.len()].clone();
            let prefix = format!("n{i:04}-");
            node["metadata"]["name"] = json!(format!("{prefix}{}", "x".repeat(253 - prefix.len())));
            node
        })
        .collect()
}

/// Sends `count` prioritize calls for distinct pods of `tenant` (8 at a time).
async fn flood(api: &Api, tenant: &str, tag: &str, count: usize, nodes: &[Value]) {
    use futures::StreamExt;
    let bodies: Vec<String> = (0..count)
        .map(|i| {
            full_args(
                &pod(
                    &format!("{tag}{i}"),
                    tenant,
                    json!({}),
                    json!({}),
                    json!({"cpu": "1"}),
                ),
                nodes,
            )
            .0
        })
        .collect();
    let api_ref = api;
    futures::stream::iter(bodies)
        .map(|b| async move { assert_eq!(api_ref.post_raw("/v1/prioritize", b).await.0, 200) })
        .buffer_unordered(8)
        .collect::<Vec<()>>()
        .await;
}

/// [`flood`], then the on-disk size of the colonies' databases (stopping and restarting the
/// Worker: counter increments of the last second may be lost, see colony_do.rs).
#[cfg_attr(not(feature = "measure"), allow(dead_code))]
async fn flood_prioritize(
    api: &mut Api,
    tenant: &str,
    tag: &str,
    count: usize,
    nodes: &[Value],
) -> u64 {
    flood(api, tenant, tag, count, nodes).await;
    api.worker.while_stopped(|dir| {
        colony_sqlite_files(dir)
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().len())
            .sum()
    })
}

#[tokio::test]
async fn remembered_decisions_are_capped_per_tenant_oldest_first() {
    let mut api = Api::start(StartOptions::default().var("MAX_DECISIONS_PER_TENANT", "20"));
    let nodes = long_named_nodes(64);
    flood(&api, "flood", "f", 30, &nodes).await;
    // Read before any restart; decisions scored from the isolate's colony copy reach the colony
    // with (at the latest) this read.
    let table = api.pheromones("flood").await;
    assert_eq!(table["pendingDecisions"], 20, "{table}");
    assert_eq!(table["counters"]["evictedDecisions"], 10);
    assert_eq!(table["counters"]["decisions"], 30);
    // The survivors are the newest: an evicted pod's placement is unknown, a kept one deposits.
    let oldest_kept = (0..30).rev().take(20).min().unwrap();
    assert_eq!(oldest_kept, 10);
    let s = api
        .place(json!([{"podUid": "uid-flood-f29", "namespace": "flood", "node": name(&nodes[0])}]))
        .await;
    assert_eq!(s["deposited"], 1, "{s}");
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
    assert_eq!(api.pheromones("ml").await["counters"]["decisions"], 1);
    assert_eq!(api.pheromones("team-a").await["counters"]["decisions"], 1);
    let (status, body) = api
        .admin(
            reqwest::Method::GET,
            "/v1/tenants/intruder/pheromones",
            None,
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = api
        .admin(
            reqwest::Method::POST,
            "/v1/placements",
            Some(json!({"placements": [
            {"podUid": "uid-ml-p", "namespace": "ml", "node": name(&nodes[0])},
            {"podUid": "uid-intruder-p", "namespace": "intruder", "node": name(&nodes[0])}]})),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["field"].as_str()),
        (400, Some("placements[1].tenant")),
        "{body}"
    );
    assert_eq!(
        api.pheromones("ml").await["epoch"],
        0,
        "the rejected batch changed nothing"
    );
    api.metrics_containing("aco_tenants_refused_total{verb=\"prioritize\"} 1")
        .await;
}

/// The figure in README "Limits": what an unauthenticated caller (EXTENDER_AUTH=none) can make
/// one tenant store. A measurement, not a test (the cap itself is asserted by
/// `remembered_decisions_are_capped_per_tenant_oldest_first`): compiled only with the `measure`
/// feature, `cargo test --features measure --test extender measure -- --nocapture`.
#[cfg(feature = "measure")]
#[tokio::test]
async fn measure_storage_per_remembered_decision() {
    for (label, nodes) in [
        ("OpenB names", {
            let mut v = Vec::new();
            while v.len() < 64 {
                v.extend(openb_nodes(16));
            }
            v.truncate(64);
            v
        }),
        ("253-char names", long_named_nodes(64)),
    ] {
        let mut api = Api::start(StartOptions::default().var("MAX_DECISIONS_PER_TENANT", "1000"));
        let empty = flood_prioritize(&mut api, "measure", "a", 1, &nodes).await;
        let full = flood_prioritize(&mut api, "measure", "b", 999, &nodes).await;
        let more = flood_prioritize(&mut api, "measure", "c", 1000, &nodes).await;
        let table = api.pheromones("measure").await;
        eprintln!(
            "{label}: 1 decision {empty} B, 1000 decisions {full} B ({:.0} B/decision), +1000 more beyond the cap {more} B; pending {} evicted {}",
            (full - empty) as f64 / 999.0,
            table["pendingDecisions"],
            table["counters"]["evictedDecisions"]
        );
    }
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
            batch.push(json!({"podUid": format!("uid-{tenant}-p{i}"), "namespace": tenant, "node": name(&nodes[i])}));
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
        api.pheromones("t-b").await["epoch"],
        0,
        "the failed tenant's commit was rolled back"
    );
    // The reporter retries the whole batch: every pod counts exactly once over both attempts.
    let retry = api.place(json!(batch)).await;
    assert_eq!(tally(&retry), (3, 0, 6, 0, 0), "{retry}");
    for tenant in ["t-a", "t-b", "t-c"] {
        let table = api.pheromones(tenant).await;
        assert_eq!(
            (
                table["epoch"].as_u64(),
                table["counters"]["deposits"].as_u64()
            ),
            (Some(3), Some(3)),
            "{tenant}: {table}"
        );
        assert_eq!(table["pendingDecisions"], 0);
    }
    let again = api.place(json!(batch)).await;
    assert_eq!(tally(&again), (0, 0, 9, 0, 0), "{again}");
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
    let report = json!({"placements": [{"podUid": "uid-race-hot", "namespace": "race", "node": name(&nodes[0])}]});
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
    assert_eq!(
        (
            table["epoch"].as_u64(),
            table["counters"]["deposits"].as_u64()
        ),
        (Some(1), Some(1)),
        "{table}"
    );
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
    assert_eq!(tally(&s), (0, 0, 0, 5, 0), "{s}");
    for i in 0..5 {
        assert_eq!(api.pheromones(&format!("fresh-{i}")).await["epoch"], 0);
    }
}

/// A mutation of `base`: flipped, inserted, deleted or duplicated bytes, truncation, or a JSON
/// token spliced in (seeded, so a failure reproduces).
fn mutate(base: &[u8], rng: &mut rand::rngs::SmallRng) -> Vec<u8> {
    use rand::Rng;
    const TOKENS: [&str; 12] = [
        "null",
        "-1",
        "1e999",
        "\"\"",
        "[]",
        "{}",
        "\"\\u0000\"",
        "true",
        "0.5",
        "\"x\"",
        "99999999999999999999",
        "\"-\"",
    ];
    let mut b = base.to_vec();
    for _ in 0..rng.random_range(1..=3) {
        if b.is_empty() {
            break;
        }
        let i = rng.random_range(0..b.len());
        match rng.random_range(0..6) {
            0 => b[i] ^= 1 << rng.random_range(0..8),
            1 => b.insert(i, rng.random()),
            2 => {
                let end = (i + rng.random_range(1..16)).min(b.len());
                b.drain(i..end);
            }
            3 => {
                let end = (i + rng.random_range(1..32)).min(b.len());
                let chunk = b[i..end].to_vec();
                b.splice(i..i, chunk);
            }
            4 => b.truncate(i),
            _ => {
                let t = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                let end = (i + rng.random_range(0..8)).min(b.len());
                b.splice(i..end, t.iter().copied());
            }
        }
    }
    b
}

#[tokio::test]
async fn mutated_bodies_on_every_route_never_get_a_5xx_and_rejected_ones_change_nothing() {
    use rand::SeedableRng;
    let api = Api::start(StartOptions::default());
    let nodes: Vec<Value> = priced_nodes().into_iter().take(3).collect();
    let node_names: Vec<String> = nodes.iter().map(name).collect();
    let p = pod(
        "fz",
        "fuzzed",
        json!({}),
        json!({"scheduling.aco/latency-target-us": "500"}),
        json!({"cpu": "1", "memory": "1Gi"}),
    );
    api.put_facts(json!([{"name": node_names[0], "latencyUs": 100, "allocatable": {"cpu": "8"}, "requested": {"cpu": "1"},
        "utilisation": [{"atMs": now_ms(), "value": 0.5}], "observedAtMs": now_ms()}])).await;
    api.scores(&p, &nodes).await;
    let names_args = json!({"Pod": p, "NodeNames": node_names}).to_string();
    let bases: Vec<(reqwest::Method, &str, bool, String)> = vec![
        (reqwest::Method::POST, "/v1/filter", false, full_args(&p, &nodes).0),
        (reqwest::Method::POST, "/v1/filter", false, names_args.clone()),
        (reqwest::Method::POST, "/v1/prioritize", false, full_args(&p, &nodes).0),
        (reqwest::Method::POST, "/v1/prioritize", false, names_args),
        (reqwest::Method::POST, "/v1/bind", false, json!({"PodName": "fz", "PodNamespace": "fuzzed", "PodUID": "uid-fuzzed-fz", "Node": node_names[1]}).to_string()),
        (reqwest::Method::POST, "/v1/placements", true, json!({"placements": [{"podUid": "uid-fuzzed-fz", "namespace": "fuzzed", "node": node_names[0], "outcome": "succeeded"}]}).to_string()),
        (reqwest::Method::PUT, "/v1/nodes", true, json!({"nodes": [{"name": node_names[1], "labels": {"aco/gpu-type": "T4"}, "allocatable": {"cpu": "4", "memory": "8Gi"},
            "latencyUs": 50, "observedAtMs": now_ms(), "utilisation": [{"atMs": now_ms(), "value": 0.3}], "gpuFreeMilli": [500]}], "deleted": [node_names[2]]}).to_string()),
        (reqwest::Method::POST, "/v1/echo", false, "{\"a\":1}".into()),
    ];
    // The state a request could touch: the tenant's colony and the nodes' stored facts (not
    // where its commits stand, which the backstop alarm moves on its own).
    let snapshot = || async {
        let mut table = api.pheromones("fuzzed").await;
        if let Some(t) = table.as_object_mut() {
            t.remove("uncommitted");
            t.remove("durableSeq");
        }
        let mut facts = Vec::new();
        for n in &node_names {
            facts.push(api.node_facts(n).await);
        }
        (table, facts)
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0xAC0);
    let mut state = snapshot().await;
    let (mut sent, mut accepted) = (0, 0);
    for (method, path, admin, base) in &bases {
        for _ in 0..40 {
            let body = mutate(base.as_bytes(), &mut rng);
            let mut req = api
                .http
                .request(method.clone(), api.worker.url(path))
                .header("content-type", "application/json")
                .body(body.clone());
            if *admin {
                req = req.bearer_auth(TOKEN);
            }
            let r = req.send().await.unwrap();
            let status = r.status();
            let text = r.text().await.unwrap();
            sent += 1;
            assert!(
                status.as_u16() < 500,
                "{method} {path} → {status}: {text}\nbody: {}",
                String::from_utf8_lossy(&body)
            );
            let now = snapshot().await;
            if status.is_success() {
                accepted += 1;
                state = now;
            } else {
                assert!(
                    status.is_client_error() && serde_json::from_str::<Value>(&text).is_ok(),
                    "{status}: {text}"
                );
                assert_eq!(
                    now,
                    state,
                    "rejected {method} {path} ({status}: {text}) changed state\nbody: {}",
                    String::from_utf8_lossy(&body)
                );
            }
        }
    }
    eprintln!("HTTP fuzz: {sent} mutated requests, {accepted} accepted, none 5xx, rejected ones changed nothing");
}

/// Binding operations a response reports (`x-aco-binding-ops`) and its JSON body.
async fn prioritize_counting_ops(api: &Api, pod: &Value, nodes: &[Value]) -> (u64, Value) {
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
    let api = Api::start(trail_on());
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
    // A placement of the locally scored pod deposits exactly once, even if it overtook the
    // decision's delivery (the batch carries the isolate's unacknowledged decisions).
    let placed = json!([{"podUid": "uid-copy-b", "namespace": "copy", "node": name(&nodes[2]), "outcome": "succeeded"}]);
    let s = api.place(placed.clone()).await;
    assert_eq!(
        (s["deposited"].as_u64(), s["unknownPod"].as_u64()),
        (Some(1), Some(0)),
        "{s}"
    );
    let s = api.place(placed).await;
    assert_eq!(s["duplicates"], 1, "{s}");
    // The colony moved on; the placement batch's reply brought this isolate's copy up to date,
    // so the next decision is local too and already sees the deposit; so is the one after.
    let (ops, third) = prioritize_counting_ops(&api, &cpu("c"), &nodes).await;
    assert_eq!(ops, 0);
    assert_ne!(
        third,
        first,
        "the deposit on {} changed the scores",
        name(&nodes[2])
    );
    let (ops, fourth) = prioritize_counting_ops(&api, &cpu("d"), &nodes).await;
    assert_eq!((ops, &fourth), (0, &third));
    let table = api.pheromones("copy").await;
    assert_eq!(
        (
            table["epoch"].as_u64(),
            table["counters"]["decisions"].as_u64()
        ),
        (Some(1), Some(4)),
        "{table}"
    );
    assert_eq!(
        table["pendingDecisions"], 3,
        "a, c and d are remembered; b was confirmed: {table}"
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
    assert_eq!(api.pheromones("sync").await["counters"]["decisions"], 3);
}

#[tokio::test]
async fn two_clusters_share_one_deployment_without_their_node_names_or_tenants_colliding() {
    let api = Api::start(StartOptions::default());
    let facts = |gpu: &str| json!({"nodes": [{"name": "node-1", "labels": {"aco/gpu-type": gpu}, "allocatable": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "1"}}]});
    for (prefix, gpu) in [("/c/east", "A10"), ("/c/west", "T4")] {
        let (status, body) = api
            .admin(
                reqwest::Method::PUT,
                &format!("{prefix}/v1/nodes"),
                Some(facts(gpu)),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let a10 = pod(
        "infer",
        "ml",
        json!({}),
        json!({"scheduling.aco/gpu-models": "A10"}),
        json!({"nvidia.com/gpu": "1"}),
    );
    let args = json!({"Pod": a10, "NodeNames": ["node-1"]}).to_string();
    // The same node name is an A10 in east and a T4 in west; the default cluster has no such node.
    assert_eq!(
        api.post("/c/east/v1/filter", args.clone()).await["NodeNames"],
        json!(["node-1"])
    );
    assert!(
        api.post("/c/west/v1/filter", args.clone()).await["FailedAndUnresolvableNodes"]["node-1"]
            .as_str()
            .unwrap()
            .contains("T4")
    );
    assert!(
        api.post("/v1/filter", args.clone()).await["FailedNodes"]["node-1"]
            .as_str()
            .unwrap()
            .contains("no node facts")
    );
    // Tenant "ml" of east is not tenant "ml" of west.
    assert_eq!(
        api.post("/c/east/v1/prioritize", args)
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let s = api.admin(reqwest::Method::POST, "/c/east/v1/placements", Some(json!({"placements": [{"podUid": "uid-ml-infer", "namespace": "ml", "node": "node-1"}]}))).await.1;
    assert_eq!(s["deposited"], 1, "{s}");
    let s = api.admin(reqwest::Method::POST, "/c/west/v1/placements", Some(json!({"placements": [{"podUid": "uid-ml-infer", "namespace": "ml", "node": "node-1"}]}))).await.1;
    assert_eq!(s["unknownPod"], 1, "west never scored the pod: {s}");
    assert_eq!(
        api.admin(
            reqwest::Method::GET,
            "/c/east/v1/tenants/ml/pheromones",
            None
        )
        .await
        .1["epoch"],
        1
    );
    assert_eq!(
        api.admin(
            reqwest::Method::GET,
            "/c/west/v1/tenants/ml/pheromones",
            None
        )
        .await
        .1["epoch"],
        0
    );
    // Series of a named cluster carry its label.
    let text = api
        .metrics_containing("aco_colony_deposits_total{cluster=\"east\",tenant=\"ml\"} 1")
        .await;
    assert!(
        text.contains("aco_requests_total{cluster=\"west\",verb=\"filter\",code=\"200\"} 1"),
        "{text}"
    );
    // A cluster id that is not a DNS label is refused, naming the field.
    let (status, body) = api.post_raw("/c/Not_A_Label/v1/filter", "{}".into()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("\"field\":\"cluster\""), "{body}");
}

// ---- Explanations (GET /v1/tenants/{t}/decisions/{podUid}, docs/explanations.md) ----

/// The GPU model label of an OpenB node.
fn gpu_model(n: &Value) -> String {
    n["metadata"]["labels"]["alibabacloud.com/gpu-card-model"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Filter over `nodes`, then prioritize over the nodes that passed, as kube-scheduler does.
/// Returns (the filter reply, host → score of the prioritize reply).
async fn filter_then_prioritize(
    api: &Api,
    pod: &Value,
    nodes: &[Value],
) -> (Value, std::collections::BTreeMap<String, i64>) {
    let filtered = api.post("/v1/filter", full_args(pod, nodes).0).await;
    let passed: Vec<&str> = filtered["NodeNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let passing: Vec<Value> = nodes
        .iter()
        .filter(|n| passed.contains(&name(n).as_str()))
        .cloned()
        .collect();
    (filtered, api.scores(pod, &passing).await)
}

async fn explanation(api: &Api, tenant: &str, pod_uid: &str) -> (reqwest::StatusCode, Value) {
    api.admin(
        reqwest::Method::GET,
        &format!("/v1/tenants/{tenant}/decisions/{pod_uid}"),
        None,
    )
    .await
}

/// Every candidate of an explanation: its cost terms add up to its total, η is
/// `exp(−total / COST_REFERENCE)` within the floor (defaults), its score is the one prioritize
/// answered, τ is what the colony holds.
fn check_candidates(e: &Value, scores: &std::collections::BTreeMap<String, i64>, tau: f64) {
    let candidates = e["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), scores.len(), "{e}");
    for c in candidates {
        let node = c["node"].as_str().unwrap();
        let terms = c["costPerHour"].as_object().unwrap();
        let sum: f64 = terms.values().filter_map(Value::as_f64).sum();
        let total = c["totalPerHour"].as_f64().unwrap();
        assert!((sum - total).abs() <= 1e-9 + 1e-6 * total, "{node}: {c}");
        let eta = c["eta"].as_f64().unwrap();
        let expected = (-total).exp().clamp(0.001, 1.0);
        assert!(
            (expected - eta).abs() <= 1e-6 * eta,
            "{node}: exp(−{total}) = {expected} vs η {eta}: {c}"
        );
        assert_eq!(c["score"].as_i64(), Some(scores[node]), "{node}: {c}");
        assert!(
            (c["tau"].as_f64().unwrap() - tau).abs() < 1e-6,
            "{node}: {c}"
        );
    }
}

#[tokio::test]
async fn an_explanation_lists_every_candidates_factors_tau_score_and_the_filters_rejections() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    // Three models allowed: the fourth node is rejected by GPU model.
    let allowed: Vec<String> = nodes[..3].iter().map(gpu_model).collect();
    let tau = api.pheromones("research").await["tauInitialNow"]
        .as_f64()
        .unwrap();
    // The first decision of the tenant asks the colony (PrioritizeRequest carries the filter's
    // rejections); the second is scored from the isolate's copy and sent after the response.
    for pod_name in ["first", "second"] {
        let p = gpu_pod(pod_name, Some(&allowed.join("|")));
        let (filtered, scores) = filter_then_prioritize(&api, &p, &nodes).await;
        let (status, e) = explanation(&api, "research", &format!("uid-research-{pod_name}")).await;
        assert_eq!(status, 200, "{e}");
        assert_eq!(
            (
                e["podUid"].as_str(),
                e["tenant"].as_str(),
                e["candidateCount"].as_u64()
            ),
            (
                Some(&*format!("uid-research-{pod_name}")),
                Some("research"),
                Some(3)
            )
        );
        check_candidates(&e, &scores, tau);
        // Best first: the cheapest candidates (0.45/h) cost the least per hour and score 10.
        assert_eq!(e["candidates"][0]["score"], 10, "{e}");
        let cost = |n: &Value| {
            e["candidates"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["node"] == name(n))
                .unwrap()["costPerHour"]["resources"]
                .as_f64()
                .unwrap()
        };
        assert!(cost(&nodes[0]) < cost(&nodes[2]), "{e}");
        assert_eq!(e["explored"], Value::Null);
        let rejected = name(&nodes[3]);
        let f = &e["filterReasons"];
        assert_eq!(
            (
                f["passed"].as_u64(),
                f["rejected"].as_u64(),
                f["byReason"]["gpu_model"].as_u64()
            ),
            (Some(3), Some(1), Some(1)),
            "{e}"
        );
        assert_eq!(f["nodes"][0]["node"], rejected.as_str());
        assert_eq!(f["nodes"][0]["code"], "gpu_model");
        assert_eq!(f["nodes"][0]["unresolvable"], true);
        assert_eq!(
            f["nodes"][0]["reason"], filtered["FailedAndUnresolvableNodes"][&rejected],
            "the reason kube-scheduler was given"
        );
    }
    // A prioritize this isolate saw no filter for: explained, the filter's part null with a note.
    let p = gpu_pod("unfiltered", Some(&allowed.join("|")));
    let scores = api.scores(&p, &nodes[..3]).await;
    let (status, e) = explanation(&api, "research", "uid-research-unfiltered").await;
    assert_eq!(status, 200, "{e}");
    check_candidates(&e, &scores, tau);
    assert_eq!(e["filterReasons"], Value::Null, "{e}");
    assert!(
        e["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("filterReasons is null")),
        "{e}"
    );
    // A confirmed placement deletes the decision: the 404 names the pod and says so.
    let s = api.place(json!([{"podUid": "uid-research-first", "namespace": "research", "node": name(&nodes[0])}])).await;
    assert_eq!(s["deposited"], 1, "{s}");
    let (status, e) = explanation(&api, "research", "uid-research-first").await;
    assert_eq!(status, 404, "{e}");
    assert_eq!(e["field"], "podUid");
    assert!(e["error"].as_str().unwrap().contains("confirmed"), "{e}");
    assert_eq!(e["confirmed"]["node"], name(&nodes[0]).as_str());
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
    let (status, e) = explanation(&api, "team", "uid-team-p").await;
    assert_eq!(status, 200, "{e}");
    let (status, e) = explanation(&api, "team", "no-such-pod").await;
    assert_eq!(status, 404, "{e}");
    assert_eq!(e["field"], "podUid");
    assert!(e["error"].as_str().unwrap().contains("no-such-pod"), "{e}");
    let (status, e) = explanation(&api, "team", "a%20b").await;
    assert_eq!(
        (status.as_u16(), e["field"].as_str()),
        (400, Some("podUid")),
        "{e}"
    );
    let (status, e) = explanation(&api, "not%2Fa%20tenant", "uid-team-p").await;
    assert_eq!(
        (status.as_u16(), e["field"].as_str()),
        (400, Some("tenant")),
        "{e}"
    );
    // A pod without a UID is remembered as namespace/name, and asked for the same way.
    let mut no_uid = pod("anon", "team", json!({}), json!({}), json!({"cpu": "1"}));
    no_uid["metadata"]["uid"] = json!("");
    api.scores(&no_uid, &nodes).await;
    let (status, e) = explanation(&api, "team", "team/anon").await;
    assert_eq!(status, 200, "{e}");
    // In a named cluster, the cluster's colony answers (not the default cluster's).
    let (status, e) = api
        .admin(
            reqwest::Method::GET,
            "/c/other/v1/tenants/team/decisions/uid-team-p",
            None,
        )
        .await;
    assert_eq!(status, 404, "{e}");
    let r = api
        .http
        .post(api.worker.url(path))
        .bearer_auth(TOKEN)
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
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let e: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (
            e["candidateCount"].as_u64(),
            e["candidates"].as_array().unwrap().len()
        ),
        (Some(200), 64),
        "DECISION_KEEP_TOP"
    );
    let f = &e["filterReasons"];
    assert_eq!(
        (
            f["rejected"].as_u64(),
            f["byReason"]["gpu_model"].as_u64(),
            f["nodes"].as_array().unwrap().len()
        ),
        (Some(200), Some(200), 64)
    );
    assert!(
        e["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("64 of 200 rejected")),
        "{e}"
    );
    // 64 candidates and 64 rejections with the longest node names: tens of KB, whatever the cluster.
    eprintln!(
        "explanation of 200 candidates and 200 rejections (253-character names): {} bytes",
        text.len()
    );
    assert!(text.len() < 96 * 1024, "{} bytes", text.len());
}

/// POSTs `body` with `Transfer-Encoding: chunked` (no Content-Length, as a streaming client
/// sends it) over a plain socket, in 8 KiB chunks; returns the raw reply.
fn post_chunked(base_url: &str, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let host = base_url.trim_start_matches("http://");
    let mut socket = std::net::TcpStream::connect(host).unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    for chunk in body.as_bytes().chunks(8192) {
        request.push_str(&format!("{:x}\r\n", chunk.len()));
        request.push_str(std::str::from_utf8(chunk).unwrap());
        request.push_str("\r\n");
    }
    request.push_str("0\r\n\r\n");
    socket.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    socket.read_to_string(&mut reply).unwrap();
    reply
}
