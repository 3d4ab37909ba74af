//! Bad inputs on the built Worker in Miniflare: 4xx JSON naming the problem and no state
//! changed, and mutated bodies on every route never answered with a 5xx.

use aco_core::api::error::ErrorBody;
use aco_testkit::api::{error_body, full_args, pod, Api, WorkerHttp};
use aco_testkit::nodes::{name_of, set_allocatable, set_name};
use aco_testkit::openb::priced_nodes;
use aco_testkit::{fixtures, now_ms, StartOptions, ADMIN_TOKEN};
use serde_json::{json, Value};

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
        let message = error_message(&error_body(&text));
        assert!(message.contains(needle), "{path}: {message}");
    }
    // A pod key no colony could store is learnt nothing from, never an error of the bind verb
    // (kube-scheduler would fail the pod's binding for it).
    let odd_uid = json!({"PodName": "p", "PodNamespace": "n", "PodUID": "a b", "Node": "n1"});
    let (got, text) = api.post_raw("/v1/bind", odd_uid.to_string()).await;
    assert_eq!((got.as_u16(), text.as_str()), (200, r#"{"Error":""}"#));
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
    let v = error_body(&r.text().await.unwrap());
    assert!(
        v.error.contains("(Content-Length) exceeds the limit"),
        "refused from its Content-Length, before reading: {v:?}"
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
        .admin_refused(reqwest::Method::PUT, "/v1/nodes", Some(json!({"nodes": [{"name": "good", "latencyUs": 5}, {"name": "bad", "utilisation": [{"atMs": 1, "value": 7}]}]})))
        .await;
    assert_eq!(status, 400);
    assert_eq!(body.field.as_deref(), Some("nodes[1].utilisation[0].value"));
    let probe = pod("p", "n", json!({}), json!({}), json!({}));
    let reply = api.filter(&probe, &["good".to_owned()]).await;
    assert!(
        reply
            .failed_nodes
            .get("good")
            .is_some_and(|reason| reason.contains("no node facts")),
        "{reply:?}"
    );

    // A placement batch with one bad item deposits nothing.
    api.scores(&pod("p1", "iso", json!({}), json!({}), json!({})), &nodes)
        .await;
    let (status, body) = api
        .admin_refused(
            reqwest::Method::POST,
            "/v1/placements",
            Some(json!({"placements": [
            {"podUid": "uid-iso-p1", "namespace": "iso", "node": name_of(&nodes[0])},
            {"podUid": "x", "namespace": "iso", "node": name_of(&nodes[0]), "outcome": 3.5}]})),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body.field.as_deref(), Some("placements[1].outcome"));
    assert_eq!(api.pheromone_table("iso").await.counters.deposits, 0);
    let (status, body) = api
        .admin_refused(
            reqwest::Method::GET,
            "/v1/tenants/bad..%2F/pheromones",
            None,
        )
        .await;
    assert!(status == 400 || status == 404, "{status} {body:?}");

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

/// A mutation of `base`: flipped, inserted, deleted or duplicated bytes, truncation, or a JSON
/// token spliced in (seeded, so a failure reproduces).
#[tokio::test]
async fn a_node_that_does_not_read_late_in_a_long_list_is_a_400_naming_it_not_half_a_200() {
    // The verbs judge each node as they read it; the answer is known to be a 200 only after the
    // last one, so a bad node anywhere is a complete 400 naming it.
    let api = Api::start(StartOptions::default());
    let pod = fixtures::bench_pod();
    let body = |nodes: &[Value]| {
        json!({"Pod": pod, "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": null})
            .to_string()
    };
    let good = fixtures::nodes(3000);
    let mut bad_allocatable = good.clone();
    set_allocatable(&mut bad_allocatable[2990], "cpu", json!("many"));
    let mut bad_name = good.clone();
    set_name(&mut bad_name[2997], json!(7));
    // A node the verb cannot judge early, one that does not read late: the latter is the answer,
    // as when the whole list was parsed before any node was judged.
    let mut both = bad_name.clone();
    set_allocatable(&mut both[10], "cpu", json!("many"));
    let whole = body(&good);
    let cases = [
        (
            body(&bad_allocatable),
            "Nodes.items[2990].status.allocatable.cpu",
        ),
        (body(&bad_name), "Nodes.items[2997].metadata.name"),
        (body(&both), "Nodes.items[2997].metadata.name"),
        // Cut short after the last node: the body is refused whole.
        (
            whole[..whole.len() - 20].to_string(),
            "invalid ExtenderArgs",
        ),
    ];
    for verb in ["/v1/filter", "/v1/prioritize"] {
        for (body, needle) in &cases {
            let (status, text) = api.post_raw(verb, body.clone()).await;
            assert_eq!(
                status,
                400,
                "{verb} {needle}: {}",
                &text[..text.len().min(300)]
            );
            // Exactly an error and maybe a field: no batch item in an extender verb's refusal.
            let v = error_body(&text);
            assert_eq!(v.item, None, "{verb}: {text}");
            let message = error_message(&v);
            assert!(message.contains(needle), "{verb}: {message}");
        }
    }
    let (status, text) = api.post_raw("/v1/filter", whole).await;
    assert_eq!(status, 200, "{}", &text[..text.len().min(300)]);
}

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
    let node_names: Vec<String> = nodes.iter().map(name_of).collect();
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
        let mut table = api.pheromone_table("fuzzed").await;
        (table.uncommitted, table.durable_seq) = (false, 0);
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
                req = req.bearer_auth(ADMIN_TOKEN);
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
                assert!(status.is_client_error(), "{status}: {text}");
                error_body(&text);
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
    // What they were counted as is still an exposition a strict scraper takes (`metrics()`
    // runs `promtool check metrics`).
    api.metrics_containing("aco_requests_total{verb=\"echo\"")
        .await;
}

/// An error body's message and the field it names, for a needle to be found in either.
fn error_message(body: &ErrorBody) -> String {
    format!(
        "{} {}",
        body.error,
        body.field.as_deref().unwrap_or_default()
    )
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
