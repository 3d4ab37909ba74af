//! The Colony object on Miniflare: what it writes per pod (counted by the object itself, alarms
//! and `setAlarm` included), exactly-once learning across a `kill -9` of workerd, and poison
//! items that must not block a tenant's learning. What the load costs is measured by
//! `benches/colony_rows.rs` and `benches/decision_window.rs`.

use aco_testkit::api::Api;
use aco_testkit::api::WorkerHttp;
use aco_testkit::colony_load::{
    committed_table, drive, placement, prioritize, put_nodes, tenant_pod, NODES,
};
use aco_testkit::StartOptions;
use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

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
