//! Worker memory of large requests, through the built Worker on Miniflare: wasm linear memory of
//! a fresh isolate (read from `x-aco-wasm-memory-bytes`; it only grows, so it is the high-water
//! mark) before and after a full-object filter, then a prioritize, of N real-shaped nodes; and
//! after a names-mode filter and prioritize of 5,000 of 10,000 reported nodes. Beside it workerd's
//! peak resident memory (`WorkerProcess::workerd_peak_rss_bytes`). Locally the Durable Objects
//! run in the same isolate, so their memory is included (in production they run elsewhere).
//!
//! Run: `bash scripts/build-worker && BENCH_NODES=1000,2500,5000,10000
//! BENCH_MAX_BODY_BYTES=104857600 cargo bench --bench worker_memory` (BENCH_NODES: the
//! full-object sizes, e.g. `1000` for a short run; BENCH_MAX_BODY_BYTES lifts `MAX_BODY_BYTES`
//! to the platform's 100 MB, as the quoted run did: without it a body above the limit is refused
//! with 413 from its Content-Length, which the table shows). Prints the figures of
//! docs/benchmarks.md "Worker memory of large requests" beside the ones just measured.

use aco_testkit::facts_api::{node_name, pod, report, FactsApi};
use aco_testkit::fixtures;
use aco_testkit::quoted::{Beside, Quotes};
use aco_testkit::{now_ms, StartOptions};
use serde_json::json;

/// The figures docs/benchmarks.md quotes (its table's "after" values, MAX_BODY_BYTES lifted).
static QUOTED: Quotes = Quotes {
    source: "docs/benchmarks.md \"Worker memory of large requests\" (after = branch stream)",
    conditions: "2026-12-02, shared 2-core VM, load average 4.0–5.0, MAX_BODY_BYTES = 100 MB",
    figures: &[
        ("full objects, 1000 nodes: body MB", "7.4"),
        ("full objects, 1000 nodes: wasm memory at start MiB", "1.3"),
        ("full objects, 1000 nodes: wasm after filter MiB", "8.6"),
        ("full objects, 1000 nodes: wasm after prioritize MiB", "8.7"),
        (
            "full objects, 1000 nodes: workerd peak RSS at start MiB",
            "73",
        ),
        (
            "full objects, 1000 nodes: workerd peak RSS after both MiB",
            "142",
        ),
        ("full objects, 2500 nodes: body MB", "18.5"),
        ("full objects, 2500 nodes: wasm memory at start MiB", "1.3"),
        ("full objects, 2500 nodes: wasm after filter MiB", "19.4"),
        (
            "full objects, 2500 nodes: wasm after prioritize MiB",
            "20.2",
        ),
        (
            "full objects, 2500 nodes: workerd peak RSS at start MiB",
            "73",
        ),
        (
            "full objects, 2500 nodes: workerd peak RSS after both MiB",
            "153",
        ),
        ("full objects, 5000 nodes: body MB", "37.0"),
        ("full objects, 5000 nodes: wasm memory at start MiB", "1.3"),
        ("full objects, 5000 nodes: wasm after filter MiB", "37.6"),
        (
            "full objects, 5000 nodes: wasm after prioritize MiB",
            "39.0",
        ),
        (
            "full objects, 5000 nodes: workerd peak RSS at start MiB",
            "73",
        ),
        (
            "full objects, 5000 nodes: workerd peak RSS after both MiB",
            "170",
        ),
        ("full objects, 10000 nodes: body MB", "73.9"),
        ("full objects, 10000 nodes: wasm memory at start MiB", "1.3"),
        ("full objects, 10000 nodes: wasm after filter MiB", "73.9"),
        (
            "full objects, 10000 nodes: wasm after prioritize MiB",
            "76.7",
        ),
        (
            "full objects, 10000 nodes: workerd peak RSS at start MiB",
            "73",
        ),
        (
            "full objects, 10000 nodes: workerd peak RSS after both MiB",
            "233",
        ),
        ("names, 5,000 of 10,000 reported nodes: body MB", "0.1"),
        (
            "names, 5,000 of 10,000 reported nodes: wasm memory at start MiB",
            "56.4",
        ),
        (
            "names, 5,000 of 10,000 reported nodes: wasm after filter MiB",
            "59.4",
        ),
        (
            "names, 5,000 of 10,000 reported nodes: wasm after prioritize MiB",
            "59.4",
        ),
        (
            "names, 5,000 of 10,000 reported nodes: workerd peak RSS at start MiB",
            "189",
        ),
        (
            "names, 5,000 of 10,000 reported nodes: workerd peak RSS after both MiB",
            "201",
        ),
    ],
};

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1 << 20) as f64)
}

/// workerd's peak resident memory: the isolates' JS heaps (request chunks, reply chunks) and
/// wasm memories, locally the Durable Objects' too, and the runtime itself.
fn rss(api: &FactsApi) -> String {
    api.worker
        .workerd_peak_rss_bytes()
        .map_or("?".to_string(), |b| {
            format!("{:.0}", b as f64 / (1 << 20) as f64)
        })
}

/// One request shape's rows: the body's size, then memory at start, after filter and after
/// prioritize of `body` (each refused with 413 above `limit`, as the limit is for).
async fn rows(table: &Beside, api: &FactsApi, case: &str, body: String, limit: usize) {
    let (start, rss_start) = (api.memory().await, rss(api));
    table.row(
        &format!("{case}: body MB"),
        format!("{:.1}", body.len() as f64 / 1e6),
    );
    table.row(&format!("{case}: wasm memory at start MiB"), mib(start));
    for (verb, what) in [("/v1/filter", "filter"), ("/v1/prioritize", "prioritize")] {
        let r = api.verb(verb, body.clone()).await;
        let refused = body.len() > limit;
        // Above MAX_BODY_BYTES: refused (drained, never stored), which is what the limit is for.
        assert_eq!(
            r.status,
            if refused { 413 } else { 200 },
            "{verb} {case}: {}",
            r.body
        );
        let note = if refused {
            format!("413 above MAX_BODY_BYTES = {limit}: ")
        } else {
            String::new()
        };
        table.row(
            &format!("{case}: wasm after {what} MiB"),
            format!("{note}{}", mib(api.memory().await)),
        );
    }
    table.row(&format!("{case}: workerd peak RSS at start MiB"), rss_start);
    table.row(
        &format!("{case}: workerd peak RSS after both MiB"),
        rss(api),
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = || match std::env::var("BENCH_MAX_BODY_BYTES") {
        Ok(limit) => StartOptions::default().var("MAX_BODY_BYTES", limit),
        Err(_) => StartOptions::default(),
    };
    let sizes: Vec<usize> =
        std::env::var("BENCH_NODES")
            .ok()
            .map_or(vec![1_000, 2_500, 5_000, 10_000], |v| {
                v.split(',')
                    .map(|n| n.trim().parse().expect("BENCH_NODES: node counts"))
                    .collect()
            });
    let limit: usize = std::env::var("BENCH_MAX_BODY_BYTES").map_or(
        aco_core::config::Config::default().serving.max_body_bytes,
        |v| v.parse().expect("BENCH_MAX_BODY_BYTES: bytes"),
    );
    let table = QUOTED.table();
    for n in sizes {
        // Built before the Worker starts, so that its start-up figures are not the build's.
        let body = json!({"Pod": fixtures::bench_pod(), "Nodes": {"metadata": {}, "items": fixtures::real_shaped_nodes(n)}, "NodeNames": null}).to_string();
        let api = FactsApi::start(options());
        api.put_ok(&json!({"nodes": [{"name": "probe-node"}]}))
            .await;
        rows(
            &table,
            &api,
            &format!("full objects, {n} nodes"),
            body,
            limit,
        )
        .await;
    }
    let api = FactsApi::start(options());
    let t = now_ms();
    api.put_ok(&json!({"nodes": (0..10_000).map(|i| report(i, t, 0.5)).collect::<Vec<_>>()}))
        .await;
    api.put_ok(&json!({"nodes": [{"name": "probe-node"}]}))
        .await;
    let names: Vec<String> = (0..10_000).step_by(2).map(node_name).collect();
    let body = json!({"Pod": pod("probe"), "NodeNames": names}).to_string();
    rows(
        &table,
        &api,
        "names, 5,000 of 10,000 reported nodes",
        body,
        limit,
    )
    .await;
}
