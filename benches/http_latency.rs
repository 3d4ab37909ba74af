//! Median and p99 latency of /v1/filter and /v1/prioritize through the real Worker on
//! Miniflare (loopback), for 6, 100 and 1,000 real-shaped nodes, in full-node mode and in names
//! mode (facts pushed first with `PUT /v1/nodes`), beside a trivial echo route of the same
//! Worker receiving the same body (the floor: runtime + HTTP + body transfer). Requests are
//! sequential, as kube-scheduler sends them (one pod at a time); every prioritize is a new pod.
//!
//! Run: `bash scripts/build-worker && cargo bench --bench http_latency` (ITERATIONS=… to change
//! the sample count, WARMUP=… the warm-up requests per route, BENCH_CASES=names:1000,names:5000
//! to choose the cases (`full` or `names`, node count), BENCH_VARS='{"K":"v"}' to override
//! [vars]). Prints a Markdown table; its last column is the Worker's own mean time per request
//! (its request-duration histogram read from `/metrics` before and after the samples).
//!
//! `SEED_URL=http://127.0.0.1:PORT` also times the seed extender (the FastAPI service the
//! project grew from, started by hand: docs/benchmarks.md says how) after each case, on the same
//! pod and nodes shaped for its request model (`fixtures::seed_extender_args`), and prints a
//! second table: its medians beside ours and how many times faster ours is.

use aco_testkit::fixtures;

use std::time::{Duration, Instant};

use aco_testkit::{StartOptions, WorkerProcess, ADMIN_TOKEN, METRICS_TOKEN};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The Worker's own time answering `verb` so far (sum in seconds, count), from its
/// `aco_request_duration_seconds` histogram (workerd's clock advances in local runs, at 1 ms
/// resolution): from body read to response built, without the transfer.
async fn worker_seconds(
    client: &reqwest::Client,
    worker: &WorkerProcess,
    verb: &str,
) -> (f64, f64) {
    let text = client
        .get(worker.url("/metrics"))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .unwrap_or_default();
    let read = |what: &str| {
        let prefix = format!("aco_request_duration_seconds_{what}{{verb=\"{verb}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (read("sum"), read("count"))
}

/// Sorted latencies of `iterations` sequential POSTs of `body` to `url`, after `warmup` more.
async fn post_samples(
    client: &reqwest::Client,
    url: &str,
    body: &str,
    warmup: usize,
    iterations: usize,
) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..warmup + iterations {
        let started = Instant::now();
        let r = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("request");
        let status = r.status();
        r.bytes().await.unwrap();
        assert_eq!(status, 200, "{url}");
        if i >= warmup {
            samples.push(started.elapsed());
        }
    }
    samples.sort();
    samples
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `cargo bench` passes --bench; any other argument is a filter we do not support.
    let iterations: usize = std::env::var("ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let warmup: usize = std::env::var("WARMUP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let cases: Vec<(String, usize)> = match std::env::var("BENCH_CASES") {
        Ok(list) => list
            .split(',')
            .map(|case| {
                let (mode, n) = case
                    .trim()
                    .split_once(':')
                    .expect("BENCH_CASES items are mode:nodes");
                assert!(mode == "full" || mode == "names", "mode {mode:?}");
                (mode.to_string(), n.parse().expect("node count"))
            })
            .collect(),
        Err(_) => [
            ("full", 6usize),
            ("full", 100),
            ("full", 1_000),
            ("names", 100),
            ("names", 1_000),
        ]
        .map(|(m, n)| (m.to_string(), n))
        .to_vec(),
    };
    // BENCH_VARS='{"COLONY_SNAPSHOT_MS":"0"}': the same run with other [vars] (e.g. the
    // synchronous prioritize path, for comparison).
    let mut options = StartOptions::default();
    if let Ok(vars) = std::env::var("BENCH_VARS") {
        let vars: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&vars).expect("BENCH_VARS is a JSON object");
        options.vars.extend(vars);
    }
    let worker = WorkerProcess::start(options);
    let client = reqwest::Client::new();
    println!("| mode | nodes | route | median ms | p99 ms | ratio to echo (median) | ratio to filter (median) | Worker's own mean ms |");
    println!("|---|---:|---|---:|---:|---:|---:|---:|");
    let seed_url = std::env::var("SEED_URL").ok();
    // (mode, nodes, verb, our median, the seed's median and p99)
    let mut beside_seed = Vec::new();
    let mut pod_serial = 0u64;
    for (mode, n) in cases {
        let mode = mode.as_str();
        let body = if mode == "names" {
            let put = client
                .put(worker.url("/v1/nodes"))
                .bearer_auth(ADMIN_TOKEN)
                .body(fixtures::node_facts_report(n))
                .send()
                .await
                .expect("PUT /v1/nodes");
            assert_eq!(
                put.status(),
                200,
                "{}",
                put.text().await.unwrap_or_default()
            );
            fixtures::extender_args_names(n)
        } else {
            fixtures::extender_args(n)
        };
        let (mut echo_median, mut filter_median) = (Duration::ZERO, Duration::ZERO);
        for route in ["/v1/echo", "/v1/filter", "/v1/prioritize"] {
            let url = worker.url(route);
            // A new pod UID per request, so that each prioritize is a new decision.
            let mut send = || {
                pod_serial += 1;
                let b = body.replacen("\"bench-uid\"", &format!("\"bench-uid-{pod_serial}\""), 1);
                client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(b)
                    .send()
            };
            for _ in 0..warmup {
                let r = send().await.expect("warm-up request");
                assert_eq!(r.status(), 200, "{route}");
                r.bytes().await.unwrap();
            }
            let verb = route.trim_start_matches("/v1/");
            let (sum_before, count_before) = worker_seconds(&client, &worker, verb).await;
            let mut samples = Vec::with_capacity(iterations);
            for _ in 0..iterations {
                let started = Instant::now();
                let r = send().await.expect("request");
                let status = r.status();
                r.bytes().await.unwrap();
                samples.push(started.elapsed());
                assert_eq!(status, 200, "{route}");
            }
            let (sum_after, count_after) = worker_seconds(&client, &worker, verb).await;
            let own_ms = (sum_after - sum_before) * 1000.0 / (count_after - count_before).max(1.0);
            samples.sort();
            let median = percentile(&samples, 0.5);
            match route {
                "/v1/echo" => echo_median = median,
                "/v1/filter" => filter_median = median,
                _ => {}
            }
            let ratio = median.as_secs_f64() / echo_median.as_secs_f64();
            let to_filter = if route == "/v1/prioritize" {
                format!("{:.2}", median.as_secs_f64() / filter_median.as_secs_f64())
            } else {
                "".into()
            };
            println!(
                "| {mode} | {n} | {route} | {} | {} | {ratio:.2} | {to_filter} | {own_ms:.2} |",
                ms(median),
                ms(percentile(&samples, 0.99))
            );
            if let (Some(seed), "/v1/filter" | "/v1/prioritize") = (&seed_url, route) {
                let seed_body = fixtures::seed_extender_args(n);
                let seed_route = route.trim_start_matches("/v1");
                let url = format!("{}{seed_route}", seed.trim_end_matches('/'));
                let theirs = post_samples(&client, &url, &seed_body, warmup, iterations).await;
                beside_seed.push((
                    mode.to_string(),
                    n,
                    seed_route,
                    median,
                    percentile(&theirs, 0.5),
                    percentile(&theirs, 0.99),
                ));
            }
        }
    }
    if !beside_seed.is_empty() {
        println!();
        println!("| ours: mode | nodes | verb | ours median ms | seed median ms | seed p99 ms | seed / ours (median) |");
        println!("|---|---:|---|---:|---:|---:|---:|");
        for (mode, n, verb, ours, theirs, theirs_p99) in beside_seed {
            println!(
                "| {mode} | {n} | {verb} | {} | {} | {} | {:.1} |",
                ms(ours),
                ms(theirs),
                ms(theirs_p99),
                theirs.as_secs_f64() / ours.as_secs_f64()
            );
        }
    }
}
