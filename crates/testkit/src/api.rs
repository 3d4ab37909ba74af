//! The HTTP client of the integration tests: a started Worker plus helpers for its routes
//! (admin calls with the bearer token, facts, placements, scores, polling `/metrics`), and the
//! pod as kube-scheduler sends it to the extender.

use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

use crate::{StartOptions, WorkerProcess, ADMIN_TOKEN};

pub fn pod(
    name: &str,
    namespace: &str,
    labels: Value,
    annotations: Value,
    requests: Value,
) -> Value {
    json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{namespace}-{name}"),
                     "labels": labels, "annotations": annotations, "creationTimestamp": "2026-11-29T10:00:00Z"},
        "spec": {"schedulerName": "aco-scheduler", "containers": [{"name": "main", "image": "busybox",
                 "resources": {"requests": requests.clone(), "limits": requests}}]},
        "status": {"phase": "Pending", "qosClass": "Guaranteed"}
    })
}

/// ExtenderArgs in full-Nodes mode, each node pretty-printed so that its bytes are distinctive.
pub fn full_args(pod: &Value, nodes: &[Value]) -> (String, Vec<String>) {
    let items: Vec<String> = nodes
        .iter()
        .map(|n| serde_json::to_string_pretty(n).unwrap())
        .collect();
    let body = format!(
        r#"{{"Pod":{},"Nodes":{{"metadata":{{}},"items":[{}]}},"NodeNames":null}}"#,
        pod,
        items.join(",")
    );
    (body, items)
}

pub struct Api {
    pub worker: WorkerProcess,
    pub http: Client,
}

impl Api {
    pub fn start(options: StartOptions) -> Self {
        Self {
            worker: WorkerProcess::start(options),
            // No idle connections kept: workerd closes idle keep-alive connections on its own
            // schedule, and a request sent on one as it closes fails with `IncompleteMessage`
            // (hyper's keep-alive race; seen under load with 100 requests in flight). A fresh
            // connection per request costs the tests nothing that they measure.
            http: Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("reqwest client"),
        }
    }

    pub async fn post_raw(&self, path: &str, body: String) -> (StatusCode, String) {
        let r = self
            .http
            .post(self.worker.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    }

    pub async fn post(&self, path: &str, body: String) -> Value {
        let (status, text) = self.post_raw(path, body).await;
        assert_eq!(status, 200, "{path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    pub async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .http
            .request(method, self.worker.url(path))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let status = r.status();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn put_facts(&self, nodes: Value) {
        let (status, body) = self
            .admin(
                reqwest::Method::PUT,
                "/v1/nodes",
                Some(json!({ "nodes": nodes })),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    pub async fn put_batch(&self, batch: Value) -> (StatusCode, Value) {
        self.admin(reqwest::Method::PUT, "/v1/nodes", Some(batch))
            .await
    }

    /// `PUT /v1/nodes` with a body as written (e.g. with a key repeated, which a `Value` cannot hold).
    pub async fn put_batch_raw(&self, body: String) -> (StatusCode, Value) {
        let r = self
            .http
            .put(self.worker.url("/v1/nodes"))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// The stored facts of one node (`None` when the Worker has none).
    pub async fn node_facts(&self, node: &str) -> Option<Value> {
        let (status, body) = self
            .admin(reqwest::Method::GET, &format!("/v1/nodes/{node}"), None)
            .await;
        match status.as_u16() {
            200 => Some(body),
            404 => None,
            _ => panic!("GET /v1/nodes/{node}: {status} {body}"),
        }
    }

    /// Which of `names` a names-mode (nodeCacheCapable) filter passes for a small CPU pod;
    /// the others' reasons.
    pub async fn filter_names(&self, names: &[&str]) -> (Vec<String>, Value) {
        let body = json!({"Pod": pod("probe", "ops", json!({}), json!({}), json!({"cpu": "1"})), "NodeNames": names});
        let reply = self.post("/v1/filter", body.to_string()).await;
        let passed = reply["NodeNames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        (passed, reply["FailedNodes"].clone())
    }

    pub async fn pheromones(&self, tenant: &str) -> Value {
        let (status, body) = self
            .admin(
                reqwest::Method::GET,
                &format!("/v1/tenants/{tenant}/pheromones"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    pub async fn place(&self, placements: Value) -> Value {
        let (status, body) = self
            .admin(
                reqwest::Method::POST,
                "/v1/placements",
                Some(json!({ "placements": placements })),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Scores as a map host → score.
    pub async fn scores(
        &self,
        pod: &Value,
        nodes: &[Value],
    ) -> std::collections::BTreeMap<String, i64> {
        let reply = self.post("/v1/prioritize", full_args(pod, nodes).0).await;
        reply
            .as_array()
            .unwrap()
            .iter()
            .map(|hp| {
                (
                    hp["Host"].as_str().unwrap().to_string(),
                    hp["Score"].as_i64().unwrap(),
                )
            })
            .collect()
    }

    /// Polls /metrics until it contains `needle` (metrics are recorded after each response).
    pub async fn metrics_containing(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let text = self
                .http
                .get(self.worker.url("/metrics"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if text.contains(needle) {
                return text;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "metrics never contained {needle}:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
