//! kube-scheduler's extender replies (`k8s.io/kube-scheduler/extender/v1`) as the tests read
//! them: owned, and strict about the wire — PascalCase keys only and no key the Go types lack
//! (`deny_unknown_fields`), so a reply that parses is one kube-scheduler reads the same way.
//! The Worker's own types (`aco_core::wire`) borrow from the request and only serialise.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `ExtenderFilterResult`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterResult {
    /// The passing node objects, set when the request carried full `Nodes`.
    #[serde(rename = "Nodes")]
    pub nodes: Option<NodeList>,
    #[serde(rename = "NodeNames")]
    pub node_names: Option<Vec<String>>,
    #[serde(rename = "FailedNodes")]
    pub failed_nodes: BTreeMap<String, String>,
    #[serde(rename = "FailedAndUnresolvableNodes")]
    pub failed_and_unresolvable_nodes: BTreeMap<String, String>,
    #[serde(rename = "Error")]
    pub error: String,
}

impl FilterResult {
    /// The names of the passing nodes (none when `NodeNames` is `null`).
    pub fn passed(&self) -> Vec<String> {
        self.node_names.clone().unwrap_or_default()
    }

    /// The passing node objects as sent (none when `Nodes` is `null`).
    pub fn items(&self) -> &[Value] {
        self.nodes.as_ref().map_or(&[], |n| &n.items)
    }
}

/// A `v1.NodeList` as the filter reply carries it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeList {
    pub metadata: Map<String, Value>,
    pub items: Vec<Value>,
}

/// One entry of the prioritize reply (a bare JSON array of these).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostPriority {
    #[serde(rename = "Host")]
    pub host: String,
    #[serde(rename = "Score")]
    pub score: i64,
}
