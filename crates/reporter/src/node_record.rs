//! What the reporter keeps of a Node ([`NodeRecord`]): its name, the labels the Worker reads
//! (and the latency label), allocatable as the API server wrote it, the two capacities and the
//! one annotation the GPU-share schemes read ([`crate::gpu_share`]). Everything else — status
//! conditions, images, addresses, node info — is dropped as the watch delivers the node.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;

use crate::cache::Keyed;
use crate::gpu_share::{
    Annotated, GpuShareNode, ALIYUN_GPU_COUNT, ALIYUN_GPU_MEM, HAMI_NODE_REGISTER,
};
use crate::intern::Interner;
use crate::pod_record::{kept, lookup, Shared};

#[derive(Debug, Clone, PartialEq)]
pub struct NodeRecord {
    pub name: Shared,
    /// The kept labels, by key.
    pub labels: Box<[(Shared, Shared)]>,
    /// `status.allocatable`, quantities as written.
    pub allocatable: Box<[(Shared, Box<str>)]>,
    /// Of `status.capacity`, what Alibaba's GPU share reads (`aliyun.com/gpu-mem`, `-count`).
    pub gpu_share_capacity: Box<[(Shared, Box<str>)]>,
    /// `hami.io/node-nvidia-register`.
    pub hami_register: Option<Box<str>>,
}

impl NodeRecord {
    pub fn label(&self, key: &str) -> Option<&str> {
        lookup(&self.labels, key).map(|v| &**v)
    }

    pub fn label_map(&self) -> BTreeMap<String, String> {
        self.labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl Keyed for NodeRecord {
    type Key = Shared;
    fn key(&self) -> Shared {
        self.name.clone()
    }
}

impl GpuShareNode for NodeRecord {
    fn capacity(&self, resource: &str) -> Option<&str> {
        lookup(&self.gpu_share_capacity, resource).map(|v| &**v)
    }
}

impl Annotated for NodeRecord {
    fn annotation(&self, key: &str) -> Option<&str> {
        (key == HAMI_NODE_REGISTER)
            .then_some(self.hami_register.as_deref())
            .flatten()
    }
}

/// Makes node records: the label keys to keep (the Worker's, by its settings, and the latency
/// label the reporter reads) and the shared strings.
#[derive(Debug)]
pub struct NodeReader {
    labels: Vec<String>,
    strings: Arc<Interner>,
}

impl NodeReader {
    pub fn new(label_keys: &[String], latency_label: &str, strings: Arc<Interner>) -> Self {
        let mut labels = label_keys.to_vec();
        labels.push(latency_label.to_owned());
        labels.sort();
        labels.dedup();
        NodeReader { labels, strings }
    }

    pub fn read(&self, node: &Node) -> NodeRecord {
        let status = node.status.as_ref();
        let quantities = |list: Option<
            &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
        >,
                          only: Option<&[&str]>| {
            list.into_iter()
                .flatten()
                .filter(|(k, _)| only.is_none_or(|o| o.contains(&k.as_str())))
                .map(|(k, q)| (self.strings.get(k), Box::from(q.0.as_str())))
                .collect()
        };
        NodeRecord {
            name: self
                .strings
                .get(node.metadata.name.as_deref().unwrap_or_default()),
            labels: kept(
                node.metadata.labels.as_ref(),
                &self.labels,
                |v| self.strings.get(v),
                &self.strings,
            ),
            allocatable: quantities(status.and_then(|s| s.allocatable.as_ref()), None),
            gpu_share_capacity: quantities(
                status.and_then(|s| s.capacity.as_ref()),
                Some(&[ALIYUN_GPU_MEM, ALIYUN_GPU_COUNT]),
            ),
            hami_register: node
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(HAMI_NODE_REGISTER))
                .map(|v| v.as_str().into()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use aco_core::config::Config;
    use serde_json::{json, Value};

    /// The record of a node given as JSON, keeping the labels the default Worker reads.
    pub(crate) fn record(node: Value) -> NodeRecord {
        let keys = crate::node_facts::labels_the_worker_reads(&Config::default().node_keys);
        NodeReader::new(&keys, "aco/latency-us", Default::default())
            .read(&serde_json::from_value(node).unwrap())
    }

    #[test]
    fn a_node_record_keeps_the_read_labels_allocatable_and_gpu_share_inputs() {
        let n = record(json!({
            "metadata": {"name": "n1", "labels": {"aco/gpu-type": "T4", "team": "x", "kubernetes.io/hostname": "n1"},
                         "annotations": {HAMI_NODE_REGISTER: "GPU-a,10,1000,100,T4,0,true:", "other": "y"}},
            "status": {"allocatable": {"cpu": "7910m", "memory": "30Gi"},
                       "capacity": {"cpu": "8", ALIYUN_GPU_MEM: "64", ALIYUN_GPU_COUNT: "4"},
                       "images": [{"names": ["x"], "sizeBytes": 1}]}
        }));
        assert_eq!(n.label_map().len(), 1);
        assert_eq!(n.label("aco/gpu-type"), Some("T4"));
        assert_eq!(n.allocatable.len(), 2);
        assert_eq!(n.capacity(ALIYUN_GPU_COUNT), Some("4"));
        assert_eq!(n.capacity("cpu"), None);
        assert!(n.annotation(HAMI_NODE_REGISTER).is_some());
        assert_eq!(n.annotation("other"), None);
        assert_eq!(
            crate::node_facts::allocatable(&n).get("cpu"),
            7_910,
            "parsed when read"
        );
    }
}
