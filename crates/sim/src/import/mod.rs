//! A cluster's own state as a replayable trace: the nodes and pods of a
//! `kubectl get nodes,pods -o json` dump ([`kubectl`]) written as OpenB CSVs that the trace
//! reader already reads, with extra columns it ignores and [`observed`] applies, so that
//! `aco-sim run --openb-dir DIR` and `aco-sim saturate --openb-dir DIR` answer "what would the
//! colony have done on this cluster?".
//!
//! Files (in the output folder):
//! - `openb_node_list_all_node.csv` — every schedulable node; `openb_node_list_gpu_node.csv` —
//!   those with GPUs (what `saturate` fills). Columns: the OpenB ones (`sn, cpu_milli,
//!   memory_mib, gpu, model`) from `status.allocatable` less the requests of the DaemonSet and
//!   static pods running on the node (they stay wherever a scheduler puts the rest), GPUs from
//!   the first of `nvidia.com/gpu`, `alibabacloud.com/gpu-count` or
//!   `alibabacloud.com/gpu-milli` / 1000, model from the Worker's `GPU_TYPE_LABELS` (`unknown`
//!   for a GPU node without one); then `cost_per_hour` — the node's `aco/cost-per-hour` label,
//!   else the `--prices` table's on-demand price (× 0.4 for a spot node, as the simulator
//!   prices spot) — and `labels`, the node's labels as a JSON object. Cordoned nodes and nodes
//!   with a `NoSchedule`/`NoExecute` taint are left out (the simulator has no taints) and
//!   counted in the summary.
//! - `openb_pod_list_<list>.csv` (`--list`, default `cluster`) — every pod but DaemonSet and
//!   static (mirror) pods. Columns: the OpenB ones (`name, cpu_milli, memory_mib, num_gpu,
//!   gpu_milli, gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time`) with
//!   requests as kube-scheduler sums them (`aco_core::k8s::pod_request`), a GPU share
//!   (`alibabacloud.com/gpu-milli` < 1000) as one GPU's milli, `gpu_spec` from the
//!   `scheduling.aco/gpu-models` annotation, `qos` `LS` for `aco/workload-type:
//!   latency-critical`, `BE` for `batch`, else the pod's `status.qosClass`; times in seconds
//!   from the earliest pod's creation: `creation_time` = `metadata.creationTimestamp`,
//!   `scheduled_time` = the `PodScheduled` condition's time, `deletion_time` = when a finished
//!   pod's last container finished (or when a terminating pod was deleted), empty for a pod
//!   still running or pending (it never leaves); then `namespace`, `node` (where the cluster
//!   ran it), `labels` and `annotations` (JSON objects; `kubectl.kubernetes.io/
//!   last-applied-configuration` dropped). A pod name two namespaces share gets `.<namespace>`.
//!
//! Replayed ([`observed::apply`]), a node keeps its labels (the simulator's derived ones fill
//! only what it lacks: zone, latency), its price is `cost_per_hour` and it is spot only if its
//! labels say so; a pod keeps its namespace, labels and annotations, so its tenant, workload
//! class, latency target and allowed GPU models are the cluster's, read by the Worker's own
//! rules. What stays modelled: utilisation over time (the seeded load model) and spot
//! reclamations (the seeded pool model).

pub mod kubectl;
pub mod observed;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use aco_core::config::{Config, NodeKeys, PodKeys, SpotRisk};
use aco_core::k8s::{parse_resource_list, pod_request, NodeView, PodView, RawResourceList};
use aco_core::node_labels::{gpu_model, is_spot, NodeProfile};
use serde::Serialize;
use serde_json::Value;

use crate::cluster::{GPU_MILLI_RESOURCE, GPU_RESOURCE};
use crate::prices::PriceTable;
use crate::trace::{Error, TraceNode};

/// The node files' names (the OpenB trace's), and the pod list's prefix.
pub const ALL_NODES: &str = "openb_node_list_all_node.csv";
pub const GPU_NODES: &str = "openb_node_list_gpu_node.csv";
const GPU_COUNT_RESOURCE: &str = "alibabacloud.com/gpu-count";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const MIB: i64 = 1 << 20;

/// One node row: the OpenB columns, then the importer's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRow {
    pub sn: String,
    pub cpu_milli: i64,
    pub memory_mib: i64,
    pub gpu: u32,
    pub model: String,
    pub cost_per_hour: f64,
    /// The node's labels, a JSON object.
    pub labels: String,
}

/// One pod row: the OpenB columns, then the importer's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PodRow {
    pub name: String,
    pub cpu_milli: i64,
    pub memory_mib: i64,
    pub num_gpu: u32,
    pub gpu_milli: u32,
    pub gpu_spec: String,
    pub qos: String,
    pub pod_phase: String,
    pub creation_time: u64,
    pub deletion_time: Option<u64>,
    pub scheduled_time: Option<u64>,
    pub namespace: String,
    pub node: String,
    pub labels: String,
    pub annotations: String,
}

/// What the import kept and left out, for the summary it prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub nodes: usize,
    pub gpu_nodes: usize,
    pub priced_by_label: usize,
    pub priced_by_table: usize,
    /// Cordoned or tainted nodes, by name.
    pub nodes_left_out: Vec<String>,
    pub pods: usize,
    pub pods_running: usize,
    pub pods_finished: usize,
    pub pods_pending: usize,
    /// DaemonSet and static pods (their requests come off their node).
    pub per_node_pods: usize,
    /// Seconds from the first pod's creation to the last creation or finish.
    pub span_s: u64,
}

/// An imported cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub nodes: Vec<NodeRow>,
    pub pods: Vec<PodRow>,
    pub summary: Summary,
}

impl Imported {
    /// Reads the nodes and pods among `objects` (v1.Node and v1.Pod JSON); `spot_factor` prices
    /// a spot node from the table.
    /// Takes the whole Config: it reads the pod keys, node keys and spot pools.
    pub fn from_objects(
        objects: &[Value],
        prices: &PriceTable,
        spot_factor: f64,
        config: &Config,
    ) -> Result<Self, Error> {
        let kind = |o: &&Value| o["kind"].as_str().unwrap_or_default().to_string();
        let nodes: Vec<&Value> = objects.iter().filter(|o| kind(o) == "Node").collect();
        let pods: Vec<&Value> = objects.iter().filter(|o| kind(o) == "Pod").collect();
        let mut summary = Summary::default();
        let (per_node, workload): (Vec<&Value>, Vec<&Value>) =
            pods.into_iter().partition(|p| runs_on_every_node(p));
        summary.per_node_pods = per_node.len();
        let mut taken: HashMap<String, (i64, i64)> = HashMap::new();
        for p in per_node.iter().filter(|p| !is_finished(p)) {
            let Some(node) = p["spec"]["nodeName"].as_str() else {
                continue;
            };
            let r = requests(p)?;
            let t = taken.entry(node.to_string()).or_default();
            t.0 += r.get("cpu");
            t.1 += r.get("memory");
        }
        let mut node_rows = Vec::new();
        for n in nodes {
            let name = n["metadata"]["name"].as_str().unwrap_or_default();
            if left_out(n) {
                summary.nodes_left_out.push(name.to_string());
                continue;
            }
            let (cpu, mem) = taken.get(name).copied().unwrap_or_default();
            let (row, by_label) = node_row(
                n,
                cpu,
                mem,
                prices,
                spot_factor,
                &config.node_keys,
                &config.spot,
            )?;
            if by_label {
                summary.priced_by_label += 1;
            } else {
                summary.priced_by_table += 1;
            }
            node_rows.push(row);
        }
        summary.nodes = node_rows.len();
        summary.gpu_nodes = node_rows.iter().filter(|n| n.gpu > 0).count();
        let origin = workload
            .iter()
            .filter_map(|p| seconds(&p["metadata"]["creationTimestamp"]))
            .min()
            .unwrap_or(0);
        let mut names: HashMap<&str, usize> = HashMap::new();
        for p in &workload {
            *names
                .entry(p["metadata"]["name"].as_str().unwrap_or_default())
                .or_default() += 1;
        }
        let mut pod_rows = Vec::new();
        for p in &workload {
            let name = p["metadata"]["name"].as_str().unwrap_or_default();
            let unique = names[name] == 1;
            let row = pod_row(p, unique, origin, &config.pod_keys)?;
            match row.pod_phase.as_str() {
                "Succeeded" | "Failed" => summary.pods_finished += 1,
                "Pending" => summary.pods_pending += 1,
                _ => summary.pods_running += 1,
            }
            pod_rows.push(row);
        }
        pod_rows.sort_by(|a, b| (a.creation_time, &a.name).cmp(&(b.creation_time, &b.name)));
        summary.pods = pod_rows.len();
        summary.span_s = pod_rows
            .iter()
            .map(|p| p.deletion_time.unwrap_or(p.creation_time))
            .max()
            .unwrap_or(0);
        Ok(Imported {
            nodes: node_rows,
            pods: pod_rows,
            summary,
        })
    }

    /// Writes the node files and `openb_pod_list_<list>.csv` into `dir`; returns their paths.
    pub fn write(&self, dir: &Path, list: &str) -> Result<Vec<PathBuf>, Error> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let gpu: Vec<&NodeRow> = self.nodes.iter().filter(|n| n.gpu > 0).collect();
        let files = [
            dir.join(ALL_NODES),
            dir.join(GPU_NODES),
            dir.join(format!("openb_pod_list_{list}.csv")),
        ];
        write_csv(&files[0], self.nodes.iter())?;
        write_csv(&files[1], gpu.into_iter())?;
        write_csv(&files[2], self.pods.iter())?;
        Ok(files.to_vec())
    }
}

fn write_csv<T: Serialize>(path: &Path, rows: impl Iterator<Item = T>) -> Result<(), Error> {
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut w = csv::Writer::from_path(path).map_err(|e| fail(&e))?;
    for row in rows {
        w.serialize(row).map_err(|e| fail(&e))?;
    }
    w.flush().map_err(|e| fail(&e))?;
    Ok(())
}

/// DaemonSet pods and static pods run on a given node whatever the scheduler does.
fn runs_on_every_node(pod: &Value) -> bool {
    let owned_by_daemon_set = pod["metadata"]["ownerReferences"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|r| r["kind"] == "DaemonSet"));
    let mirror = pod["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string();
    owned_by_daemon_set || mirror
}

fn is_finished(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded") | Some("Failed")
    )
}

/// A node no new pod may land on: cordoned, or tainted `NoSchedule`/`NoExecute`.
fn left_out(node: &Value) -> bool {
    node["spec"]["unschedulable"] == true
        || node["spec"]["taints"].as_array().is_some_and(|t| {
            t.iter()
                .any(|t| t["effect"] == "NoSchedule" || t["effect"] == "NoExecute")
        })
}

fn object_name(o: &Value) -> String {
    let name = o["metadata"]["name"].as_str().unwrap_or("?");
    match o["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{} {ns}/{name}", o["kind"].as_str().unwrap_or("object")),
        None => format!("{} {name}", o["kind"].as_str().unwrap_or("object")),
    }
}

/// The pod's effective request, as kube-scheduler sums it.
fn requests(pod: &Value) -> Result<aco_core::k8s::ResourceAmounts, Error> {
    let view: PodView =
        serde_json::from_value(pod.clone()).map_err(|e| format!("{}: {e}", object_name(pod)))?;
    Ok(pod_request(&view).map_err(|e| format!("{}: {e}", object_name(pod)))?)
}

/// The node's row, and whether its price came from its label.
fn node_row(
    node: &Value,
    cpu_taken: i64,
    memory_taken: i64,
    prices: &PriceTable,
    spot_factor: f64,
    node_keys: &NodeKeys,
    spot: &SpotRisk,
) -> Result<(NodeRow, bool), Error> {
    let view: NodeView =
        serde_json::from_value(node.clone()).map_err(|e| format!("{}: {e}", object_name(node)))?;
    let allocatable: &RawResourceList = &view.status.allocatable;
    let amounts = parse_resource_list(allocatable, "Node.status.allocatable")
        .map_err(|e| format!("{}: {e}", object_name(node)))?;
    let labels = &view.metadata.labels;
    let gpus = [GPU_RESOURCE, GPU_COUNT_RESOURCE]
        .iter()
        .map(|r| amounts.get(r))
        .find(|n| *n > 0)
        .unwrap_or_else(|| amounts.get(GPU_MILLI_RESOURCE) / 1000);
    let gpus = u32::try_from(gpus.max(0)).unwrap_or(u32::MAX);
    let model = match gpu_model(labels, node_keys) {
        Some(m) if gpus > 0 => m.to_string(),
        None if gpus > 0 => "unknown".to_string(),
        _ => String::new(),
    };
    let cpu_milli = (amounts.get("cpu") - cpu_taken).max(0);
    let memory_mib = (amounts.get("memory") - memory_taken).max(0) / MIB;
    let profile = NodeProfile::of(labels, node_keys, spot);
    let (cost_per_hour, by_label) = match profile.cost_per_hour {
        Some(c) => (c, true),
        None => {
            // The table prices the node's shape as the cluster sells it (allocatable).
            let shape = TraceNode {
                name: view.metadata.name.clone(),
                cpu_milli: amounts.get("cpu"),
                memory_mib: amounts.get("memory") / MIB,
                gpus,
                model: (!model.is_empty()).then(|| model.clone()),
            };
            let factor = if is_spot(labels, node_keys) {
                spot_factor
            } else {
                1.0
            };
            (prices.on_demand(&shape) * factor, false)
        }
    };
    Ok((
        NodeRow {
            sn: view.metadata.name.clone(),
            cpu_milli,
            memory_mib,
            gpu: gpus,
            model,
            cost_per_hour,
            labels: serde_json::to_string(labels)?,
        },
        by_label,
    ))
}

fn pod_row(
    pod: &Value,
    unique_name: bool,
    origin: u64,
    pod_keys: &PodKeys,
) -> Result<PodRow, Error> {
    let r = requests(pod)?;
    let meta = &pod["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let namespace = meta["namespace"].as_str().unwrap_or("default");
    let labels: BTreeMap<String, String> = string_map(&meta["labels"]);
    let mut annotations: BTreeMap<String, String> = string_map(&meta["annotations"]);
    annotations.remove(LAST_APPLIED);
    let (num_gpu, gpu_milli) = if r.get(GPU_RESOURCE) > 0 {
        (r.get(GPU_RESOURCE), 1000)
    } else if r.get(GPU_COUNT_RESOURCE) > 0 {
        (r.get(GPU_COUNT_RESOURCE), 1000)
    } else {
        match r.get(GPU_MILLI_RESOURCE) {
            0 => (0, 0),
            m if m < 1000 => (1, m),
            m => ((m + 999) / 1000, 1000),
        }
    };
    let gpu_spec = annotations
        .get(&pod_keys.gpu_models_annotation)
        .map(|v| {
            v.split(['|', ','])
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .collect::<Vec<_>>()
                .join("|")
        })
        .unwrap_or_default();
    let qos = match labels.get(&pod_keys.workload_label).map(String::as_str) {
        Some("latency-critical") => "LS".to_string(),
        Some("batch") => "BE".to_string(),
        _ => pod["status"]["qosClass"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    let since = |v: &Value| seconds(v).map(|t| t.saturating_sub(origin));
    let creation_time = since(&meta["creationTimestamp"]).unwrap_or(0);
    let scheduled_time = condition(pod, "PodScheduled")
        .filter(|c| c["status"] == "True")
        .and_then(|c| since(&c["lastTransitionTime"]));
    let deletion_time = if is_finished(pod) {
        finished_at(pod).map(|t| t.saturating_sub(origin))
    } else {
        since(&meta["deletionTimestamp"])
    };
    Ok(PodRow {
        name: if unique_name {
            name.to_string()
        } else {
            format!("{name}.{namespace}")
        },
        cpu_milli: r.get("cpu"),
        memory_mib: (r.get("memory") + MIB - 1) / MIB,
        num_gpu: u32::try_from(num_gpu).unwrap_or(u32::MAX),
        gpu_milli: u32::try_from(gpu_milli).unwrap_or(u32::MAX),
        gpu_spec,
        qos,
        pod_phase: pod["status"]["phase"]
            .as_str()
            .unwrap_or("Pending")
            .to_string(),
        creation_time,
        deletion_time,
        scheduled_time,
        namespace: namespace.to_string(),
        node: pod["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        labels: serde_json::to_string(&labels)?,
        annotations: serde_json::to_string(&annotations)?,
    })
}

fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a Value> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// When a finished pod's last container finished; failing that, when it stopped being Ready.
fn finished_at(pod: &Value) -> Option<u64> {
    let containers = pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| seconds(&c["state"]["terminated"]["finishedAt"]))
        .max();
    containers
        .or_else(|| condition(pod, "Ready").and_then(|c| seconds(&c["lastTransitionTime"])))
        .or_else(|| seconds(&pod["metadata"]["deletionTimestamp"]))
}

/// An RFC 3339 timestamp (as the API server writes them, UTC) in Unix seconds.
pub fn seconds(v: &Value) -> Option<u64> {
    let t = humantime::parse_rfc3339_weak(v.as_str()?).ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs())
}
