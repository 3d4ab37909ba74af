//! The storage per remembered decision through the built Worker on Miniflare: what an
//! unauthenticated caller (`EXTENDER_AUTH=none`) can make one tenant store. With
//! `MAX_DECISIONS_PER_TENANT=1000`, one decision, then 999 more, then 1,000 beyond the cap, each
//! scored over 64 nodes (without a filter call); after each step the Worker is stopped and the
//! colonies' SQLite files on disk are measured (then it restarts on them). Once with OpenB node
//! names, once with 253-character names. The cap itself is asserted by `tests/colony_state.rs`
//! (`remembered_decisions_are_capped_per_tenant_oldest_first`).
//!
//! Run: `bash scripts/build-worker && cargo bench --bench decision_storage`. Prints the figures
//! of docs/explanations.md beside the ones just measured.

use aco_testkit::api::{Api, WorkerHttp};
use aco_testkit::colony_load::flood;
use aco_testkit::openb::{long_named_nodes, openb_nodes};
use aco_testkit::quoted::Quotes;
use aco_testkit::state::colony_sqlite_files;
use aco_testkit::StartOptions;
use serde_json::Value;

/// The figures docs/explanations.md quotes ("On Miniflare … a remembered decision costs").
static QUOTED: Quotes = Quotes {
    source: "docs/explanations.md \"a remembered decision costs\"",
    conditions: "2026-12-06, Miniflare, SQLite on disk, pods scored without a filter call",
    figures: &[
        ("OpenB names: bytes per decision", "4.2 KB"),
        ("253-char names: bytes per decision", "26.8 KB"),
    ],
};

/// [`flood`], then the on-disk size of the colonies' databases (stopping and restarting the
/// Worker: counter increments of the last second may be lost, see colony_do.rs).
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

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let table = QUOTED.table();
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
        let colony = api.pheromone_table("measure").await;
        table.row(&format!("{label}: bytes per decision"), {
            let bytes = (full - empty) as f64 / 999.0;
            format!("{bytes:.0} B ≈ {:.1} KB", bytes / 1000.0)
        });
        table.row(&format!("{label}: 1 decision, B"), empty);
        table.row(&format!("{label}: 1,000 decisions, B"), full);
        table.row(&format!("{label}: 1,000 more beyond the cap, B"), more);
        table.row(
            &format!("{label}: pending / evicted"),
            format!(
                "{} / {}",
                colony.pending_decisions, colony.counters.evicted_decisions
            ),
        );
    }
}
