//! The Colony object on Miniflare: what it writes per pod (counted by the object itself, alarms
//! and `setAlarm` included), exactly-once learning across a `kill -9` of workerd, and poison
//! items that must not block a tenant's learning.

use std::time::{Duration, Instant};

use aco_core::api::pheromones::PheromoneTableReply;
use aco_testkit::api::WorkerHttp;
use aco_testkit::api::{pod, Api};
use aco_testkit::StartOptions;
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

const NODES: [(&str, &str); 4] = [
    ("node-a", "0.45"),
    ("node-b", "0.45"),
    ("node-c", "1.20"),
    ("node-d", "3.20"),
];

async fn put_nodes(api: &Api) {
    let nodes: Vec<Value> = NODES
        .iter()
        .map(|(n, cost)| json!({"name": n, "labels": {"aco/cost-per-hour": cost}, "allocatable": {"cpu": "64", "memory": "256Gi"}}))
        .collect();
    api.put_facts(json!(nodes)).await;
}

fn tenant_pod(tenant: &str, i: usize) -> Value {
    pod(
        &format!("p{i}"),
        tenant,
        json!({}),
        json!({}),
        json!({"cpu": "1"}),
    )
}

fn uid(tenant: &str, i: usize) -> String {
    format!("uid-{tenant}-p{i}")
}

/// Names-mode prioritize of pod `i` of `tenant`.
async fn prioritize(api: &Api, tenant: &str, i: usize) -> StatusCode {
    let names: Vec<&str> = NODES.iter().map(|(n, _)| *n).collect();
    let body = json!({"Pod": tenant_pod(tenant, i), "NodeNames": names}).to_string();
    api.post_raw("/v1/prioritize", body).await.0
}

fn placement(tenant: &str, i: usize) -> Value {
    json!({"podUid": uid(tenant, i), "tenant": tenant, "node": NODES[i % NODES.len()].0})
}

/// Polls the tenant's table until the colony has committed everything it accepted.
async fn committed_table(api: &Api, tenant: &str) -> PheromoneTableReply {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let table = api.pheromone_table(tenant).await;
        if !table.uncommitted {
            return table;
        }
        assert!(Instant::now() < deadline, "never committed: {table:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every colony's own count of the rows it wrote (`aco_colony_rows_written_total`), summed.
async fn colony_rows(api: &Api, tenants: &[String]) -> u64 {
    let text = api
        .metrics_containing("aco_colony_rows_written_total")
        .await;
    tenants
        .iter()
        .map(|t| {
            let prefix = format!("aco_colony_rows_written_total{{tenant=\"{t}\"}} ");
            text.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .unwrap_or_else(|| panic!("no rows counted for {t}:\n{text}"))
                .parse::<u64>()
                .unwrap()
        })
        .sum()
}

/// Drives `pods_per_second` for `seconds` over `tenants` tenants as a cluster would: each pod
/// scored once (prioritize), its placement reported a second later in one batch per second
/// carrying every tenant (the reporter's shape). Returns (pods, Colony rows written, wall s).
async fn drive(
    api: &Api,
    tenants: usize,
    pods_per_second: usize,
    seconds: usize,
) -> (usize, u64, f64) {
    let names: Vec<String> = (0..tenants).map(|t| format!("load-{t}")).collect();
    let started = Instant::now();
    let mut pending: Vec<(String, usize)> = Vec::new();
    let mut pod = 0;
    for s in 0..seconds {
        let second_start = started + Duration::from_secs(s as u64);
        let this_second: Vec<(String, usize)> = (0..pods_per_second)
            .map(|k| {
                let i = pod + k;
                (names[i % tenants].clone(), i)
            })
            .collect();
        pod += pods_per_second;
        // Spread over the second, a few at a time (kube-scheduler scores one pod at a time;
        // several schedulers or a fast one overlap).
        for chunk in this_second.chunks(pods_per_second.div_ceil(10).max(1)) {
            let codes = join_all(chunk.iter().map(|(t, i)| prioritize(api, t, *i))).await;
            assert!(codes.iter().all(|c| *c == StatusCode::OK), "{codes:?}");
            tokio::time::sleep(Duration::from_millis(1000 / 10 / 2)).await;
        }
        let batch: Vec<Value> = pending.iter().map(|(t, i)| placement(t, *i)).collect();
        if !batch.is_empty() {
            let s = api.place_summary(json!(batch)).await;
            assert_eq!(s.deposited, batch.len() as u64, "{s:?}");
        }
        pending = this_second;
        if let Some(wait) =
            (second_start + Duration::from_secs(1)).checked_duration_since(Instant::now())
        {
            tokio::time::sleep(wait).await;
        }
    }
    let batch: Vec<Value> = pending.iter().map(|(t, i)| placement(t, *i)).collect();
    api.place(json!(batch)).await;
    let wall = started.elapsed().as_secs_f64();
    for t in &names {
        committed_table(api, t).await;
    }
    // The last backstop alarm has fired (nothing is uncommitted) and counted its rows.
    (pod, colony_rows(api, &names).await, wall)
}

#[tokio::test]
async fn colony_rows_per_pod_stay_below_half_a_row_with_alarms_counted() {
    let api = Api::start(StartOptions::default());
    put_nodes(&api).await;
    let (pods, rows, wall) = drive(&api, 2, 20, 8).await;
    let per_pod = rows as f64 / pods as f64;
    eprintln!(
        "{pods} pods over 2 tenants in {wall:.1} s: {rows} Colony rows = {per_pod:.3} per pod"
    );
    assert!(per_pod <= 0.5, "{rows} rows for {pods} pods");
    // Every pod deposited once: the decisions reached the colony before their placements.
    let mut deposits = 0;
    for t in 0..2 {
        deposits += api
            .pheromone_table(&format!("load-{t}"))
            .await
            .counters
            .deposits;
    }
    assert_eq!(deposits, pods as u64);
}

/// The figures of docs/cost.md: `cargo test --features measure --test colony measure -- --nocapture`.
#[cfg(feature = "measure")]
#[tokio::test]
async fn measure_colony_rows_per_pod() {
    for (tenants, rate, seconds) in [(1, 10, 30), (10, 10, 30), (1, 100, 20), (10, 100, 20)] {
        let api = Api::start(StartOptions::default());
        put_nodes(&api).await;
        let (pods, rows, wall) = drive(&api, tenants, rate, seconds).await;
        let text = api.metrics_containing("aco_binding_operations_total").await;
        let sample = |prefix: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(prefix))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0.0)
        };
        let do_requests = sample("aco_binding_operations_total{kind=\"do_request\"} ");
        let replied_rows = sample("aco_do_rows_written_total{class=\"Colony\"} ");
        eprintln!(
            "MEASURE tenants={tenants} pods/s={rate} pods={pods} wall_s={wall:.1} achieved_pods/s={:.1} colony_rows={rows} rows/pod={:.3} (in replies: {replied_rows}) do_requests/pod={:.2} (all objects, the test's admin reads included)",
            pods as f64 / wall,
            rows as f64 / pods as f64,
            do_requests / pods as f64
        );
    }
}

/// `kill -9` of workerd in the middle of a burst of placements, a restart on the same state and
/// the whole burst sent again: every pod deposits exactly once.
#[tokio::test]
async fn a_kill_9_in_the_middle_of_a_placement_burst_then_a_resend_deposits_every_pod_once() {
    let mut api = Api::start(StartOptions::default());
    put_nodes(&api).await;
    let tenant = "crash";
    let pods = 300;
    for chunk in (0..pods).collect::<Vec<_>>().chunks(20) {
        let codes = join_all(chunk.iter().map(|i| prioritize(&api, tenant, *i))).await;
        assert!(codes.iter().all(|c| *c == StatusCode::OK));
    }
    // The window this closes: decisions scored from the isolate's copy are durable once the
    // colony says so (within COMMIT_INTERVAL_MS while requests flow, COMMIT_BACKSTOP_MS after).
    let table = committed_table(&api, tenant).await;
    assert_eq!(table.pending_decisions, pods as u64, "{table:?}");

    // 30 batches of 10, 6 at a time; the crash comes once a third of them were acknowledged.
    let batches: Vec<Vec<Value>> = (0..pods)
        .collect::<Vec<_>>()
        .chunks(10)
        .map(|c| c.iter().map(|i| placement(tenant, *i)).collect())
        .collect();
    let url = api.worker.url("/v1/placements");
    let http = api.http.clone();
    let send = |b: Vec<Value>, url: String| {
        let http = http.clone();
        async move {
            http.post(url)
                .bearer_auth(aco_testkit::ADMIN_TOKEN)
                .json(&json!({ "placements": b }))
                .send()
                .await
                .ok()
                .filter(|r| r.status() == 200)
                .map(|_| ())
        }
    };
    let mut acknowledged = 0;
    for group in batches[..12].chunks(6) {
        let done = join_all(group.iter().map(|b| send(b.clone(), url.clone()))).await;
        acknowledged += done.iter().filter(|d| d.is_some()).count();
    }
    // A group in flight when the process group dies: each request's headers and half its body
    // written to the Worker's socket (so it has begun and cannot have been answered), the rest
    // never sent.
    let mut in_flight = Vec::new();
    for b in &batches[12..18] {
        let body = serde_json::to_vec(&json!({ "placements": b })).unwrap();
        in_flight.push(half_sent(&url, &body).await);
    }
    api.worker.crash_and_restart();
    for connection in in_flight {
        assert!(
            !answered_200(connection).await,
            "a request cut off in flight was acknowledged"
        );
    }
    assert_eq!(acknowledged, 12);

    // The reporter's retry: everything again, acknowledged or not.
    let mut deposited = 0;
    let mut duplicates = 0;
    for b in &batches {
        let s = api.place_summary(json!(b)).await;
        deposited += s.deposited;
        duplicates += s.duplicates;
    }
    assert!(
        deposited <= pods as u64 - 120,
        "the 120 acknowledged pods are duplicates"
    );
    assert_eq!(deposited + duplicates, pods as u64);
    let table = committed_table(&api, tenant).await;
    assert_eq!(
        table.counters.deposits, pods as u64,
        "every pod confirmed exactly once: {table:?}"
    );
    assert_eq!(table.pending_decisions, 0);
    assert_eq!(table.confirmed_pods, pods as u64);
}

/// The window that remains, measured: decisions scored from the isolate's copy and killed with
/// workerd before the colony committed them — or before their `DECISION_FLUSH_MS` send — are
/// lost (their placements are held for a decision that never comes, then count as unknown,
/// never twice). `cargo test --features measure --test colony window -- --nocapture`.
#[cfg(feature = "measure")]
#[tokio::test]
async fn measure_the_window_of_decisions_lost_to_a_kill_9_right_after_their_answers() {
    let mut api = Api::start(StartOptions::default());
    put_nodes(&api).await;
    let pods = 300;
    for chunk in (0..pods).collect::<Vec<_>>().chunks(20) {
        join_all(chunk.iter().map(|i| prioritize(&api, "window", *i))).await;
    }
    api.worker.crash_and_restart();
    let placements: Vec<Value> = (0..pods).map(|i| placement("window", i)).collect();
    let s = api.place_summary(json!(placements)).await;
    eprintln!(
        "MEASURE window: {pods} prioritize answers, kill -9 at once: deposited {} held {} unknownPod {}",
        s.deposited, s.held, s.unknown_pod
    );
    assert_eq!(s.deposited + s.held + s.unknown_pod, pods as u64);
}

/// A prioritize naming a 2.2 MB node used to be queued, refused by the
/// colony forever and block the tenant's learning. Now it is refused at the door (400 naming the
/// field), and the tenant keeps learning.
#[tokio::test]
async fn a_2_2_mb_node_name_leaves_the_tenant_learning() {
    let api = Api::start(StartOptions::default());
    put_nodes(&api).await;
    let tenant = "poison";
    let huge = "n".repeat(2_200_000);
    let node = json!({"metadata": {"name": huge}, "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}});
    let body = json!({"Pod": tenant_pod(tenant, 0), "Nodes": {"metadata": {}, "items": [node]}})
        .to_string();
    let (status, text) = api.post_raw("/v1/prioritize", body).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("Nodes.items[0].metadata.name"), "{text}");
    // 64 nodes of 40,000 characters: the same.
    let names: Vec<String> = (0..64)
        .map(|i| format!("{i}{}", "x".repeat(40_000)))
        .collect();
    let body = json!({"Pod": tenant_pod(tenant, 1), "NodeNames": names}).to_string();
    let (status, text) = api.post_raw("/v1/prioritize", body).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("NodeNames[0]"), "{text}");
    // A pod key no placement could name (over 320 characters) is not remembered either.
    let mut long = tenant_pod(tenant, 2);
    long.pointer_mut("/metadata/uid")
        .map(|uid| *uid = json!("u".repeat(400)))
        .unwrap();
    let names: Vec<&str> = NODES.iter().map(|(n, _)| *n).collect();
    let (status, text) = api
        .post_raw(
            "/v1/prioritize",
            json!({"Pod": long, "NodeNames": names}).to_string(),
        )
        .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("Pod.metadata.uid"), "{text}");
    let (status, body) = api
        .admin_refused(
            reqwest::Method::POST,
            "/v1/placements",
            Some(json!({"placements": [{"podUid": "u".repeat(400), "tenant": tenant, "node": "node-a"}]})),
        )
        .await;
    assert_eq!(status, 400, "{body:?}");
    assert_eq!(
        (body.field.as_deref(), body.item),
        (Some("placements[0].podUid"), Some(0)),
        "{body:?}"
    );

    // The tenant learns as before: scored, placed, deposited; later decisions too.
    for i in 3..6 {
        assert_eq!(prioritize(&api, tenant, i).await, StatusCode::OK);
    }
    let s = api
        .place_summary(json!((3..6)
            .map(|i| placement(tenant, i))
            .collect::<Vec<_>>()))
        .await;
    assert_eq!((s.deposited, s.unknown_pod), (3, 0), "{s:?}");
    let table = committed_table(&api, tenant).await;
    assert_eq!(table.counters.deposits, 3, "{table:?}");
    assert!(
        table.dropped.is_empty(),
        "nothing reached the colony to drop: {table:?}"
    );
    // A scrape after all of it passes `promtool check metrics` (`metrics()` runs it).
    api.metrics_containing("aco_colony_deposits_total{tenant=\"poison\"} 3")
        .await;
}

/// Opens a connection to `url` and writes a POST of `body` (as the admin) up to half its bytes:
/// the request is under way and cannot be complete.
async fn half_sent(url: &str, body: &[u8]) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let url = reqwest::Url::parse(url).unwrap();
    let address = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        url.path(),
        url.host_str().unwrap(),
        aco_testkit::ADMIN_TOKEN,
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body[..body.len() / 2]).await.unwrap();
    stream.flush().await.unwrap();
    stream
}

/// Whether the connection of a half-sent request still gets a 200 once the rest is sent.
async fn answered_200(mut stream: tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut reply = Vec::new();
    // The process on the other side was killed: the read ends (reset or EOF) without a reply.
    let _ = stream.read_to_end(&mut reply).await;
    reply.starts_with(b"HTTP/1.1 200")
}
