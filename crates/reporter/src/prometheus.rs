//! Prometheus as a load source (`--metrics-source prometheus`) and OpenCost as a price source
//! (`--prices-from-opencost`): instant queries over `/api/v1/query`, one series per node.
//!
//! Each query must return a vector with one series per node, labelled with the node's name in
//! `node` (`--prometheus-node-label`), valued as a busy fraction in [0, 1] (the price query:
//! $/h). `{window}` in a query is replaced by `--prometheus-window` (5m, 10m or 15m, as
//! Trimaran's load-watcher averages). A node's utilisation is the busiest of its resources (as
//! with metrics-server: a node short of any is hot for a latency-critical pod), stamped with the
//! query's evaluation time; a series that stopped falls out of the window and the node then gets
//! no sample, so the Worker's copy ages past its TTL.
//!
//! The defaults read node-exporter (CPU, memory, relabelled with `node`) and NVIDIA's
//! dcgm-exporter (`DCGM_FI_DEV_GPU_UTIL` 0–100 and `DCGM_FI_DEV_FB_USED`/`_FB_FREE` MiB per GPU,
//! labelled `Hostname`, averaged over the node's GPUs), and OpenCost's `node_total_hourly_cost`.

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;

use crate::node_facts::NodeUsage;

pub const DEFAULT_CPU: &str =
    r#"avg by (node) (1 - rate(node_cpu_seconds_total{mode="idle"}[{window}]))"#;
pub const DEFAULT_MEMORY: &str = "avg by (node) (1 - avg_over_time(node_memory_MemAvailable_bytes[{window}]) / avg_over_time(node_memory_MemTotal_bytes[{window}]))";
pub const DEFAULT_GPU_UTIL: &str = r#"label_replace(avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[{window}])) / 100, "node", "$1", "Hostname", "(.*)")"#;
pub const DEFAULT_GPU_MEMORY: &str = r#"label_replace(avg by (Hostname) (avg_over_time(DCGM_FI_DEV_FB_USED[{window}]) / (avg_over_time(DCGM_FI_DEV_FB_USED[{window}]) + avg_over_time(DCGM_FI_DEV_FB_FREE[{window}]))), "node", "$1", "Hostname", "(.*)")"#;
pub const DEFAULT_PRICE: &str = "avg by (node) (node_total_hourly_cost)";

/// The queries, by what they measure (`None` or empty: not asked).
#[derive(Debug, Clone)]
pub struct Queries {
    pub load: Vec<(String, String)>,
    pub price: Option<String>,
}

impl Queries {
    /// `{window}` replaced.
    pub fn render(template: &str, window: Duration) -> String {
        template.replace("{window}", &format!("{}s", window.as_secs().max(1)))
    }
}

#[derive(Debug, Deserialize)]
struct Reply {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<Series>,
}

#[derive(Debug, Deserialize)]
struct Series {
    metric: HashMap<String, String>,
    /// `[unix seconds, "value"]`
    value: (f64, String),
}

/// One value per node from a `/api/v1/query` reply: `(node, unix ms, value)`; series without
/// the node label or with a non-finite value are skipped.
pub fn parse_vector(body: &str, node_label: &str) -> Result<Vec<(String, u64, f64)>, String> {
    let reply: Reply =
        serde_json::from_str(body).map_err(|e| format!("Prometheus reply is not JSON: {e}"))?;
    if reply.status != "success" {
        return Err(format!(
            "Prometheus refused the query: {} {}",
            reply.error_type.unwrap_or_default(),
            reply.error.unwrap_or_default()
        ));
    }
    let data = reply.data.ok_or("Prometheus reply without data")?;
    if data.result_type != "vector" {
        return Err(format!(
            "the query must give an instant vector, not a {}",
            data.result_type
        ));
    }
    Ok(data
        .result
        .into_iter()
        .filter_map(|s| {
            let node = s.metric.get(node_label)?.clone();
            let v: f64 = s.value.1.parse().ok()?;
            v.is_finite()
                .then_some((node, (s.value.0 * 1000.0).max(0.0) as u64, v))
        })
        .collect())
}

/// Utilisation per node: the busiest of the load queries' fractions (clamped to [0, 1]), at the
/// oldest evaluation time among them.
pub fn combine(per_query: &[Vec<(String, u64, f64)>]) -> HashMap<String, NodeUsage> {
    let mut out: HashMap<String, NodeUsage> = HashMap::new();
    for series in per_query {
        for (node, at_ms, v) in series {
            let v = v.clamp(0.0, 1.0);
            let u = out.entry(node.clone()).or_insert(NodeUsage {
                at_ms: *at_ms,
                cpu_milli: 0,
                memory_bytes: 0,
                busy_fraction: Some(v),
            });
            u.at_ms = u.at_ms.min(*at_ms);
            u.busy_fraction = Some(u.busy_fraction.unwrap_or(0.0).max(v));
        }
    }
    out
}

/// What one read of Prometheus gives.
#[derive(Debug, Default)]
pub struct Reading {
    pub usage: HashMap<String, NodeUsage>,
    /// $/h per node (OpenCost).
    pub prices: HashMap<String, f64>,
}

#[derive(Clone)]
pub struct Prometheus {
    http: reqwest::Client,
    base: String,
    node_label: String,
    window: Duration,
    queries: Queries,
}

impl Prometheus {
    pub fn new(
        base: &str,
        node_label: &str,
        window: Duration,
        queries: Queries,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        Ok(Prometheus {
            http: reqwest::Client::builder().timeout(timeout).build()?,
            base: base.trim_end_matches('/').to_string(),
            node_label: node_label.to_string(),
            window,
            queries,
        })
    }

    async fn query(&self, template: &str) -> Result<Vec<(String, u64, f64)>, String> {
        let expr = Queries::render(template, self.window);
        let reply = self
            .http
            .get(format!("{}/api/v1/query", self.base))
            .query(&[("query", expr.as_str())])
            .send()
            .await
            .map_err(|e| format!("Prometheus unreachable: {e}"))?;
        let body = reply.text().await.map_err(|e| e.to_string())?;
        parse_vector(&body, &self.node_label).map_err(|e| format!("{e} (query {expr})"))
    }

    /// Every load query (and the price query, if asked); any failing query fails the read.
    pub async fn read(&self) -> Result<Reading, String> {
        let mut per_query = Vec::new();
        for (_, q) in &self.queries.load {
            per_query.push(self.query(q).await?);
        }
        let prices = match &self.queries.price {
            Some(q) => self
                .query(q)
                .await?
                .into_iter()
                .filter(|(_, _, v)| *v >= 0.0)
                .map(|(n, _, v)| (n, v))
                .collect(),
            None => HashMap::new(),
        };
        Ok(Reading {
            usage: combine(&per_query),
            prices,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_instant_vector_by_node() {
        let body = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"node":"gpu-1","Hostname":"gpu-1"},"value":[1764583200.5,"0.8"]},
            {"metric":{"instance":"10.0.0.1:9100"},"value":[1764583200.5,"0.1"]},
            {"metric":{"node":"gpu-2"},"value":[1764583200.5,"NaN"]}]}}"#;
        assert_eq!(
            parse_vector(body, "node").unwrap(),
            [("gpu-1".to_string(), 1_764_583_200_500, 0.8)]
        );
        let refused =
            r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#;
        assert!(parse_vector(refused, "node")
            .unwrap_err()
            .contains("bad_data"));
        let matrix = r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(parse_vector(matrix, "node")
            .unwrap_err()
            .contains("instant vector"));
    }

    #[test]
    fn a_nodes_load_is_its_busiest_resource() {
        let cpu = vec![("a".to_string(), 2_000, 0.3), ("b".to_string(), 2_000, 0.9)];
        let gpu = vec![
            ("a".to_string(), 1_000, 0.85),
            ("c".to_string(), 2_000, 1.7),
        ];
        let u = combine(&[cpu, gpu]);
        assert_eq!(u["a"].busy_fraction, Some(0.85));
        assert_eq!(u["a"].at_ms, 1_000);
        assert_eq!(u["b"].busy_fraction, Some(0.9));
        assert_eq!(u["c"].busy_fraction, Some(1.0), "clamped");
    }

    #[test]
    fn window_is_substituted() {
        assert_eq!(
            Queries::render(DEFAULT_GPU_UTIL, Duration::from_secs(600)),
            r#"label_replace(avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[600s])) / 100, "node", "$1", "Hostname", "(.*)")"#
        );
    }
}
