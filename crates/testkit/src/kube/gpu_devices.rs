//! Pods asking GPUs in the OpenB trace's resources, as AcoGpuDevices and AcoFGD read them, and a
//! node's state as FGD reads it from the API alone (free CPU, free milli per GPU as the reporter
//! computes it from the pods' annotations, model): what the `tests/e2e_gpu_plugins_*.rs` suites
//! share.

use std::time::Duration;

use crate::k8s_openapi::api::core::v1::{Node, Pod};
use crate::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use crate::kube::aco_scheduler::{sample_config, GPU_MODEL_LABEL, HAMI_POD_ALLOCATED};
use crate::kube::kwok::quantity;
use crate::kube::{ControlPlane, Kube};
use crate::pods::node_of;
use aco_core::heuristic::PodGpus;
use aco_reporter::gpu_share::gpu_free_milli;
use aco_reporter::node_facts::labels_the_worker_reads;
use aco_reporter::node_record::NodeReader;
use aco_reporter::pod_record::{PodReader, PodRecord};
use serde_json::{json, Value};

/// The namespace of the GPU suites' pods.
pub const NS: &str = "gpu";
/// How long a GPU suite waits for a pod to be bound.
pub const BIND_TIMEOUT: Duration = Duration::from_secs(60);
/// The node label that keeps each pod on its scenario's nodes.
pub const GROUP: &str = "e2e-group";

/// What a pod asks, in the resources the OpenB trace uses.
#[derive(Clone, Copy, Debug)]
pub enum Ask {
    Cpu,
    Share(u32),
    /// k whole GPUs as `gpu-count: k` with `gpu-milli: k×1000` beside it.
    Whole(u32),
    /// k whole GPUs as `gpu-count: k` alone: NodeResourcesFit checks only the count.
    CountOnly(u32),
}

impl Ask {
    pub fn gpus(self, cpu_milli: i64) -> PodGpus {
        let (num_gpu, gpu_milli) = match self {
            Ask::Cpu => (0, 0),
            Ask::Share(m) => (1, m),
            Ask::Whole(k) | Ask::CountOnly(k) => (k, 1000),
        };
        PodGpus {
            cpu_milli,
            num_gpu,
            gpu_milli,
        }
    }
}

/// A GPU pod as [`gpu_pod`] builds it.
pub struct PodSpec<'a> {
    pub name: &'a str,
    pub scheduler: &'a str,
    pub group: &'a str,
    pub cpu_milli: i64,
    pub ask: Ask,
    pub annotations: Value,
    pub node_name: Option<&'a str>,
}

/// A pod asking `p.ask` in OpenB's GPU resources (limits = the GPU requests).
pub fn gpu_pod(p: PodSpec) -> Value {
    let mut gpus = serde_json::Map::new();
    match p.ask {
        Ask::Cpu => {}
        Ask::Share(m) => {
            gpus.insert("alibabacloud.com/gpu-milli".into(), m.to_string().into());
        }
        Ask::Whole(k) => {
            gpus.insert("alibabacloud.com/gpu-count".into(), k.to_string().into());
            gpus.insert(
                "alibabacloud.com/gpu-milli".into(),
                (k * 1000).to_string().into(),
            );
        }
        Ask::CountOnly(k) => {
            gpus.insert("alibabacloud.com/gpu-count".into(), k.to_string().into());
        }
    }
    let mut requests = gpus.clone();
    requests.insert("cpu".into(), format!("{}m", p.cpu_milli).into());
    requests.insert("memory".into(), "1Gi".into());
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": p.name, "namespace": NS, "annotations": p.annotations},
        "spec": {
            "schedulerName": p.scheduler,
            "nodeSelector": {GROUP: p.group},
            "nodeName": p.node_name,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": requests, "limits": gpus}}],
        },
    })
}

/// The pod's annotation `key`.
pub fn annotation<'a>(p: &'a Pod, key: &str) -> Option<&'a str> {
    p.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// One node's state as FGD reads it, from the API alone: free CPU (allocatable − the requests of
/// its pods), free milli per GPU as the reporter computes it from the pods' annotations, model.
pub struct NodeState {
    pub name: String,
    pub model: Option<String>,
    pub cpu_free: i64,
    pub gpu_free: Vec<u32>,
}

/// The state of each named node, from the API alone.
pub async fn node_states(kube: &Kube, names: &[&str]) -> Vec<NodeState> {
    let pods = kube.typed_pods(NS).await;
    let config = aco_core::config::Config::default();
    let strings = std::sync::Arc::default();
    let pod_reader = PodReader::new(&config.pod_keys, None, std::sync::Arc::clone(&strings));
    let node_reader = NodeReader::new(
        &labels_the_worker_reads(&config.node_keys),
        "aco/latency-us",
        strings,
    );
    let mut out = Vec::new();
    for name in names {
        let node: Node = kube.try_node(name).await.expect("the node");
        let on: Vec<&Pod> = pods.iter().filter(|p| node_of(p) == Some(*name)).collect();
        let requested: i64 = on
            .iter()
            .map(|p| {
                let resources = p
                    .spec
                    .as_ref()
                    .and_then(|s| s.containers[0].resources.as_ref());
                milli(resources.and_then(|r| r.requests.as_ref()?.get("cpu")))
            })
            .sum();
        // Read into the reporter's records, as its watches do.
        let records: Vec<PodRecord> = on.iter().map(|p| pod_reader.read(p)).collect();
        let refs: Vec<&PodRecord> = records.iter().collect();
        let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        out.push(NodeState {
            name: name.to_string(),
            model: node
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(GPU_MODEL_LABEL))
                .cloned(),
            cpu_free: milli(allocatable.and_then(|a| a.get("cpu"))) - requested,
            gpu_free: gpu_free_milli(&node_reader.read(&node), &refs)
                .expect("the node registers its GPUs"),
        });
    }
    out
}

/// A CPU quantity in milli-CPUs.
pub fn milli(q: Option<&Quantity>) -> i64 {
    (quantity(&q.expect("a CPU quantity").0).unwrap() * 1000.0).round() as i64
}

/// The device indices a bound pod's annotation names (ids are `<node>-gpu<i>`).
pub fn allocated_gpus(pod: &Pod) -> Vec<usize> {
    let text = annotation(pod, HAMI_POD_ALLOCATED)
        .unwrap_or_else(|| panic!("{:?} has no {HAMI_POD_ALLOCATED}", pod.metadata.name));
    text.split([';', ':'])
        .filter(|e| !e.is_empty())
        .map(|e| {
            let id = e.split(',').next().unwrap();
            id.rsplit_once("-gpu").unwrap().1.parse().unwrap()
        })
        .collect()
}

/// The node `name` is bound to and the bound pod.
pub async fn bound_pod(kube: &Kube, name: &str) -> (String, Pod) {
    let node = kube.wait_bound(NS, name, BIND_TIMEOUT).await;
    // PreBind's patch precedes the binding: the bound pod carries it.
    (node, kube.pod(NS, name).await)
}

/// `aco-kube-scheduler` as `name` with the sample configuration.
pub async fn start(cp: &ControlPlane, name: &str) -> crate::kube::Server {
    cp.start_aco_scheduler(name, &sample_config(&cp.kubeconfig))
        .await
}
