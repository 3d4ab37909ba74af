//! NodeMetrics from `metrics.k8s.io/v1beta1` (metrics-server), read by polling — the API
//! cannot be watched. k8s-openapi has no type for it: a `DynamicObject` list, parsed here.

use std::collections::HashMap;

use aco_core::quantity;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::Client;

use crate::node_facts::NodeUsage;
use crate::time::parse_rfc3339_ms;

fn resource() -> ApiResource {
    ApiResource {
        group: "metrics.k8s.io".into(),
        version: "v1beta1".into(),
        api_version: "metrics.k8s.io/v1beta1".into(),
        kind: "NodeMetrics".into(),
        plural: "nodes".into(),
    }
}

/// One NodeMetrics object's data (`timestamp`, `usage`) → a usage reading.
pub fn parse(data: &serde_json::Value) -> Option<NodeUsage> {
    let at_ms = parse_rfc3339_ms(data.get("timestamp")?.as_str()?)?;
    let usage = data.get("usage")?;
    let cpu_milli = quantity::parse_milli(usage.get("cpu")?.as_str()?).ok()?;
    let memory_bytes = usage
        .get("memory")
        .and_then(|m| m.as_str())
        .and_then(|m| quantity::parse_value(m).ok())
        .unwrap_or(0);
    Some(NodeUsage {
        at_ms,
        cpu_milli,
        memory_bytes,
        busy_fraction: None,
    })
}

/// Latest usage by node name. An error means the API is absent or failing: the caller sends no
/// samples this round, counts it and logs it.
pub async fn read(client: &Client) -> Result<HashMap<String, NodeUsage>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource());
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|o| Some((o.metadata.name.clone()?, parse(&o.data)?)))
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_metrics_server_output() {
        let v = serde_json::json!({"timestamp": "2026-12-01T10:00:00Z", "window": "15s",
            "usage": {"cpu": "3499484044n", "memory": "2Gi"}});
        let u = super::parse(&v).unwrap();
        assert_eq!(u.cpu_milli, 3_500);
        assert_eq!(u.memory_bytes, 2 << 30);
        assert!(super::parse(&serde_json::json!({"usage": {"cpu": "1"}})).is_none());
    }
}
