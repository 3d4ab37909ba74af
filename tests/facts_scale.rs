//! Node facts at cluster scale, on the built Worker in Miniflare (the real Facts Durable Object,
//! SQLite persisted to disk): a 10,000-node report in one request, the hot path over 5,000
//! candidates within a few binding operations, the deadband, restarts, bad batches, deletions.
//!
//! With `--features measure` also the measurements of docs/benchmarks.md and docs/cost.md
//! (`cargo test --features measure --test facts_scale measure -- --nocapture --test-threads 1`).

use aco_core::api::error::ErrorBody;
use aco_core::api::nodes::{NodeReport, NodesReply};
use aco_core::facts::NodeFacts;
use aco_testkit::extender::{FilterResult, HostPriority};
use aco_testkit::fixtures;
use aco_testkit::nodes::name_of;
use aco_testkit::{now_ms, StartOptions, WorkerProcess, ADMIN_TOKEN};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// Shards of the Facts object (`aco_core::facts_shards::SHARDS`).
const SHARDS: u64 = 16;

fn node_name(i: usize) -> String {
    format!("bench-node-{i:05}")
}

/// A node report as aco-reporter sends it: the labels the Worker reads, allocatable, requested,
/// latency, one utilisation sample, per-GPU free shares.
fn report(i: usize, at_ms: u64, utilisation: f64) -> NodeReport {
    report_of(i, at_ms, utilisation, gpu_type(i), cpu_milli(i))
}

fn gpu_type(i: usize) -> &'static str {
    ["A10", "T4", "V100"][i % 3]
}

fn cpu_milli(i: usize) -> usize {
    1000 + (i % 17) * 500
}

/// [`report`] of a node with this GPU type and these milli-CPUs requested.
fn report_of(
    i: usize,
    at_ms: u64,
    utilisation: f64,
    gpu_type: &str,
    cpu_milli: usize,
) -> NodeReport {
    serde_json::from_value(json!({
        "name": node_name(i),
        "labels": {"aco/gpu-type": gpu_type, "aco/latency-us": format!("{}", 40 + (i % 7) * 30),
                   "aco/cost-per-hour": format!("{:.2}", 0.4 + (i % 13) as f64 * 0.25), "aco/instance-type": if i.is_multiple_of(5) { "spot" } else { "on-demand" }},
        "allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"},
        "requested": {"cpu": format!("{cpu_milli}m"), "memory": "48Gi", "nvidia.com/gpu": format!("{}", i % 4)},
        "latencyUs": 40 + (i % 7) * 30,
        "observedAtMs": at_ms,
        "utilisation": [{"atMs": at_ms, "value": utilisation}],
        "gpuFreeMilli": [1000, 1000, 500, 0, 0, 1000, 250, 1000],
    }))
    .expect("a node report")
}

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "scale", "uid": format!("uid-{name}")},
           "spec": {"containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}})
}

struct Api {
    worker: WorkerProcess,
    http: reqwest::Client,
}

/// A reply: status, body, and the `x-aco-binding-ops` the invocation had spent.
struct Reply {
    status: StatusCode,
    body: String,
    ops: u32,
    /// `x-aco-wasm-memory-bytes` (only the facts routes send it), read by the measurements.
    #[cfg_attr(not(feature = "measure"), allow(dead_code))]
    wasm_memory: Option<u64>,
}

impl Api {
    fn start(options: StartOptions) -> Self {
        Self {
            worker: WorkerProcess::start(options),
            // A connection per request: building tens of MB of nodes between two requests can
            // outlast workerd's keep-alive, and a pooled connection closed under an upload fails.
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .unwrap(),
        }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let r = req.send().await.unwrap();
        let header = |name: &str| {
            r.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
        };
        let ops = header("x-aco-binding-ops")
            .unwrap_or_else(|| panic!("no x-aco-binding-ops header")) as u32;
        let wasm_memory = header("x-aco-wasm-memory-bytes");
        let status = r.status();
        let body = r.text().await.unwrap();
        Reply {
            status,
            body,
            ops,
            wasm_memory,
        }
    }

    async fn put(&self, batch: &Value) -> Reply {
        self.send(
            self.http
                .put(self.worker.url("/v1/nodes"))
                .bearer_auth(ADMIN_TOKEN)
                .json(batch),
        )
        .await
    }

    async fn put_ok(&self, batch: &Value) -> NodesReply {
        let r = self.put(batch).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.ops, 1, "one Durable Object request per batch");
        r.json()
    }

    async fn verb(&self, path: &str, body: String) -> Reply {
        self.send(
            self.http
                .post(self.worker.url(path))
                .header("content-type", "application/json")
                .body(body),
        )
        .await
    }

    /// This isolate's wasm memory, from a facts route's `x-aco-wasm-memory-bytes`.
    #[cfg(feature = "measure")]
    async fn memory(&self) -> u64 {
        let r = self
            .send(
                self.http
                    .get(self.worker.url("/v1/nodes/probe-node"))
                    .bearer_auth(ADMIN_TOKEN),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.wasm_memory.expect("x-aco-wasm-memory-bytes")
    }

    async fn node(&self, name: &str) -> Option<NodeFacts> {
        let r = self
            .send(
                self.http
                    .get(self.worker.url(&format!("/v1/nodes/{name}")))
                    .bearer_auth(ADMIN_TOKEN),
            )
            .await;
        match r.status.as_u16() {
            200 => Some(r.json()),
            404 => None,
            s => panic!("GET /v1/nodes/{name}: {s} {}", r.body),
        }
    }

    /// Names-mode filter of a small pod: the reply and the binding operations it spent.
    async fn filter(&self, names: &[String]) -> (FilterResult, u32) {
        let r = self
            .verb(
                "/v1/filter",
                json!({"Pod": pod("probe"), "NodeNames": names}).to_string(),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        (r.json(), r.ops)
    }
}

impl Reply {
    /// The body read as `T` (failing with the body if it is not one).
    fn json<T: DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// A refusal's status and the field its error body names.
    fn refusal(&self) -> (u16, Option<String>) {
        let body = ErrorBody::parse(&self.body)
            .unwrap_or_else(|| panic!("not an error body: {}", self.body));
        (self.status.as_u16(), body.field)
    }
}

#[tokio::test]
async fn a_report_of_10000_nodes_is_one_request_and_5000_candidates_cost_one_operation() {
    let api = Api::start(StartOptions::default());
    let t = now_ms();
    let batch = json!({"nodes": (0..10_000).map(|i| report(i, t, 0.3 + (i % 50) as f64 / 100.0)).collect::<Vec<_>>()});
    let first = api.put_ok(&batch).await;
    assert_eq!((first.stored, first.nodes), (10_000, 10_000), "{first:?}");
    assert_eq!(
        first.rows_written, SHARDS,
        "every shard row written once: {first:?}"
    );

    // The hot path over 5,000 of them: one request for the cluster's snapshot (this isolate's
    // copy was marked stale by the PUT), then the rules; prioritize adds the colony's request.
    let names: Vec<String> = (0..10_000).step_by(2).map(node_name).collect();
    let (filtered, ops) = api.filter(&names).await;
    assert_eq!(
        filtered.passed().len(),
        5_000,
        "{:?}",
        filtered.failed_nodes
    );
    assert_eq!(ops, 1);
    let scored = api
        .verb(
            "/v1/prioritize",
            json!({"Pod": pod("scored"), "NodeNames": names}).to_string(),
        )
        .await;
    assert_eq!(scored.status, 200, "{}", scored.body);
    assert_eq!(scored.json::<Vec<HostPriority>>().len(), 5_000);
    // 1 (colony) if this isolate's copy is still fresh, 2 if FACTS_CACHE_MS passed meanwhile.
    assert!((1..=2).contains(&scored.ops), "{}", scored.ops);

    // Deadband: the same report again folds no sample twice and writes no row.
    let again = api.put_ok(&batch).await;
    assert_eq!((again.stored, again.rows_written), (10_000, 0), "{again:?}");
    // A material change of one node rewrites its shard only, and readers see it.
    let moved = report_of(7, t, 0.37, "H100", cpu_milli(7));
    let one = api.put_ok(&json!({"nodes": [moved]})).await;
    assert_eq!(one.rows_written, 1, "{one:?}");
    assert_eq!(
        api.node(&node_name(7)).await.unwrap().labels["aco/gpu-type"],
        "H100"
    );
    let gpu = json!({"Pod": {"metadata": {"name": "g", "namespace": "scale", "annotations": {"scheduling.aco/gpu-models": "H100"}},
                             "spec": {"containers": [{"name": "m", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}},
                     "NodeNames": [node_name(6), node_name(7)]});
    let reply = api.verb("/v1/filter", gpu.to_string()).await;
    assert_eq!(
        (reply.json::<FilterResult>().passed(), reply.ops),
        (vec![node_name(7)], 1),
        "{}",
        reply.body
    );
}

#[tokio::test]
async fn facts_survive_a_restart_a_bad_batch_changes_nothing_and_deleted_nodes_are_forgotten() {
    let state = tempfile::tempdir().unwrap();
    let mut api = Api::start(StartOptions {
        persist_dir: Some(state.path().to_path_buf()),
        ..Default::default()
    });
    let t = now_ms() - 60_000;
    let all: Vec<String> = (0..300).map(node_name).collect();
    api.put_ok(&json!({"nodes": (0..300).map(|i| report(i, t, 0.5)).collect::<Vec<_>>()}))
        .await;
    let before = api.node(&node_name(150)).await.unwrap();

    // One bad report (index 150) or one bad deleted name: the whole batch is refused.
    // (A utilisation of 1.5 is out of [0, 1].)
    let bad: Vec<NodeReport> = (0..300)
        .map(|i| report(i, t + 1_000, if i == 150 { 1.5 } else { 0.9 }))
        .collect();
    let r = api
        .put(&json!({"nodes": bad, "deleted": [node_name(1)]}))
        .await;
    assert_eq!(
        r.refusal(),
        (400, Some("nodes[150].utilisation[0].value".into())),
        "{}",
        r.body
    );
    let r = api
        .put(&json!({"nodes": [report(3, t + 1_000, 0.9)], "deleted": [node_name(1), "Bad_Name"]}))
        .await;
    assert_eq!(r.refusal(), (400, Some("deleted[1]".into())), "{}", r.body);
    assert_eq!(api.node(&node_name(150)).await.unwrap(), before);
    assert_eq!(samples(&api.node(&node_name(3)).await.unwrap()), 1);
    assert!(api.node(&node_name(1)).await.is_some());

    // 100 nodes leave the cluster.
    let gone: Vec<String> = (0..100).map(node_name).collect();
    let r = api.put_ok(&json!({"deleted": gone})).await;
    assert_eq!((r.forgotten, r.nodes), (100, 200), "{r:?}");
    // A change within the deadband (EMA 0.5 → 0.505) stays in memory only.
    let nudged = api
        .put_ok(&json!({"nodes": [report(150, t + 2_000, 0.51)]}))
        .await;
    assert_eq!(nudged.rows_written, 0, "{nudged:?}");
    let in_memory = api.node(&node_name(150)).await.unwrap();
    assert_eq!(samples(&in_memory), 2);

    api.worker.restart();
    // Every node, label and measurement survived; what a restart loses is exactly the change
    // within the deadband (the persisted record is the one before it).
    let (reply, ops) = api.filter(&all).await;
    assert_eq!(reply.passed(), all[100..].to_vec());
    assert_eq!(ops, 1);
    for gone in &all[..100] {
        assert!(reply.failed_nodes[gone].contains("no node facts"), "{gone}");
    }
    assert!(api.node(&node_name(0)).await.is_none());
    assert_eq!(api.node(&node_name(150)).await.unwrap(), before);
    let level = |f: &NodeFacts| f.load.as_ref().unwrap().value.level.unwrap();
    assert!((level(&in_memory) - level(&before)).abs() <= 0.02);
}

/// Utilisation samples folded into a node's load estimate.
fn samples(facts: &NodeFacts) -> u64 {
    facts.load.as_ref().expect("a load estimate").value.samples
}

/// Full-object mode reads each node object as it comes, keeping only what the verb needs; names
/// mode reads the same nodes' facts. Same nodes, same answers: every filter list and every score.
#[tokio::test]
async fn full_objects_of_3000_real_nodes_filter_and_score_as_names_mode() {
    let api = Api::start(StartOptions::default());
    let nodes = fixtures::real_shaped_nodes(3000);
    let t = now_ms();
    // What names mode reads of a node object (labels, allocatable), and what both modes read from
    // facts (requested: some nodes too busy for the pod).
    let reports: Vec<NodeReport> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeReport {
            observed_at_ms: Some(t),
            requested: Some(
                serde_json::from_value(
                    json!({"cpu": format!("{}m", (i % 11) * 9000), "memory": "16Gi"}),
                )
                .unwrap(),
            ),
            ..serde_json::from_value(fixtures::identity_report(n)).unwrap()
        })
        .collect();
    let pod = fixtures::bench_pod();
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let full = json!({"Pod": pod, "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": null})
        .to_string();
    let by_name = json!({"Pod": pod, "NodeNames": names}).to_string();
    assert!(full.len() > 20_000_000, "{} bytes", full.len());
    api.put_ok(&json!({"nodes": reports})).await;

    let (f, n) = (
        api.verb("/v1/filter", full.clone()).await,
        api.verb("/v1/filter", by_name.clone()).await,
    );
    assert_eq!(
        (f.status.as_u16(), n.status.as_u16()),
        (200, 200),
        "{} {}",
        f.body,
        n.body
    );
    let (f, n) = (f.json::<FilterResult>(), n.json::<FilterResult>());
    // Everything but the echoed objects is the same in both modes.
    assert_eq!(
        FilterResult {
            nodes: None,
            ..f.clone()
        },
        n
    );
    let passed = f.passed();
    let (failed, unresolvable) = (&f.failed_nodes, &f.failed_and_unresolvable_nodes);
    assert!(passed.len() > 300 && !failed.is_empty() && !unresolvable.is_empty());
    assert_eq!(passed.len() + failed.len() + unresolvable.len(), 3000);
    // Full-object mode echoes exactly the passing objects, in order, as they were sent.
    let sent: std::collections::HashMap<String, &Value> =
        nodes.iter().map(|n| (name_of(n), n)).collect();
    let expected: Vec<&Value> = passed.iter().map(|name| sent[name]).collect();
    let echoed: Vec<&Value> = f.items().iter().collect();
    assert_eq!(echoed, expected);
    assert_eq!(n.nodes, None);

    let (f, n) = (
        api.verb("/v1/prioritize", full).await,
        api.verb("/v1/prioritize", by_name).await,
    );
    assert_eq!(
        (f.status.as_u16(), n.status.as_u16()),
        (200, 200),
        "{} {}",
        f.body,
        n.body
    );
    let (f, n) = (f.json::<Vec<HostPriority>>(), n.json::<Vec<HostPriority>>());
    assert_eq!(f, n, "every host, every score, the same order");
    let scores: std::collections::BTreeSet<i64> = f.iter().map(|h| h.score).collect();
    assert!(f.len() == 3000 && scores.len() > 1, "{scores:?}");
}

/// docs/benchmarks.md "Worker memory": wasm linear memory of a fresh isolate (read from
/// `x-aco-wasm-memory-bytes`; it only grows, so it is the high-water mark) before and after a
/// full-object filter, then a prioritize, of N real-shaped nodes; and after a names-mode filter
/// and prioritize of 5,000 of 10,000 reported nodes. Locally the Durable Objects run in the same
/// isolate, so their memory is included (in production they run elsewhere).
#[cfg(feature = "measure")]
#[tokio::test]
async fn measure_worker_memory_of_full_object_requests() {
    // MEASURE_MAX_BODY_BYTES: to measure above the default limit (e.g. 104857600, the platform's).
    let options = || match std::env::var("MEASURE_MAX_BODY_BYTES") {
        Ok(limit) => StartOptions::default().var("MAX_BODY_BYTES", limit),
        Err(_) => StartOptions::default(),
    };
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    // workerd's peak resident memory: the isolates' JS heaps (request chunks, reply chunks) and
    // wasm memories, locally the Durable Objects' too, and the runtime itself.
    let rss = |api: &Api| {
        api.worker
            .workerd_peak_rss_bytes()
            .map_or("?".to_string(), |b| format!("{:.0}", mib(b)))
    };
    eprintln!("| request | body MB | wasm memory at start MiB | after filter MiB | after prioritize MiB | workerd peak RSS at start MiB | after both MiB |");
    let sizes: Vec<usize> = std::env::var("MEASURE_NODES")
        .ok()
        .map_or(vec![1_000, 2_500, 5_000, 10_000], |v| {
            v.split(',').map(|n| n.parse().unwrap()).collect()
        });
    let limit: usize = std::env::var("MEASURE_MAX_BODY_BYTES").map_or(
        aco_core::config::Config::default().serving.max_body_bytes,
        |v| v.parse().unwrap(),
    );
    for n in sizes {
        // Built before the Worker starts, so that its start-up figures are not the build's.
        let body = json!({"Pod": fixtures::bench_pod(), "Nodes": {"metadata": {}, "items": fixtures::real_shaped_nodes(n)}, "NodeNames": null}).to_string();
        let api = Api::start(options());
        api.put_ok(&json!({"nodes": [{"name": "probe-node"}]}))
            .await;
        let (start, rss_start) = (api.memory().await, rss(&api));
        let mut after = Vec::new();
        for verb in ["/v1/filter", "/v1/prioritize"] {
            let r = api.verb(verb, body.clone()).await;
            // Above MAX_BODY_BYTES: refused (drained, never stored), which is what the limit is for.
            assert_eq!(
                r.status,
                if body.len() > limit { 413 } else { 200 },
                "{verb} {n}: {}",
                r.body
            );
            after.push(api.memory().await);
        }
        let refused = if body.len() > limit {
            format!("413 above MAX_BODY_BYTES = {limit}: ")
        } else {
            String::new()
        };
        eprintln!(
            "| full objects, {n} nodes | {:.1} | {:.1} | {refused}{:.1} | {:.1} | {rss_start} | {} |",
            body.len() as f64 / 1e6,
            mib(start),
            mib(after[0]),
            mib(after[1]),
            rss(&api)
        );
    }
    let api = Api::start(options());
    let t = now_ms();
    api.put_ok(&json!({"nodes": (0..10_000).map(|i| report(i, t, 0.5)).collect::<Vec<_>>()}))
        .await;
    api.put_ok(&json!({"nodes": [{"name": "probe-node"}]}))
        .await;
    let (start, rss_start) = (api.memory().await, rss(&api));
    let names: Vec<String> = (0..10_000).step_by(2).map(node_name).collect();
    let mut after = Vec::new();
    let body = json!({"Pod": pod("probe"), "NodeNames": names}).to_string();
    for verb in ["/v1/filter", "/v1/prioritize"] {
        let r = api.verb(verb, body.clone()).await;
        assert_eq!(r.status, 200, "{verb}: {}", r.body);
        after.push(api.memory().await);
    }
    eprintln!(
        "| names, 5,000 of 10,000 reported nodes | {:.1} | {:.1} (after the PUT) | {:.1} | {:.1} | {rss_start} (after the PUT) | {} |",
        body.len() as f64 / 1e6,
        mib(start),
        mib(after[0]),
        mib(after[1]),
        rss(&api)
    );
}

/// docs/cost.md "Node facts": SQLite rows written per report, for N nodes reported every 15 s
/// (observation times advanced 15 s per report, as aco-reporter does) with realistic noise:
/// each node's utilisation is its own level plus ±5 percentage points of noise per sample, and 2%
/// of the nodes change `requested` per report (pods starting and finishing).
#[cfg(feature = "measure")]
#[tokio::test]
async fn measure_rows_written_per_report() {
    use rand::{Rng, SeedableRng};
    const REPORTS: u64 = 20;
    for n in [100usize, 1_000, 5_000] {
        let api = Api::start(StartOptions::default());
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
        // The hot path's snapshot fetch right after a report (every shard changed): an upper bound
        // of the Facts object's time per fetch.
        let names: Vec<String> = (0..n).map(node_name).collect();
        let started = std::time::Instant::now();
        let (_, ops) = api.filter(&names).await;
        let filter_ms = started.elapsed().as_secs_f64() * 1e3;
        assert_eq!(ops, 1);
        let steady = &rows[1..];
        let mean = steady.iter().sum::<u64>() as f64 / steady.len() as f64;
        let put_mean = put_ms[1..].iter().sum::<f64>() / (put_ms.len() - 1) as f64;
        eprintln!("{n} nodes: first report {} rows, then per report {steady:?}, mean {mean:.1}; PUT {put_mean:.0} ms (client wall clock, mean); names-mode filter with a full snapshot fetch {filter_ms:.0} ms", rows[0]);
    }
}

/// docs/cost.md "How many busy isolates one Facts object serves": a busy isolate refreshes its
/// copy every `FACTS_CACHE_MS` (5 s), so per 15 s report it makes one fetch of every changed
/// shard (all 16 at 5,000 nodes with realistic noise) and two empty ones. Measured through the
/// Worker (its own parse included, so an upper bound of the object's time): a one-candidate
/// filter with FACTS_CACHE_MS=0 right after a report changing every shard, and again with
/// nothing changed. One object serves 15 s / (full + 2 × empty + its share of the PUT) isolates.
#[cfg(feature = "measure")]
#[tokio::test]
async fn measure_busy_isolates_one_facts_object_serves() {
    const N: usize = 5_000;
    const ROUNDS: u64 = 8;
    let api = Api::start(StartOptions::default().var("FACTS_CACHE_MS", "0"));
    let start = now_ms() - ROUNDS * 15_000;
    let one = vec![node_name(0)];
    let (mut full, mut empty, mut put) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..=ROUNDS {
        let at = start + k * 15_000;
        // Every node's utilisation moves beyond the deadband: every shard is rewritten.
        let u = if k % 2 == 0 { 0.2 } else { 0.6 };
        let nodes: Vec<NodeReport> = (0..N).map(|i| report(i, at, u)).collect();
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
    let mean = |v: &[f64]| v[1..].iter().sum::<f64>() / (v.len() - 1) as f64;
    let (full, empty, put) = (mean(&full), mean(&empty), mean(&put));
    let per_isolate = full + 2.0 * empty;
    eprintln!(
        "MEASURE facts at {N} nodes: full-delta fetch {full:.1} ms, empty fetch {empty:.1} ms, PUT {put:.0} ms per 15 s; busy isolates one object serves ≈ (15000 − {put:.0}) / {per_isolate:.1} = {:.0}",
        (15_000.0 - put) / per_isolate
    );
}
