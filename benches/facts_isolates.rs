//! How many busy isolates one Facts object serves, through the built Worker on Miniflare. A busy
//! isolate refreshes its copy every `FACTS_CACHE_MS` (5 s), so per 15 s report it makes one fetch
//! of every changed shard (all 16 at 5,000 nodes with realistic noise) and two empty ones.
//! Measured through the Worker (its own parse included, so an upper bound of the object's time):
//! a one-candidate filter with `FACTS_CACHE_MS=0` right after a report changing every shard, and
//! again with nothing changed. One object serves 15 s / (full + 2 × empty + its share of the PUT)
//! isolates.
//!
//! Run: `bash scripts/build-worker && cargo bench --bench facts_isolates` (BENCH_NODES=500
//! ROUNDS=2 for a short run). Prints the figures of docs/cost.md "How many busy isolates one
//! Facts object serves" beside the ones just measured.

use aco_core::api::nodes::NodeReport;
use aco_testkit::facts_api::{node_name, report, FactsApi, SHARDS};
use aco_testkit::quoted::Quotes;
use aco_testkit::{now_ms, StartOptions};
use serde_json::json;

/// The figures docs/cost.md quotes.
static QUOTED: Quotes = Quotes {
    source: "docs/cost.md \"How many busy isolates one Facts object serves\"",
    conditions: "2026-12-01, 5,000 nodes, 8 reports, the 2-core VM at load average ≈ 19",
    figures: &[
        ("5000 nodes: full-delta fetch ms", "319.7"),
        ("5000 nodes: empty fetch ms", "12.9"),
        ("5000 nodes: PUT ms", "1,472"),
        ("5000 nodes: busy isolates one object serves", "39"),
    ],
};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map_or(default, |v| v.parse().expect("a count"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n = env_or("BENCH_NODES", 5_000) as usize;
    let rounds = env_or("ROUNDS", 8);
    let api = FactsApi::start(StartOptions::default().var("FACTS_CACHE_MS", "0"));
    let start = now_ms() - rounds * 15_000;
    let one = vec![node_name(0)];
    let (mut full, mut empty, mut put) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..=rounds {
        let at = start + k * 15_000;
        // Every node's utilisation moves beyond the deadband: every shard is rewritten.
        let u = if k % 2 == 0 { 0.2 } else { 0.6 };
        let nodes: Vec<NodeReport> = (0..n).map(|i| report(i, at, u)).collect();
        let t = std::time::Instant::now();
        let reply = api.put_ok(&json!({ "nodes": nodes })).await;
        put.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(reply.rows_written, SHARDS, "{reply:?}");
        let t = std::time::Instant::now();
        api.filter(&one).await;
        full.push(t.elapsed().as_secs_f64() * 1e3);
        for _ in 0..2 {
            let t = std::time::Instant::now();
            api.filter(&one).await;
            empty.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    // The first round warms the isolate: left out.
    let mean = |v: &[f64]| v[1..].iter().sum::<f64>() / (v.len() - 1) as f64;
    let (full, empty, put) = (mean(&full), mean(&empty), mean(&put));
    let per_isolate = full + 2.0 * empty;
    let table = QUOTED.table();
    table.row(
        &format!("{n} nodes: full-delta fetch ms"),
        format!("{full:.1}"),
    );
    table.row(&format!("{n} nodes: empty fetch ms"), format!("{empty:.1}"));
    table.row(&format!("{n} nodes: PUT ms"), format!("{put:.0}"));
    table.row(
        &format!("{n} nodes: busy isolates one object serves"),
        format!(
            "(15000 − {put:.0}) / {per_isolate:.1} = {:.0}",
            (15_000.0 - put) / per_isolate
        ),
    );
}
