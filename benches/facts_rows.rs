//! SQLite rows the Facts object writes per node report, through the built Worker on Miniflare:
//! N nodes reported every 15 s (observation times advanced 15 s per report, as aco-reporter
//! does) with realistic noise — each node's utilisation is its own level plus ±5 percentage
//! points of noise per sample, and 2% of the nodes change `requested` per report (pods starting
//! and finishing); `rowsWritten` of each PUT reply (the sum of the object's
//! `cursor.rowsWritten`). Wall-clock times are the client's (they include the Worker and
//! loopback), so they bound the object's active time from above.
//!
//! Run: `bash scripts/build-worker && cargo bench --bench facts_rows` (BENCH_NODES=100 for a
//! short run; node counts, comma-separated). Prints the figures of docs/cost.md "Node facts"
//! beside the ones just measured.

use aco_core::api::nodes::NodeReport;
use aco_testkit::facts_api::{gpu_type, node_name, report_of, FactsApi};
use aco_testkit::quoted::Quotes;
use aco_testkit::{now_ms, StartOptions};
use rand::{Rng, SeedableRng};
use serde_json::json;

/// Reports per node count after the first (the first writes every shard).
const REPORTS: u64 = 20;

/// The figures docs/cost.md quotes (its "Counted." table).
static QUOTED: Quotes = Quotes {
    source: "docs/cost.md \"Node facts\" (Counted.)",
    conditions: "2026-12-01, the 2-core VM, Miniflare",
    figures: &[
        (
            "100 nodes: rows written per report (mean of 20 after the first)",
            "14.0",
        ),
        ("100 nodes: PUT ms", "18"),
        ("100 nodes: snapshot fetch (full) ms", "13"),
        (
            "1000 nodes: rows written per report (mean of 20 after the first)",
            "16.0",
        ),
        ("1000 nodes: PUT ms", "71"),
        ("1000 nodes: snapshot fetch (full) ms", "40"),
        (
            "5000 nodes: rows written per report (mean of 20 after the first)",
            "16.0",
        ),
        ("5000 nodes: PUT ms", "337"),
        ("5000 nodes: snapshot fetch (full) ms", "145"),
    ],
};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let sizes: Vec<usize> =
        std::env::var("BENCH_NODES")
            .ok()
            .map_or(vec![100, 1_000, 5_000], |v| {
                v.split(',')
                    .map(|n| n.trim().parse().expect("BENCH_NODES: node counts"))
                    .collect()
            });
    let table = QUOTED.table();
    for n in sizes {
        let api = FactsApi::start(StartOptions::default());
        let mut rng = rand::rngs::SmallRng::seed_from_u64(n as u64);
        let start = now_ms() - REPORTS * 15_000;
        let mut cpu: Vec<u32> = (0..n).map(|i| 1000 + (i as u32 % 17) * 500).collect();
        let (mut rows, mut put_ms) = (Vec::new(), Vec::new());
        for k in 0..=REPORTS {
            let at = start + k * 15_000;
            let nodes: Vec<NodeReport> = (0..n)
                .map(|i| {
                    if k > 0 && rng.random_bool(0.02) {
                        cpu[i] = (cpu[i] as i64 + rng.random_range(-2i64..=2) * 500)
                            .clamp(0, 60_000) as u32;
                    }
                    let level = 0.2 + (i % 60) as f64 / 100.0;
                    report_of(
                        i,
                        at,
                        (level + rng.random_range(-0.05..0.05)).clamp(0.0, 1.0),
                        gpu_type(i),
                        cpu[i] as usize,
                    )
                })
                .collect();
            let started = std::time::Instant::now();
            let reply = api.put_ok(&json!({ "nodes": nodes })).await;
            put_ms.push(started.elapsed().as_secs_f64() * 1e3);
            rows.push(reply.rows_written);
        }
        // The hot path's snapshot fetch right after a report (every shard changed): an upper
        // bound of the Facts object's time per fetch.
        let names: Vec<String> = (0..n).map(node_name).collect();
        let started = std::time::Instant::now();
        let (_, ops) = api.filter(&names).await;
        let filter_ms = started.elapsed().as_secs_f64() * 1e3;
        assert_eq!(ops, 1);
        let steady = &rows[1..];
        let mean = steady.iter().sum::<u64>() as f64 / steady.len() as f64;
        let put_mean = put_ms[1..].iter().sum::<f64>() / (put_ms.len() - 1) as f64;
        table.row(
            &format!("{n} nodes: rows written per report (mean of 20 after the first)"),
            format!("{mean:.1}"),
        );
        table.row(&format!("{n} nodes: rows of the first report"), rows[0]);
        table.row(&format!("{n} nodes: PUT ms"), format!("{put_mean:.0}"));
        table.row(
            &format!("{n} nodes: snapshot fetch (full) ms"),
            format!("{filter_ms:.0}"),
        );
    }
}
