//! The Worker's facts routes at cluster scale, shared by `tests/facts_scale.rs` and the benches
//! that measure them (`benches/worker_memory.rs`, `benches/facts_rows.rs`,
//! `benches/facts_isolates.rs`): node reports as aco-reporter sends them, for any node count,
//! and a client that reads each reply with the binding operations its invocation spent
//! (`x-aco-binding-ops`) and, on the facts routes, the isolate's wasm memory
//! (`x-aco-wasm-memory-bytes`).

use aco_core::api::error::ErrorBody;
use aco_core::api::nodes::{NodeReport, NodesReply};
use aco_core::facts::NodeFacts;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::extender::FilterResult;
use crate::{StartOptions, WorkerProcess, ADMIN_TOKEN};

/// Shards of the Facts object (`aco_core::facts_shards::SHARDS`).
pub const SHARDS: u64 = 16;

/// The name of node `i` (zero-padded: names sort as their indices).
pub fn node_name(i: usize) -> String {
    format!("bench-node-{i:05}")
}

/// A node report as aco-reporter sends it: the labels the Worker reads, allocatable, requested,
/// latency, one utilisation sample, per-GPU free shares.
pub fn report(i: usize, at_ms: u64, utilisation: f64) -> NodeReport {
    report_of(i, at_ms, utilisation, gpu_type(i), cpu_milli(i))
}

/// Node `i`'s GPU model.
pub fn gpu_type(i: usize) -> &'static str {
    ["A10", "T4", "V100"][i % 3]
}

/// The milli-CPUs requested on node `i` in [`report`].
pub fn cpu_milli(i: usize) -> usize {
    1000 + (i % 17) * 500
}

/// [`report`] of a node with this GPU type and these milli-CPUs requested.
pub fn report_of(
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

/// A pod of one CPU and 1 GiB in namespace `scale`.
pub fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "scale", "uid": format!("uid-{name}")},
           "spec": {"containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}})
}

/// The Worker and an HTTP client of its facts routes and verbs.
pub struct FactsApi {
    pub worker: WorkerProcess,
    pub http: reqwest::Client,
}

/// A reply: status, body, and the `x-aco-binding-ops` the invocation had spent.
pub struct Reply {
    pub status: StatusCode,
    pub body: String,
    pub ops: u32,
    /// `x-aco-wasm-memory-bytes` (only the facts routes send it), read by the measurements.
    pub wasm_memory: Option<u64>,
}

impl FactsApi {
    pub fn start(options: StartOptions) -> Self {
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

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
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

    pub async fn put(&self, batch: &Value) -> Reply {
        self.send(
            self.http
                .put(self.worker.url("/v1/nodes"))
                .bearer_auth(ADMIN_TOKEN)
                .json(batch),
        )
        .await
    }

    pub async fn put_ok(&self, batch: &Value) -> NodesReply {
        let r = self.put(batch).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.ops, 1, "one Durable Object request per batch");
        r.json()
    }

    pub async fn verb(&self, path: &str, body: String) -> Reply {
        self.send(
            self.http
                .post(self.worker.url(path))
                .header("content-type", "application/json")
                .body(body),
        )
        .await
    }

    /// This isolate's wasm memory, from a facts route's `x-aco-wasm-memory-bytes`.
    pub async fn memory(&self) -> u64 {
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

    pub async fn node(&self, name: &str) -> Option<NodeFacts> {
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
    pub async fn filter(&self, names: &[String]) -> (FilterResult, u32) {
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
    pub fn json<T: DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// A refusal's status and the field its error body names.
    pub fn refusal(&self) -> (u16, Option<String>) {
        let body = ErrorBody::parse(&self.body)
            .unwrap_or_else(|| panic!("not an error body: {}", self.body));
        (self.status.as_u16(), body.field)
    }
}
