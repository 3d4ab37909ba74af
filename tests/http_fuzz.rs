//! HTTP fuzzing of the built Worker on Miniflare, over what the body fuzz test
//! (`tests/extender.rs`) leaves out: methods (GET, PUT, POST, DELETE and others) on every route,
//! the `/c/<cluster>` and `/t/<token>` prefixes with valid, refused and mangled ids and tokens,
//! mangled path segments, and headers (missing, wrong or mangled `Authorization`, odd
//! `Content-Type`, junk headers). Seeded, so a failure is reproduced by its seed.
//!
//! Checked for every request: no 5xx, and a JSON error body for every 4xx of a route. At the
//! end: in the second half, sent only by strangers (no valid admin or path token), no Durable
//! Object was made — no Colony object, no Facts object of any cluster — and no telemetry
//! `cluster` label exists beyond the allowed one. `HTTP_FUZZ_REQUESTS` (default 600) sets the length: the long run in
//! docs/fuzzing.md used 20,000.

use aco_testkit::api::{full_args, pod, Api, WorkerHttp};
use aco_testkit::state::object_sqlite_files;
use aco_testkit::{StartOptions, ADMIN_TOKEN};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde_json::json;

const PATH_TOKEN: &str = "fuzz-path-token-0123456789abcdefghijklmnop";

const ROUTES: [&str; 16] = [
    "v1/filter",
    "v1/prioritize",
    "v1/bind",
    "v1/echo",
    "v1/placements",
    "v1/nodes",
    "v1/nodes/n1",
    "v1/tenants/ml/pheromones",
    "v1/tenants/ml/shadow",
    "v1/tenants/ml/decisions/uid-1",
    "v1/tenants/ml/decisions/ns/p",
    "v1/shadow",
    "metrics",
    "livez",
    "readyz",
    "version",
];

const METHODS: [&str; 7] = ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "HEAD"];

/// Mangles one segment: case, junk bytes, percent escapes, length.
fn mangle(segment: &str, rng: &mut SmallRng) -> String {
    match rng.random_range(0..6) {
        0 => segment.to_uppercase(),
        1 => format!("{segment}%00"),
        2 => format!("{segment}%2F.."),
        3 => "x".repeat(rng.random_range(200..400)),
        4 => String::new(),
        _ => format!("{segment}{}", rng.random_range(0..100)),
    }
}

fn path(rng: &mut SmallRng) -> String {
    let mut p = String::new();
    match rng.random_range(0..5) {
        0 => p.push_str("/c/prod"),
        1 => p.push_str("/c/elsewhere"),
        2 => p.push_str(&format!("/c/{}", mangle("prod", rng))),
        _ => {}
    }
    match rng.random_range(0..4) {
        0 => p.push_str(&format!("/t/{PATH_TOKEN}")),
        1 => p.push_str(&format!("/t/{}", mangle(PATH_TOKEN, rng))),
        _ => {}
    }
    let route = ROUTES[rng.random_range(0..ROUTES.len())];
    let segments: Vec<String> = route
        .split('/')
        .map(|s| {
            if rng.random_bool(0.1) {
                mangle(s, rng)
            } else {
                s.to_string()
            }
        })
        .collect();
    p.push('/');
    p.push_str(&segments.join("/"));
    if rng.random_bool(0.1) {
        p.push('/');
    }
    p
}

#[tokio::test]
async fn methods_prefixes_paths_and_headers_never_get_a_5xx_and_strangers_make_no_object() {
    let requests: usize = std::env::var("HTTP_FUZZ_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let api = Api::start(
        StartOptions::default()
            .var("EXTENDER_AUTH", "path-token")
            .var("EXTENDER_TOKENS", PATH_TOKEN)
            .var("CLUSTERS", "prod"),
    );
    let node = json!({"kind": "Node", "apiVersion": "v1",
        "metadata": {"name": "n1", "labels": {}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}});
    let bodies = [
        full_args(
            &pod("p", "ml", json!({}), json!({}), json!({"cpu": "1"})),
            &[node],
        )
        .0,
        json!({"Pod": {"metadata": {"uid": "u"}}, "NodeNames": ["n1"]}).to_string(),
        json!({"placements": [{"podUid": "uid-1", "namespace": "ml", "node": "n1"}]}).to_string(),
        json!({"nodes": [{"name": "n1", "allocatable": {"cpu": "4"}}]}).to_string(),
        "{".to_string(),
        String::new(),
    ];
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let (mut by_admin, mut sent, mut answered_4xx) = (0, 0, 0);
    let objects = |class: &str| object_sqlite_files(api.worker.persist_dir(), class).len();
    let mut before_strangers = (0, 0);
    // First half: any caller. Second half: only strangers (no valid admin or path token),
    // who must add no object.
    for i in 0..requests {
        let strangers = i >= requests / 2;
        if i == requests / 2 {
            before_strangers = (objects("Facts"), objects("Colony"));
        }
        let method =
            reqwest::Method::from_bytes(METHODS[rng.random_range(0..METHODS.len())].as_bytes())
                .unwrap();
        let mut path = path(&mut rng);
        if strangers {
            path = path.replace(PATH_TOKEN, "not-the-token-0123456789abcdefghijklmn");
        }
        let mut req = api
            .http
            .request(method.clone(), api.worker.url(&path))
            .body(bodies[rng.random_range(0..bodies.len())].clone());
        match rng.random_range(0..6) {
            0 if !strangers => {
                by_admin += 1;
                req = req.bearer_auth(ADMIN_TOKEN)
            }
            1 => req = req.bearer_auth(mangle(ADMIN_TOKEN, &mut rng)),
            2 => req = req.header("authorization", "Basic Zm9vOmJhcg=="),
            3 => req = req.header("authorization", "Bearer"),
            _ => {}
        }
        if rng.random_bool(0.3) {
            let types = [
                "application/json",
                "text/plain",
                "application/x-www-form-urlencoded",
                "",
                "application/json; charset=latin1",
            ];
            req = req.header("content-type", types[rng.random_range(0..types.len())]);
        }
        if rng.random_bool(0.2) {
            // Headers the Worker sets on internal replies must mean nothing on a request.
            req = req
                .header("x-aco-rows-written", "999")
                .header("x-aco-binding-ops", "-1")
                .header("x-junk", "z".repeat(rng.random_range(1..4096)));
        }
        let r = req.send().await.unwrap();
        sent += 1;
        let status = r.status();
        let text = r.text().await.unwrap();
        assert!(status.as_u16() < 500, "{method} {path} → {status}: {text}");
        if status.is_client_error() && method != reqwest::Method::HEAD {
            answered_4xx += 1;
            assert!(
                serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                "{method} {path} → {status} without a JSON body: {text}"
            );
        }
    }
    // What strangers could have made: nothing beyond what the admin-token requests did, and no
    // refused cluster's label.
    let text = api.metrics_containing("aco_requests_total").await;
    for line in text.lines().filter(|l| l.contains("cluster=\"")) {
        assert!(
            line.contains("cluster=\"prod\""),
            "a refused cluster got a label: {line}"
        );
    }
    assert_eq!(
        (objects("Facts"), objects("Colony")),
        before_strangers,
        "requests without a valid token made a Durable Object"
    );
    eprintln!(
        "HTTP fuzz (methods, prefixes, headers): {sent} requests ({} from strangers), {by_admin} with the admin token, {answered_4xx} answered 4xx (JSON), none 5xx; Facts objects {}, Colony objects {}, none made by strangers",
        requests - requests / 2,
        objects("Facts"),
        objects("Colony")
    );
}
