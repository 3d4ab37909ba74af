//! Colony rows per pod through the built Worker on Miniflare: a fresh Worker per case, the four
//! priced nodes of `aco_testkit::colony_load`, pods scored in names mode spread over each second
//! (10 at a time), each pod's placement reported a second later in one batch per second. The
//! figure is the colonies' own count (`aco_colony_rows_written_total`: every commit's
//! `rowsWritten`, the alarms' commits and every `setAlarm` included), read once every colony
//! reports nothing uncommitted (the last backstop alarm has fired).
//!
//! Run: `bash scripts/build-worker && cargo bench --bench colony_rows` (BENCH_CASES=1:10:5 for a
//! short run: tenants:pods per second:seconds, comma-separated). Prints the figures of
//! docs/cost.md "Colony rows per pod, measured" beside the ones just measured.

use aco_testkit::api::{Api, WorkerHttp};
use aco_testkit::colony_load::{drive, put_nodes};
use aco_testkit::quoted::Quotes;
use aco_testkit::StartOptions;

/// The figures docs/cost.md quotes (its table, one row per case).
static QUOTED: Quotes = Quotes {
    source: "docs/cost.md \"Colony rows per pod, measured\"",
    conditions: "2026-12-05, the 2-core VM idle, load ≈ 1.3",
    figures: &[
        ("1 tenant, 10 pods/s, 30 s: achieved pods/s", "10.0"),
        ("1 tenant, 10 pods/s, 30 s: Colony rows", "61"),
        ("1 tenant, 10 pods/s, 30 s: rows per pod", "0.203"),
        (
            "1 tenant, 10 pods/s, 30 s: rows per tenant per second",
            "2.0",
        ),
        ("1 tenant, 10 pods/s, 30 s: DO requests per pod", "0.64"),
        ("10 tenants, 10 pods/s, 30 s: achieved pods/s", "10.0"),
        ("10 tenants, 10 pods/s, 30 s: Colony rows", "478"),
        ("10 tenants, 10 pods/s, 30 s: rows per pod", "1.59"),
        (
            "10 tenants, 10 pods/s, 30 s: rows per tenant per second",
            "1.6",
        ),
        ("10 tenants, 10 pods/s, 30 s: DO requests per pod", "2.04"),
        ("1 tenant, 100 pods/s, 20 s: achieved pods/s", "100.0"),
        ("1 tenant, 100 pods/s, 20 s: Colony rows", "53"),
        ("1 tenant, 100 pods/s, 20 s: rows per pod", "0.026"),
        (
            "1 tenant, 100 pods/s, 20 s: rows per tenant per second",
            "2.7",
        ),
        ("1 tenant, 100 pods/s, 20 s: DO requests per pod", "0.07"),
        ("10 tenants, 100 pods/s, 20 s: achieved pods/s", "99.9"),
        ("10 tenants, 100 pods/s, 20 s: Colony rows", "410"),
        ("10 tenants, 100 pods/s, 20 s: rows per pod", "0.205"),
        (
            "10 tenants, 100 pods/s, 20 s: rows per tenant per second",
            "2.1",
        ),
        ("10 tenants, 100 pods/s, 20 s: DO requests per pod", "0.63"),
    ],
};

/// (tenants, pods per second, seconds) from BENCH_CASES, else the four cases docs/cost.md quotes.
fn cases() -> Vec<(usize, usize, usize)> {
    match std::env::var("BENCH_CASES") {
        Ok(list) => list
            .split(',')
            .map(|case| {
                let v: Vec<usize> = case
                    .trim()
                    .split(':')
                    .map(|n| {
                        n.parse()
                            .expect("BENCH_CASES items are tenants:rate:seconds")
                    })
                    .collect();
                assert_eq!(v.len(), 3, "BENCH_CASES items are tenants:rate:seconds");
                (v[0], v[1], v[2])
            })
            .collect(),
        Err(_) => vec![(1, 10, 30), (10, 10, 30), (1, 100, 20), (10, 100, 20)],
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let table = QUOTED.table();
    for (tenants, rate, seconds) in cases() {
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
        let case = format!(
            "{tenants} tenant{}, {rate} pods/s, {seconds} s",
            if tenants == 1 { "" } else { "s" }
        );
        table.row(
            &format!("{case}: achieved pods/s"),
            format!("{:.1}", pods as f64 / wall),
        );
        table.row(&format!("{case}: Colony rows"), rows);
        table.row(
            &format!("{case}: Colony rows in replies (alarms left out)"),
            replied_rows,
        );
        table.row(
            &format!("{case}: rows per pod"),
            format!("{:.3}", rows as f64 / pods as f64),
        );
        table.row(
            &format!("{case}: rows per tenant per second"),
            format!("{:.1}", rows as f64 / (tenants * seconds) as f64),
        );
        // All objects' requests, the bench's own admin reads included (as in the quote).
        table.row(
            &format!("{case}: DO requests per pod"),
            format!("{:.2}", do_requests / pods as f64),
        );
    }
}
