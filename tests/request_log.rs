//! The Worker's structured log on Miniflare: one JSON line per request, carrying the request id
//! the caller sent in `x-request-id` (or one the Worker made), which the response returns in the
//! same header; the reporter's client sends one id per delivery, which the Worker's line
//! carries. Read from the Worker's own output (`WorkerProcess::logs`).

use std::time::{Duration, Instant};

use aco_testkit::api::{pod, Api, WorkerHttp};
use aco_testkit::openb::priced_nodes;
use aco_testkit::{StartOptions, ADMIN_TOKEN};
use serde::Deserialize;
use serde_json::{json, Value};

const HEADER: &str = "x-request-id";

/// The Worker's request line (`aco_core::request_log::RequestLine`, which borrows and only
/// serialises) read back owned, and strictly: a key it does not know fails the parse, so a
/// line that gained a field (the path, a header) is caught here.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RequestLogLine {
    level: String,
    msg: String,
    request_id: String,
    method: String,
    route: String,
    cluster: Option<String>,
    tenant: Option<String>,
    status: u16,
    /// Only its presence is checked: a duration is whatever the machine took.
    #[allow(dead_code)]
    duration_ms: u64,
    binding_ops: u32,
}

/// The Worker's JSON log line of the request `id`, waiting for the log to show it.
fn line_of(api: &Api, id: &str) -> RequestLogLine {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let logs = api.worker.logs();
        let found = logs
            .lines()
            .filter(|l| l.contains("\"msg\":\"request\""))
            .filter_map(|l| l.find('{').map(|i| &l[i..]))
            .map(|l| {
                serde_json::from_str::<RequestLogLine>(l)
                    .unwrap_or_else(|e| panic!("not a request line: {e}: {l}"))
            })
            .find(|line| line.msg == "request" && line.request_id == id);
        if let Some(v) = found {
            return v;
        }
        assert!(Instant::now() < deadline, "no log line for {id}:\n{logs}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn each_request_logs_one_json_line_with_the_id_it_was_sent_and_answers_it_back() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let p = pod(
        "logged",
        "team-ns",
        json!({"scheduling.aco/tenant-id": "ml"}),
        json!({}),
        json!({"cpu": "1"}),
    );
    let id = "3f2c9a1e-5b7d-4c8e-9f01-23456789abcd";
    let r = api
        .http
        .post(api.worker.url(&api.verb_path("prioritize")))
        .header(HEADER, id)
        .header("content-type", "application/json")
        .body(aco_testkit::api::full_args(&p, &nodes).0)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()[HEADER], id);
    let line = line_of(&api, id);
    assert_eq!(
        (
            line.level.as_str(),
            line.method.as_str(),
            line.route.as_str(),
            line.tenant.as_deref(),
            line.status
        ),
        ("info", "POST", "prioritize", Some("ml"), 200),
        "{line:?}"
    );
    assert!(line.binding_ops >= 1, "{line:?}");
    assert_eq!(line.cluster, None, "the default cluster: {line:?}");

    // An admin call in a named cluster: its cluster and the path's tenant; refused → its status.
    let id = "admin-call-1";
    let r = api
        .http
        .get(api.worker.url("/c/eu/v1/tenants/ml/pheromones"))
        .bearer_auth(ADMIN_TOKEN)
        .header(HEADER, id)
        .send()
        .await
        .unwrap();
    assert_eq!(
        (r.status().as_u16(), r.headers()[HEADER].to_str().unwrap()),
        (200, id)
    );
    let line = line_of(&api, id);
    assert_eq!(
        (
            line.route.as_str(),
            line.cluster.as_deref(),
            line.tenant.as_deref()
        ),
        ("pheromones", Some("eu"), Some("ml")),
        "{line:?}"
    );
    let r = api
        .http
        .get(api.worker.url("/v1/tenants/ml/pheromones"))
        .bearer_auth("not-the-token")
        .header(HEADER, "refused-1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(line_of(&api, "refused-1").status, 401);

    // No id, or one the Worker will not log as given: a fresh one, returned and logged.
    for sent in [None, Some("has space\"}")] {
        let mut req = api.http.get(api.worker.url("/livez"));
        if let Some(s) = sent {
            req = req.header(HEADER, s);
        }
        let r = req.send().await.unwrap();
        let made = r.headers()[HEADER].to_str().unwrap().to_string();
        assert_eq!(made.len(), 32, "{made}");
        assert!(made.chars().all(|c| c.is_ascii_hexdigit()), "{made}");
        assert_eq!(line_of(&api, &made).route, "probe");
    }
    // Every request line is JSON on a line of its own.
    let unparsed: Vec<String> = api
        .worker
        .logs()
        .lines()
        .filter(|l| l.contains("\"msg\":\"request\""))
        .filter(|l| {
            let json = l.find('{').map_or("", |i| &l[i..]);
            serde_json::from_str::<Value>(json).is_err()
        })
        .map(String::from)
        .collect();
    assert!(unparsed.is_empty(), "{unparsed:?}");
}

#[tokio::test]
async fn the_reporters_delivery_carries_its_own_request_id_into_the_workers_log() {
    let api = Api::start(StartOptions::default());
    let client = aco_reporter::worker_client::WorkerClient::new(
        &api.worker.url(""),
        ADMIN_TOKEN.to_string(),
        None,
        Duration::from_secs(30),
    )
    .unwrap();
    let batch = json!({"placements": [{"podUid": "never-scored", "namespace": "ns", "name": "p", "tenant": "ml", "node": "n1"}]});
    let mut ids = Vec::new();
    for _ in 0..2 {
        let answer = client
            .send(reqwest::Method::POST, "/v1/placements", &batch)
            .await;
        assert!(answer.ok(), "{}", answer.body);
        assert_eq!(answer.request_id.len(), 32, "{}", answer.request_id);
        let line = line_of(&api, &answer.request_id);
        assert_eq!((line.route.as_str(), line.status), ("placements", 200));
        ids.push(answer.request_id);
    }
    assert_ne!(ids[0], ids[1], "one id per delivery");
}
