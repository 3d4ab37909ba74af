use std::collections::BTreeMap;

use serde::Deserialize;

use super::{null_as_default, unique_keys, RawResourceList};

/// The parts of a `v1.Node` the filter and the heuristic read.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeView {
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: NodeMeta,
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: NodeStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeMeta {
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default, deserialize_with = "unique_keys")]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeStatus {
    #[serde(default, deserialize_with = "unique_keys")]
    pub allocatable: RawResourceList,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_openb_node_and_ignores_everything_else() {
        let yaml = include_str!("../../tests/data/openb_node_sample.yaml");
        let first = yaml.split("\n---").next().unwrap();
        let node: NodeView = serde_yaml::from_str(first).unwrap();
        assert_eq!(node.metadata.name, "openb-node-0000");
        assert_eq!(
            node.metadata.labels["alibabacloud.com/gpu-card-model"],
            "P100"
        );
        assert_eq!(node.status.allocatable["cpu"].0, "64000m");
    }

    #[test]
    fn null_collections_read_as_empty() {
        let node: NodeView = serde_json::from_str(
            r#"{"metadata":{"name":"n","labels":null},"status":{"allocatable":null}}"#,
        )
        .unwrap();
        assert!(node.metadata.labels.is_empty() && node.status.allocatable.is_empty());
    }
}
