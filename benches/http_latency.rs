//! Median and p99 latency of /v1/filter and /v1/prioritize through the real Worker on
//! Miniflare (loopback), for 6, 100 and 1,000 real-shaped nodes, beside a trivial echo route of
//! the same Worker receiving the same body (the floor: runtime + HTTP + body transfer).
//! Requests are sequential, as kube-scheduler sends them (one pod at a time).
//!
//! Run: `bash scripts/build-worker && cargo bench --bench http_latency` (ITERATIONS=… to change
//! the sample count). Prints a Markdown table.

#[path = "../tests/support/mod.rs"]
mod support;
#[path = "../crates/core/benches/fixtures.rs"]
mod fixtures;

use std::time::{Duration, Instant};

use support::{StartOptions, WorkerProcess};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `cargo bench` passes --bench; any other argument is a filter we do not support.
    let iterations: usize = std::env::var("ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let worker = WorkerProcess::start(StartOptions::default());
    let client = reqwest::Client::new();
    println!("| nodes | route | median ms | p99 ms | ratio to echo (median) |");
    println!("|---:|---|---:|---:|---:|");
    for n in [6usize, 100, 1_000] {
        let body = fixtures::extender_args(n);
        let mut echo_median = Duration::ZERO;
        for route in ["/v1/echo", "/v1/filter", "/v1/prioritize"] {
            let url = worker.url(route);
            let send = || client.post(&url).header("content-type", "application/json").body(body.clone()).send();
            for _ in 0..10 {
                let r = send().await.expect("warm-up request");
                assert_eq!(r.status(), 200, "{route}");
                r.bytes().await.unwrap();
            }
            let mut samples = Vec::with_capacity(iterations);
            for _ in 0..iterations {
                let started = Instant::now();
                let r = send().await.expect("request");
                let status = r.status();
                r.bytes().await.unwrap();
                samples.push(started.elapsed());
                assert_eq!(status, 200, "{route}");
            }
            samples.sort();
            let median = percentile(&samples, 0.5);
            if route == "/v1/echo" {
                echo_median = median;
            }
            let ratio = median.as_secs_f64() / echo_median.as_secs_f64();
            println!("| {n} | {route} | {} | {} | {ratio:.2} |", ms(median), ms(percentile(&samples, 0.99)));
        }
    }
}
