//! The same trace against the live Worker: the reporter's `PUT /v1/nodes`, kube-scheduler's
//! `POST /v1/filter` and `POST /v1/prioritize` (only with ≥ 2 feasible nodes, as kube-scheduler
//! does), the best score taken with the same tie-break RNG as the native run, and the binding
//! reported to `POST /v1/placements`. With the same seed and inputs the placements equal the
//! native colony's (`tests/replay_matches_native.rs`), provided the Worker runs the simulator's
//! config (`cluster::worker_vars`) with exploration off (`Q0=1`, default) and on the trace's
//! clock ([`HttpScheduler::on_trace_clock`]: the Worker under `TEST_CLOCK_HEADER`). Otherwise the
//! facts are stamped with the wall clock, which the Worker then judges them by.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aco_core::api::nodes::{NodeReport, NodesBatch};
use aco_core::api::placements::{PlacementReport, PlacementsBatch};
use aco_core::names::NodeName;
use rand::rngs::StdRng;
use serde::Deserialize;
use serde_json::Value;

use crate::alloc::NodeAlloc;
use crate::cluster::{SimPod, World};
use crate::policy::{select_host, TenantSlowdowns};
use crate::scheduler::{Scheduler, TenantTrails};
use crate::trace::Error;

pub struct HttpScheduler {
    pub base_url: String,
    pub token: String,
    client: reqwest::blocking::Client,
    node_json: Vec<String>,
    last_at_ms: u64,
    pub requests: u64,
    ties: (usize, usize),
    /// Fetch the explanation of the first this many scored pods (`--explain N`).
    pub explain_first: usize,
    pub explanations: Vec<aco_core::colony::DecisionExplanation>,
    /// Every request carries the trace's time (`x-aco-test-now-ms`), and facts keep their trace
    /// timestamps: the Worker runs on the simulation's clock.
    trace_clock: bool,
    /// The trace's time of the latest event handed to this scheduler.
    now_ms: u64,
}

/// The header a Worker under `TEST_CLOCK_HEADER` takes each request's time from.
pub const TEST_CLOCK_HEADER: &str = "x-aco-test-now-ms";

#[derive(Deserialize)]
struct FilterReply {
    #[serde(rename = "NodeNames", alias = "nodenames", default)]
    node_names: Option<Vec<String>>,
    #[serde(rename = "Nodes", alias = "nodes", default)]
    nodes: Option<NodeItems>,
    #[serde(rename = "Error", alias = "error", default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct NodeItems {
    #[serde(default)]
    items: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct Priority {
    #[serde(rename = "Host", alias = "host")]
    host: String,
    #[serde(rename = "Score", alias = "score")]
    score: i64,
}

#[derive(Deserialize)]
struct PheromoneReply {
    #[serde(default)]
    nodes: Vec<PheromoneRow>,
}

#[derive(Deserialize)]
struct PheromoneRow {
    node: String,
    tau: f64,
    /// The node's learned slowdown for the tenant, once outcomes carried one.
    #[serde(default)]
    slowdown: Option<f64>,
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl HttpScheduler {
    pub fn new(base_url: &str, token: &str, world: &World) -> Result<Self, Error> {
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?;
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_string(),
            token: token.to_string(),
            client,
            node_json: world.nodes.iter().map(|n| n.json.to_string()).collect(),
            last_at_ms: 0,
            requests: 0,
            ties: (0, 0),
            explain_first: 0,
            explanations: Vec::new(),
            trace_clock: false,
            now_ms: 0,
        })
    }

    /// Runs the Worker on the trace's clock: it must run with `TEST_CLOCK_HEADER=true`.
    pub fn on_trace_clock(mut self) -> Self {
        self.trace_clock = true;
        self
    }

    /// The trace's clock, at the event being handed over.
    fn at(&mut self, now_ms: u64) {
        self.now_ms = self.now_ms.max(now_ms);
    }

    /// `rb` with the trace's time, on the trace's clock.
    fn timed(&self, rb: reqwest::blocking::RequestBuilder) -> reqwest::blocking::RequestBuilder {
        if self.trace_clock {
            rb.header(TEST_CLOCK_HEADER, self.now_ms.to_string())
        } else {
            rb
        }
    }

    fn post(&mut self, path: &str, body: String, auth: bool) -> Result<String, Error> {
        self.requests += 1;
        let mut req = self.timed(
            self.client
                .post(format!("{}{path}", self.base_url))
                .header("content-type", "application/json")
                .body(body),
        );
        if auth {
            req = req.bearer_auth(&self.token);
        }
        let res = req.send()?;
        let status = res.status();
        let text = res.text()?;
        if !status.is_success() {
            return Err(format!("POST {path}: HTTP {status}: {text}").into());
        }
        Ok(text)
    }

    fn args(&self, pod: &SimPod, nodes: &[usize]) -> String {
        let items: Vec<&str> = nodes.iter().map(|n| self.node_json[*n].as_str()).collect();
        format!(
            r#"{{"Pod":{},"Nodes":{{"metadata":{{}},"items":[{}]}},"NodeNames":null}}"#,
            pod.json,
            items.join(",")
        )
    }
}

impl HttpScheduler {
    /// The reports with sim timestamps made wall-clock ones (the Worker judges freshness by its
    /// clock); their order — all the EMA depends on — is kept.
    pub fn wall_clock(&mut self, reports: &[NodeReport]) -> Vec<NodeReport> {
        let samples = reports.first().map_or(0, |r| r.utilisation.len()) as u64;
        let base = wall_ms().max(self.last_at_ms + samples + 1);
        self.last_at_ms = base;
        let mut mapped = reports.to_vec();
        for r in &mut mapped {
            let n = r.utilisation.len() as u64;
            for (i, s) in r.utilisation.iter_mut().enumerate() {
                s.at_ms = base - (n - 1 - i as u64);
            }
            r.observed_at_ms = Some(base);
        }
        mapped
    }

    /// `PUT /v1/nodes`, 200 nodes per request.
    pub fn put_facts(&mut self, reports: &[NodeReport]) -> Result<(), Error> {
        for chunk in reports.chunks(200) {
            self.requests += 1;
            let res = self
                .timed(self.client.put(format!("{}/v1/nodes", self.base_url)))
                .bearer_auth(&self.token)
                .json(&NodesBatch {
                    nodes: chunk.to_vec(),
                    ..NodesBatch::default()
                })
                .send()?;
            let status = res.status();
            if !status.is_success() {
                return Err(format!(
                    "PUT /v1/nodes: HTTP {status}: {}",
                    res.text().unwrap_or_default()
                )
                .into());
            }
        }
        Ok(())
    }

    /// `PUT /v1/nodes` naming a reclaimed spot node (forgotten, counted against its pool).
    pub fn put_reclaimed(&mut self, node: &str) -> Result<(), Error> {
        self.requests += 1;
        let res = self
            .timed(self.client.put(format!("{}/v1/nodes", self.base_url)))
            .bearer_auth(&self.token)
            .json(&NodesBatch {
                reclaimed: vec![NodeName::parse(node)?],
                ..NodesBatch::default()
            })
            .send()?;
        let status = res.status();
        if !status.is_success() {
            return Err(format!(
                "PUT /v1/nodes (reclaimed): HTTP {status}: {}",
                res.text().unwrap_or_default()
            )
            .into());
        }
        Ok(())
    }

    /// An admin `POST`: (body, `x-aco-binding-ops` of the reply).
    pub fn post_admin(&mut self, path: &str, body: String) -> Result<(String, u64), Error> {
        self.requests += 1;
        let res = self
            .timed(self.client.post(format!("{}{path}", self.base_url)))
            .header("content-type", "application/json")
            .bearer_auth(&self.token)
            .body(body)
            .send()?;
        let ops = res
            .headers()
            .get("x-aco-binding-ops")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let status = res.status();
        let text = res.text()?;
        if !status.is_success() {
            return Err(format!("POST {path}: HTTP {status}: {text}").into());
        }
        Ok((text, ops))
    }

    /// An admin `GET` of a JSON document.
    pub fn get_admin(&mut self, path: &str) -> Result<Value, Error> {
        self.requests += 1;
        let res = self
            .timed(self.client.get(format!("{}{path}", self.base_url)))
            .bearer_auth(&self.token)
            .send()?;
        let status = res.status();
        let text = res.text()?;
        if !status.is_success() {
            return Err(format!("GET {path}: HTTP {status}: {text}").into());
        }
        Ok(serde_json::from_str(&text).map_err(|e| format!("GET {path}: {e}: {text}"))?)
    }

    /// `GET /v1/tenants/{t}/pheromones` for every tenant of the world.
    pub fn pheromone_tables(&mut self, world: &World) -> Result<TenantTrails, Error> {
        Scheduler::pheromones(self, world)
    }

    /// Per tenant, each node's learned slowdown, from the same tables (nodes without one left
    /// out), by node name.
    pub fn slowdown_tables(&mut self, world: &World) -> Result<TenantSlowdowns, Error> {
        let mut out = Vec::new();
        for (tenant, rows) in self.tables(world)? {
            let mut learned: Vec<(String, f64)> = rows
                .into_iter()
                .filter_map(|r| Some((r.node, r.slowdown?)))
                .collect();
            learned.sort_by(|a, b| a.0.cmp(&b.0));
            out.push((tenant, learned));
        }
        Ok(out)
    }

    /// Every tenant's `GET /v1/tenants/{t}/pheromones` rows (tenants without a colony left out).
    fn tables(&mut self, world: &World) -> Result<Vec<(String, Vec<PheromoneRow>)>, Error> {
        let mut out = Vec::new();
        for tenant in world.tenants() {
            self.requests += 1;
            let res = self
                .timed(
                    self.client
                        .get(format!("{}/v1/tenants/{tenant}/pheromones", self.base_url)),
                )
                .bearer_auth(&self.token)
                .send()?;
            if !res.status().is_success() {
                continue;
            }
            let reply: PheromoneReply = res.json()?;
            out.push((tenant, reply.nodes));
        }
        Ok(out)
    }
}

/// What the reporter sends for `pod` bound to `node` (`POST /v1/placements`, and the placement
/// part of a `POST /v1/shadow` item). An error for a trace's node name the Worker would refuse.
pub(crate) fn placement_report(
    pod: &SimPod,
    node: &str,
    outcome: Option<aco_core::colony::Outcome>,
) -> Result<PlacementReport, Error> {
    Ok(PlacementReport {
        pod_uid: Some(pod.uid.clone()),
        namespace: Some(pod.namespace.clone()),
        name: Some(pod.trace.name.clone()),
        tenant: Some(pod.tenant.clone()),
        node: NodeName::parse(node)?,
        outcome,
    })
}

impl Scheduler for HttpScheduler {
    fn name(&self) -> String {
        "colony (HTTP replay)".into()
    }

    fn report(&mut self, _world: &World, reports: &[NodeReport], now_ms: u64) -> Result<(), Error> {
        self.at(now_ms);
        if self.trace_clock {
            return self.put_facts(reports);
        }
        let mapped = self.wall_clock(reports);
        self.put_facts(&mapped)
    }

    fn reclaimed(&mut self, world: &World, node: usize, now_ms: u64) -> Result<(), Error> {
        self.at(now_ms);
        self.put_reclaimed(&world.nodes[node].name)
    }

    fn schedule(
        &mut self,
        world: &World,
        _alloc: &[NodeAlloc],
        pod: &SimPod,
        candidates: &[usize],
        now_ms: u64,
        tie: &mut StdRng,
    ) -> Result<Option<usize>, Error> {
        self.at(now_ms);
        let text = self.post("/v1/filter", self.args(pod, candidates), false)?;
        let reply: FilterReply =
            serde_json::from_str(&text).map_err(|e| format!("filter reply: {e}: {text}"))?;
        if let Some(e) = reply.error.filter(|e| !e.is_empty()) {
            return Err(format!("filter error: {e}").into());
        }
        let names: Vec<String> = match (reply.nodes.and_then(|n| n.items), reply.node_names) {
            (Some(items), _) => items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
                .collect(),
            (None, Some(names)) => names,
            (None, None) => Vec::new(),
        };
        let index: HashMap<&str, usize> = candidates
            .iter()
            .map(|c| (world.nodes[*c].name.as_str(), *c))
            .collect();
        let mut passed: Vec<usize> = names
            .iter()
            .filter_map(|n| index.get(n.as_str()).copied())
            .collect();
        passed.sort_unstable();
        match passed.len() {
            0 => Ok(None),
            1 => Ok(Some(passed[0])),
            _ => {
                let text = self.post("/v1/prioritize", self.args(pod, &passed), false)?;
                let reply: Vec<Priority> = serde_json::from_str(&text)
                    .map_err(|e| format!("prioritize reply: {e}: {text}"))?;
                // Before the placement is reported: the explanation as scored, before any bound node.
                if self.explanations.len() < self.explain_first {
                    self.requests += 1;
                    self.explanations.push(crate::explain::fetch(
                        &self.client,
                        &self.base_url,
                        &self.token,
                        None,
                        &pod.tenant,
                        &pod.uid,
                    )?);
                }
                let by_host: HashMap<&str, i64> =
                    reply.iter().map(|p| (p.host.as_str(), p.score)).collect();
                let scores: Vec<f64> = passed
                    .iter()
                    .map(|c| {
                        by_host
                            .get(world.nodes[*c].name.as_str())
                            .copied()
                            .unwrap_or(0) as f64
                    })
                    .collect();
                crate::scheduler::count_top_ties(&scores, &mut self.ties);
                Ok(select_host(&passed, &scores, tie))
            }
        }
    }

    fn placed(
        &mut self,
        world: &World,
        _alloc: &[NodeAlloc],
        pod: &SimPod,
        node: usize,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.at(now_ms);
        let body = PlacementsBatch {
            placements: vec![placement_report(pod, &world.nodes[node].name, None)?],
        };
        self.post("/v1/placements", serde_json::to_string(&body)?, true)?;
        Ok(())
    }

    fn outcome(
        &mut self,
        world: &World,
        pod: &SimPod,
        node: usize,
        outcome: aco_core::colony::Outcome,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.at(now_ms);
        let body = PlacementsBatch {
            placements: vec![placement_report(
                pod,
                &world.nodes[node].name,
                Some(outcome),
            )?],
        };
        self.post("/v1/placements", serde_json::to_string(&body)?, true)?;
        Ok(())
    }

    fn tie_stats(&self) -> (usize, usize) {
        self.ties
    }

    fn pheromones(&mut self, world: &World) -> Result<TenantTrails, Error> {
        let mut out = Vec::new();
        for (tenant, rows) in self.tables(world)? {
            // In the Worker's order (`PheromoneTable::snapshot`), as the native colony gives it.
            let rows: Vec<(String, f64)> = rows.into_iter().map(|r| (r.node, r.tau)).collect();
            out.push((tenant, rows));
        }
        Ok(out)
    }
}
