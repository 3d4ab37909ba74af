//! The HTTP client of the tests: [`WorkerHttp`], every helper for the Worker's routes (extender
//! verbs; admin calls with the bearer token: facts, placements, colony tables, shadow summaries,
//! `/metrics`), written once for both ways a test reaches a Worker — [`Api`], which owns a
//! Miniflare Worker on HTTP and follows its restarts, and [`WorkerApi`], a Worker served over
//! HTTPS beside a control plane (the kube suites). Also the pod as kube-scheduler sends it to
//! the extender, and `ExtenderArgs` in full-Nodes mode.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use aco_core::api::error::ErrorBody;
use aco_core::api::nodes::NodesReply;
use aco_core::api::pheromones::PheromoneTableReply;
use aco_core::api::placements::{PlacementReport, PlacementsBatch, PlacementsSummary};
use aco_core::api::shadow::ShadowSummaryReply;
use aco_core::colony::DecisionExplanation;
use aco_core::facts::NodeFacts;
use aco_core::names::{NodeName, PodKey};
use reqwest::{Client, Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::extender::{FilterResult, HostPriority};
use crate::pods::pod_object;
use crate::{StartOptions, WorkerProcess, ADMIN_TOKEN, METRICS_TOKEN};

/// A pending pod as kube-scheduler sends it to the extender (requests are its limits too).
pub fn pod(
    name: &str,
    namespace: &str,
    labels: Value,
    annotations: Value,
    requests: Value,
) -> Value {
    let container = json!({"name": "main", "image": "busybox",
                           "resources": {"requests": requests.clone(), "limits": requests}});
    let mut pod = pod_object(namespace, name, labels, annotations, container);
    pod["metadata"]["uid"] = format!("uid-{namespace}-{name}").into();
    pod["metadata"]["creationTimestamp"] = "2026-11-29T10:00:00Z".into();
    pod["status"] = json!({"phase": "Pending", "qosClass": "Guaranteed"});
    pod
}

/// A pending pod of tenant `research` asking for one GPU, 4 CPU and 16 GiB, allowed on `models`
/// (`scheduling.aco/gpu-models`) if given.
pub fn gpu_pod(name: &str, models: Option<&str>) -> Value {
    let annotations = models.map_or(json!({}), |m| json!({ "scheduling.aco/gpu-models": m }));
    pod(
        name,
        "research",
        json!({}),
        annotations,
        json!({"cpu": "4", "memory": "16Gi", "alibabacloud.com/gpu-count": "1"}),
    )
}

/// A confirmed placement of the pod with UID `pod_uid` in `namespace` (its tenant by default) on
/// `node`; set `name`, `tenant` or `outcome` with `PlacementReport { …, ..placed(…) }`.
/// The UID and node are typed: invalid ones are sent as JSON written out.
pub fn placed(pod_uid: &str, namespace: &str, node: &str) -> PlacementReport {
    PlacementReport {
        pod_uid: Some(PodKey::parse(pod_uid).expect("a valid pod UID")),
        namespace: Some(namespace.into()),
        name: None,
        tenant: None,
        node: NodeName::parse(node).expect("a valid node name"),
        outcome: None,
    }
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

/// A Worker this test owns (Miniflare, HTTP): `worker.restart()` and the like keep working, the
/// next call goes to the new port.
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
}

/// A Worker reached by URL over HTTPS, trusted through the control plane's CA (the kube suites,
/// where the Worker is kube-scheduler's extender).
pub struct WorkerApi {
    pub base: String,
    /// `/t/<token>/v1` under `EXTENDER_AUTH=path-token`, else `/v1`.
    verb_root: String,
    http: Client,
}

impl WorkerApi {
    pub fn new(worker: &WorkerProcess, ca_pem: &[u8]) -> WorkerApi {
        WorkerApi::at(&worker.base_url, &worker.verb_root(), ca_pem)
    }

    /// The Worker at `base` (`https://host:port`) serving the verbs under `verb_root`.
    pub fn at(base: &str, verb_root: &str, ca_pem: &[u8]) -> WorkerApi {
        let http = Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(ca_pem).unwrap())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        WorkerApi {
            base: base.to_owned(),
            verb_root: verb_root.to_owned(),
            http,
        }
    }
}

impl WorkerHttp for Api {
    fn base(&self) -> String {
        self.worker.base_url.clone()
    }
    fn verb_root(&self) -> String {
        self.worker.verb_root()
    }
    fn http(&self) -> &Client {
        &self.http
    }
}

impl WorkerHttp for WorkerApi {
    fn base(&self) -> String {
        self.base.clone()
    }
    fn verb_root(&self) -> String {
        self.verb_root.clone()
    }
    fn http(&self) -> &Client {
        &self.http
    }
}

/// The Worker's routes as the tests call them. Helpers that assert say so; the others return
/// the status for the test to check.
// The futures are awaited where they are made (no `Send` bound needed, none promised).
#[allow(async_fn_in_trait)]
pub trait WorkerHttp {
    /// `http(s)://127.0.0.1:PORT`, no trailing slash.
    fn base(&self) -> String;
    fn http(&self) -> &Client;
    /// Where the extender verbs are served: `/t/<token>/v1` under `EXTENDER_AUTH=path-token`,
    /// else `/v1`.
    fn verb_root(&self) -> String;

    /// `base` + `path` (`path` starts with `/`).
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    /// `…/v1`, or `…/t/<token>/v1` under `path-token` — the urlPrefix kube-scheduler gets.
    fn url_prefix(&self) -> String {
        self.url(&self.verb_root())
    }

    /// The path of an extender verb (`filter`, `prioritize`, `bind`) as kube-scheduler calls it.
    fn verb_path(&self, verb: &str) -> String {
        format!("{}/{verb}", self.verb_root())
    }

    /// An extender verb (no credentials): status and body as sent.
    async fn post_raw(&self, path: &str, body: String) -> (StatusCode, String) {
        let r = self
            .http()
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    }

    /// A `GET` with no credentials: status and body (probes, refusals).
    async fn get_raw(&self, path: &str) -> (u16, String) {
        let r = self.http().get(self.url(path)).send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// [`WorkerHttp::post_raw`], asserting 200; the JSON reply.
    async fn post(&self, path: &str, body: String) -> Value {
        let (status, text) = self.post_raw(path, body).await;
        assert_eq!(status, 200, "{path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// [`WorkerHttp::post_raw`], asserting 200; the reply read as `T` (failing with the body if
    /// it is not one).
    async fn post_as<T: DeserializeOwned>(&self, path: &str, body: String) -> T {
        let (status, text) = self.post_raw(path, body).await;
        assert_eq!(status, 200, "{path}: {text}");
        parse(path, &text)
    }

    /// The `filter` verb of this `ExtenderArgs` body, asserting 200: the typed reply.
    async fn filter_args(&self, body: String) -> FilterResult {
        self.post_as(&self.verb_path("filter"), body).await
    }

    /// The `prioritize` verb of this `ExtenderArgs` body, asserting 200: the typed reply.
    async fn prioritize_args(&self, body: String) -> Vec<HostPriority> {
        self.post_as(&self.verb_path("prioritize"), body).await
    }

    /// An admin call asserting a 2xx reply, read as `T`.
    async fn admin_as<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> T {
        let (status, text) = self.admin_text(method.clone(), path, body).await;
        assert!(
            status.is_success(),
            "{method} {path}: HTTP {status}: {text}"
        );
        parse(path, &text)
    }

    /// An admin call the Worker must refuse: its status (asserted not 2xx) and error body.
    async fn admin_refused(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, ErrorBody) {
        let (status, text) = self.admin_text(method.clone(), path, body).await;
        assert!(
            !status.is_success(),
            "{method} {path}: HTTP {status} where a refusal was due: {text}"
        );
        (status, error_body(&text))
    }

    /// An admin call (bearer [`ADMIN_TOKEN`]): status and text of the reply.
    async fn admin_text(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, String) {
        let mut req = self
            .http()
            .request(method.clone(), self.url(path))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = r.status();
        (status, r.text().await.unwrap())
    }

    /// An admin call: status and JSON reply (the text as a JSON string if it is not JSON).
    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let (status, text) = self.admin_text(method, path, body).await;
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// An admin call asserting a 2xx reply; its JSON (`null` if it is not JSON).
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, text) = self.admin_text(method.clone(), path, body).await;
        assert!(
            status.is_success(),
            "{method} {path}: HTTP {status}: {text}"
        );
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// `PUT /v1/nodes` of these reports, asserting 200.
    async fn put_facts(&self, nodes: impl serde::Serialize) {
        let (status, body) = self
            .admin(Method::PUT, "/v1/nodes", Some(json!({ "nodes": nodes })))
            .await;
        assert_eq!(status, 200, "{body}");
    }

    /// `PUT /v1/nodes` of this batch: the Worker's reply, or its refusal's status and body.
    async fn put_batch(&self, batch: Value) -> Result<NodesReply, (StatusCode, ErrorBody)> {
        let (status, text) = self.admin_text(Method::PUT, "/v1/nodes", Some(batch)).await;
        reply_or_refusal("/v1/nodes", status, &text)
    }

    /// `PUT /v1/nodes` with a body as written (e.g. with a key repeated, which a `Value` cannot
    /// hold): the Worker's reply, or its refusal's status and body.
    async fn put_batch_raw(&self, body: String) -> Result<NodesReply, (StatusCode, ErrorBody)> {
        let r = self
            .http()
            .put(self.url("/v1/nodes"))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let text = r.text().await.unwrap();
        reply_or_refusal("/v1/nodes", status, &text)
    }

    /// The stored facts of one node (`None` when the Worker has none; any other answer fails).
    async fn node_facts(&self, node: &str) -> Option<NodeFacts> {
        let path = format!("/v1/nodes/{node}");
        let (status, text) = self.admin_text(Method::GET, &path, None).await;
        match status.as_u16() {
            200 => Some(parse(&path, &text)),
            404 => None,
            _ => panic!("GET {path}: {status} {text}"),
        }
    }

    /// The stored facts of one node, `None` while the Worker has none or does not answer 2xx
    /// (for polling while a reporter or the Worker starts).
    async fn try_node_facts(&self, name: &str) -> Option<NodeFacts> {
        self.try_get(&format!("/v1/nodes/{name}")).await
    }

    /// An admin `GET`'s reply as `T`, `None` unless it answers 2xx with one.
    async fn try_get<T: DeserializeOwned>(&self, path: &str) -> Option<T> {
        let r = self
            .http()
            .get(self.url(path))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .ok()?;
        if !r.status().is_success() {
            return None;
        }
        r.json().await.ok()
    }

    /// A names-mode filter (`POST /v1/filter` with `NodeNames`, as kube-scheduler sends it with
    /// `nodeCacheCapable: true`) of `pod` over `names`: the Worker's reply, asserting 200.
    async fn filter(&self, pod: &Value, names: &[String]) -> FilterResult {
        self.filter_args(json!({"Pod": pod, "NodeNames": names}).to_string())
            .await
    }

    /// Which of `names` a names-mode (nodeCacheCapable) filter passes for a small CPU pod;
    /// the others' reasons.
    async fn filter_names(&self, names: &[&str]) -> (Vec<String>, BTreeMap<String, String>) {
        let probe = pod("probe", "ops", json!({}), json!({}), json!({"cpu": "1"}));
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let reply = self.filter(&probe, &names).await;
        (reply.passed(), reply.failed_nodes)
    }

    /// The tenant's colony table, typed (`aco_core::api::pheromones`), asserting success.
    async fn pheromone_table(&self, tenant: &str) -> PheromoneTableReply {
        self.admin_as(
            Method::GET,
            &format!("/v1/tenants/{tenant}/pheromones"),
            None,
        )
        .await
    }

    /// The tenant's colony table (`GET /v1/tenants/{t}/pheromones`) as JSON, asserting success.
    async fn pheromones(&self, tenant: &str) -> Value {
        self.call(
            Method::GET,
            &format!("/v1/tenants/{tenant}/pheromones"),
            None,
        )
        .await
    }

    /// `POST /v1/placements` of these reports, asserting 200; the summary.
    async fn place(&self, placements: Value) -> Value {
        let (status, body) = self
            .admin(
                Method::POST,
                "/v1/placements",
                Some(json!({ "placements": placements })),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// `POST /v1/placements` of these reports, asserting 200: the typed summary.
    async fn place_summary(&self, placements: Value) -> PlacementsSummary {
        self.admin_as(
            Method::POST,
            "/v1/placements",
            Some(json!({ "placements": placements })),
        )
        .await
    }

    /// `POST /v1/placements` of these reports: status and text of the reply.
    async fn post_placements(&self, placements: &[PlacementReport]) -> (StatusCode, String) {
        let batch = PlacementsBatch {
            placements: placements.to_vec(),
        };
        let body = serde_json::to_value(batch).expect("a batch serialises");
        self.admin_text(Method::POST, "/v1/placements", Some(body))
            .await
    }

    /// `POST /v1/placements` of these reports, asserting 200: the summary, exactly (a key it
    /// lacks or one the type lacks fails).
    async fn place_reports(&self, placements: &[PlacementReport]) -> PlacementsSummary {
        let (status, text) = self.post_placements(placements).await;
        assert_eq!(status, 200, "/v1/placements: {text}");
        exact("/v1/placements", &text)
    }

    /// Scores as a map host → score.
    async fn scores(&self, pod: &Value, nodes: &[Value]) -> BTreeMap<String, i64> {
        self.prioritize_args(full_args(pod, nodes).0)
            .await
            .into_iter()
            .map(|hp| (hp.host, hp.score))
            .collect()
    }

    /// The Worker's Prometheus text (`GET /metrics` with the scrape token), checked by
    /// `promtool check metrics` every time: no test scrapes an exposition a strict scraper
    /// would drop.
    async fn metrics(&self) -> String {
        let r = self
            .http()
            .get(self.url("/metrics"))
            .bearer_auth(METRICS_TOKEN)
            .send()
            .await
            .expect("GET /metrics");
        assert!(r.status().is_success(), "GET /metrics: {}", r.status());
        let text = r.text().await.unwrap();
        if let Err(complaints) = crate::prometheus::check_metrics(&text) {
            panic!("promtool check metrics:\n{complaints}\n{text}");
        }
        text
    }

    /// Polls /metrics until it contains `needle` (metrics are recorded after each response).
    async fn metrics_containing(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = self.metrics().await;
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "metrics never contained {needle}:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The tenant's shadow summary (`GET /v1/tenants/{t}/shadow`), `None` while the Worker
    /// answers anything but 2xx.
    async fn shadow_summary(&self, tenant: &str) -> Option<ShadowSummaryReply> {
        self.try_get(&format!("/v1/tenants/{tenant}/shadow")).await
    }

    async fn deposits(&self, tenant: &str) -> u64 {
        self.pheromone_table(tenant).await.counters.deposits
    }

    /// Waits until the tenant's colony has exactly `n` deposits, failing at once if it ever
    /// has more (a placement counted twice).
    async fn wait_deposits(&self, tenant: &str, n: u64, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let d = self.deposits(tenant).await;
            assert!(
                d <= n,
                "tenant {tenant}: {d} deposits, more than the {n} pods bound"
            );
            if d == n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "tenant {tenant}: {d} deposits after {timeout:?}, want {n}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// A decision's explanation (`GET /v1/tenants/{t}/decisions/{podUid}`), asserting 200.
    async fn decision(&self, tenant: &str, pod_uid: &str) -> DecisionExplanation {
        self.admin_as(
            Method::GET,
            &format!("/v1/tenants/{tenant}/decisions/{pod_uid}"),
            None,
        )
        .await
    }

    /// node → tau for a tenant now (empty when the tenant has no trail yet); τ evaporates as
    /// time passes, so two reads moments apart may differ in the last digits.
    async fn taus(&self, tenant: &str) -> BTreeMap<String, f64> {
        self.pheromone_table(tenant)
            .await
            .nodes
            .into_iter()
            .map(|n| (n.node, n.tau))
            .collect()
    }

    /// node → its trail as stored, (successes, failures, as of ms, learned slowdown): what a
    /// restart or an export keeps, the same whenever it is read (unlike [`WorkerHttp::taus`]).
    async fn trails(&self, tenant: &str) -> BTreeMap<String, (f64, f64, u64, Option<f64>)> {
        self.pheromone_table(tenant)
            .await
            .nodes
            .into_iter()
            .map(|n| {
                let stored = (n.successes, n.failures, n.outcomes_as_of_ms, n.slowdown);
                (n.node, stored)
            })
            .collect()
    }
}

/// `text` read as `T`, failing with the text (what `path` answered) if it is not one.
fn parse<T: DeserializeOwned>(path: &str, text: &str) -> T {
    serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("{path}: not a {}: {e}: {text}", std::any::type_name::<T>()))
}

/// `text` read as `T`, which must be all of it: written again it is the same JSON, so a key the
/// type lacks, or one it would default, fails (what `path` answered).
pub fn exact<T: DeserializeOwned + Serialize>(path: &str, text: &str) -> T {
    let value: T = parse(path, text);
    let sent: Value = parse(path, text);
    assert_eq!(
        serde_json::to_value(&value).expect("a reply serialises"),
        sent,
        "{path}: not exactly a {}",
        std::any::type_name::<T>()
    );
    value
}

/// A refusal's body, which must be an [`ErrorBody`] and nothing more: a key the type lacks fails
/// (read back and written again, the body must be the same JSON).
pub fn error_body(text: &str) -> ErrorBody {
    exact("an error body (`error`, `field` and `item` only)", text)
}

/// A 200's reply as `T`, or a refusal's status and error body.
fn reply_or_refusal<T: DeserializeOwned>(
    path: &str,
    status: StatusCode,
    text: &str,
) -> Result<T, (StatusCode, ErrorBody)> {
    if status == StatusCode::OK {
        Ok(parse(path, text))
    } else {
        Err((status, error_body(text)))
    }
}
