//! Load on the Colony objects as a cluster makes it, shared by `tests/colony.rs`,
//! `tests/colony_state.rs` and the benches that measure what it costs (`benches/colony_rows.rs`,
//! `benches/decision_window.rs`, `benches/decision_storage.rs`): pods scored in names mode over
//! four priced nodes and their placements reported a second later in one batch per second (the
//! reporter's shape), or prioritize calls over given node objects, many at a time.

use std::time::{Duration, Instant};

use aco_core::api::pheromones::PheromoneTableReply;
use futures::future::join_all;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::api::{full_args, pod, Api, WorkerHttp};

/// The nodes the colony load is scored over: name and price per hour.
pub const NODES: [(&str, &str); 4] = [
    ("node-a", "0.45"),
    ("node-b", "0.45"),
    ("node-c", "1.20"),
    ("node-d", "3.20"),
];

/// Reports [`NODES`] (price, allocatable) to the Worker.
pub async fn put_nodes(api: &Api) {
    let nodes: Vec<Value> = NODES
        .iter()
        .map(|(n, cost)| json!({"name": n, "labels": {"aco/cost-per-hour": cost}, "allocatable": {"cpu": "64", "memory": "256Gi"}}))
        .collect();
    api.put_facts(json!(nodes)).await;
}

/// Pod `i` of `tenant` (one CPU).
pub fn tenant_pod(tenant: &str, i: usize) -> Value {
    pod(
        &format!("p{i}"),
        tenant,
        json!({}),
        json!({}),
        json!({"cpu": "1"}),
    )
}

/// The UID of [`tenant_pod`] `i` of `tenant`.
pub fn uid(tenant: &str, i: usize) -> String {
    format!("uid-{tenant}-p{i}")
}

/// Names-mode prioritize of pod `i` of `tenant`.
pub async fn prioritize(api: &Api, tenant: &str, i: usize) -> StatusCode {
    let names: Vec<&str> = NODES.iter().map(|(n, _)| *n).collect();
    let body = json!({"Pod": tenant_pod(tenant, i), "NodeNames": names}).to_string();
    api.post_raw("/v1/prioritize", body).await.0
}

/// The placement of pod `i` of `tenant`, as the reporter sends it.
pub fn placement(tenant: &str, i: usize) -> Value {
    json!({"podUid": uid(tenant, i), "tenant": tenant, "node": NODES[i % NODES.len()].0})
}

/// Polls the tenant's table until the colony has committed everything it accepted.
pub async fn committed_table(api: &Api, tenant: &str) -> PheromoneTableReply {
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
pub async fn colony_rows(api: &Api, tenants: &[String]) -> u64 {
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
pub async fn drive(
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
        // several schedulers or a fast one overlap). The pause paces the load; nothing waits on
        // it for a result.
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

/// Sends `count` prioritize calls for distinct pods of `tenant` (8 at a time).
pub async fn flood(api: &Api, tenant: &str, tag: &str, count: usize, nodes: &[Value]) {
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
