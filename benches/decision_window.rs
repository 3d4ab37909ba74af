//! The window of decisions a `kill -9` loses, through the built Worker on Miniflare: decisions
//! scored from the isolate's colony copy and killed with workerd before the colony committed them
//! — or before their `DECISION_FLUSH_MS` send — are lost (their placements are held for a decision
//! that never comes, then count as unknown, never twice). PODS pods (300 by default) are scored
//! 20 at a time, workerd is killed at once and restarted on the same state, and every placement
//! is sent.
//!
//! Run: `bash scripts/build-worker && cargo bench --bench decision_window` (PODS=… to change the
//! count). Prints the figure of docs/cost.md "Colony rows per pod, measured" (the decision
//! window's price) beside the one just measured.

use aco_testkit::api::{Api, WorkerHttp};
use aco_testkit::colony_load::{placement, prioritize, put_nodes};
use aco_testkit::quoted::Quotes;
use aco_testkit::StartOptions;
use futures::future::join_all;
use serde_json::{json, Value};

/// The figures docs/cost.md quotes (`a kill -9 right after 300 answers, given 20 at a time,
/// lost 40`).
static QUOTED: Quotes = Quotes {
    source: "docs/cost.md \"Colony rows per pod, measured\" (the decision window's price)",
    conditions: "2026-12-05, the 2-core VM idle, load ≈ 1.3, DECISION_FLUSH_MS = 100",
    figures: &[
        ("300 answers, kill -9: deposited", "260"),
        ("300 answers, kill -9: lost (held, then unknown)", "40"),
    ],
};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let pods: usize = std::env::var("PODS")
        .ok()
        .map_or(300, |v| v.parse().expect("PODS is a count"));
    let mut api = Api::start(StartOptions::default());
    put_nodes(&api).await;
    for chunk in (0..pods).collect::<Vec<_>>().chunks(20) {
        join_all(chunk.iter().map(|i| prioritize(&api, "window", *i))).await;
    }
    api.worker.crash_and_restart();
    let placements: Vec<Value> = (0..pods).map(|i| placement("window", i)).collect();
    let s = api.place_summary(json!(placements)).await;
    assert_eq!(s.deposited + s.held + s.unknown_pod, pods as u64, "{s:?}");
    let table = QUOTED.table();
    table.row(&format!("{pods} answers, kill -9: deposited"), s.deposited);
    table.row(
        &format!("{pods} answers, kill -9: lost (held, then unknown)"),
        s.held + s.unknown_pod,
    );
}
