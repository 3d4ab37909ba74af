//! What an imported trace says beyond the OpenB columns — a node's price and labels, a pod's
//! namespace, labels and annotations (the format is in [`super`]) — read back and laid over
//! the world the simulator derives from the OpenB columns. A trace without those columns (the
//! OpenB trace itself) is left exactly as derived.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use aco_core::config::Config;
use aco_core::demand::PodDemand;
use aco_core::k8s::{NodeView, PodView};
use aco_core::node_labels::{is_spot, latency_us};
use serde::Deserialize;
use serde_json::json;

use crate::cluster::{World, WorldParams};
use crate::prices::PriceTable;
use crate::trace::{self, Error};

/// A node's observed attributes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObservedNode {
    pub cost_per_hour: Option<f64>,
    pub labels: Option<BTreeMap<String, String>>,
}

/// A pod's observed attributes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObservedPod {
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct NodeExtra {
    sn: String,
    #[serde(default)]
    cost_per_hour: Option<f64>,
    #[serde(default)]
    labels: Option<String>,
}

#[derive(Deserialize)]
struct PodExtra {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<String>,
    #[serde(default)]
    annotations: Option<String>,
}

/// Reads the trace files, derives the world, gives it the extender's `config` and lays the
/// observed attributes over it (read by that config's rules).
pub fn world_from_files(
    nodes: &Path,
    pods: &Path,
    prices: &PriceTable,
    params: WorldParams,
    config: Config,
) -> Result<World, Error> {
    let mut world = World::build(
        &trace::read_nodes(nodes)?,
        &trace::read_pods(pods, 60)?,
        prices,
        params,
    );
    world.config = config;
    apply(&mut world, &read_nodes(nodes)?, &read_pods(pods)?)?;
    Ok(world)
}

fn rows<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, Error> {
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut r = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|e| fail(&e))?;
    r.deserialize()
        .collect::<Result<Vec<T>, _>>()
        .map_err(|e| fail(&e).into())
}

fn json_map(text: &str, what: &str) -> Result<BTreeMap<String, String>, Error> {
    serde_json::from_str(text)
        .map_err(|e| format!("{what}: not a JSON object of strings: {e}").into())
}

/// The node file's observed attributes, by node name (none for an OpenB file).
pub fn read_nodes(path: &Path) -> Result<HashMap<String, ObservedNode>, Error> {
    let mut out = HashMap::new();
    for row in rows::<NodeExtra>(path)? {
        let labels = match row.labels.as_deref().filter(|l| !l.trim().is_empty()) {
            Some(text) => Some(json_map(
                text,
                &format!("{}: node {} labels", path.display(), row.sn),
            )?),
            None => None,
        };
        if row.cost_per_hour.is_some() || labels.is_some() {
            out.insert(
                row.sn,
                ObservedNode {
                    cost_per_hour: row.cost_per_hour,
                    labels,
                },
            );
        }
    }
    Ok(out)
}

/// The pod file's observed attributes, by pod name (none for an OpenB file).
pub fn read_pods(path: &Path) -> Result<HashMap<String, ObservedPod>, Error> {
    let mut out = HashMap::new();
    for row in rows::<PodExtra>(path)? {
        let Some(namespace) = row.namespace.filter(|n| !n.is_empty()) else {
            continue;
        };
        let what = |field: &str| format!("{}: pod {} {field}", path.display(), row.name);
        let map = |text: &Option<String>, field: &str| match text.as_deref() {
            Some(t) if !t.trim().is_empty() => json_map(t, &what(field)),
            _ => Ok(BTreeMap::new()),
        };
        let pod = ObservedPod {
            labels: map(&row.labels, "labels")?,
            annotations: map(&row.annotations, "annotations")?,
            namespace,
        };
        if out.insert(row.name.clone(), pod).is_some() {
            return Err(format!("{}: pod {} twice", path.display(), row.name).into());
        }
    }
    Ok(out)
}

/// Derived node labels an observed node keeps only if it carries them itself: they are
/// facts about the node (spot or not, its pool's interruption band) the simulator would
/// otherwise invent.
const DERIVED_FACT_LABELS: [&str; 2] = ["aco/instance-type", "aco/spot-interruption-band"];

/// Lays the observed attributes over `world`: a node's labels over the derived ones, its
/// price; a pod's namespace, labels and annotations in place of the derived ones, its tenant,
/// workload class and latency target then read from them by the Worker's rules. The world's
/// tenants become the pods' own.
pub fn apply(
    world: &mut World,
    nodes: &HashMap<String, ObservedNode>,
    pods: &HashMap<String, ObservedPod>,
) -> Result<(), Error> {
    let config = world.config.clone();
    for node in world.nodes.iter_mut() {
        let Some(seen) = nodes.get(&node.name) else {
            continue;
        };
        if let Some(labels) = &seen.labels {
            for key in DERIVED_FACT_LABELS {
                node.labels.remove(key);
            }
            node.labels
                .extend(labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if let Some(price) = seen.cost_per_hour {
            node.price = price;
            node.labels
                .insert(config.node_keys.cost_label.clone(), format!("{price:.4}"));
        }
        node.spot = is_spot(&node.labels, &config.node_keys);
        if let Some(l) = latency_us(&node.labels, &config.node_keys) {
            node.latency_us = l;
        }
        node.json["metadata"]["labels"] = json!(node.labels);
        node.view = serde_json::from_value::<NodeView>(node.json.clone())
            .map_err(|e| format!("node {}: {e}", node.name))?;
    }
    for pod in world.pods.iter_mut() {
        let Some(seen) = pods.get(&pod.trace.name) else {
            continue;
        };
        pod.namespace = seen.namespace.clone();
        let meta = &mut pod.json["metadata"];
        meta["namespace"] = json!(seen.namespace);
        meta["labels"] = json!(seen.labels);
        meta["annotations"] = json!(seen.annotations);
        let view: PodView = serde_json::from_value(pod.json.clone())
            .map_err(|e| format!("pod {}: {e}", pod.trace.name))?;
        pod.demand = PodDemand::from_pod(&view, &config.pod_keys, &config.node_keys)
            .map_err(|e| format!("pod {}/{}: {e}", seen.namespace, pod.trace.name))?;
        pod.tenant = pod.demand.tenant.clone();
        pod.latency_target_us = pod.demand.latency_target_us;
    }
    if !pods.is_empty() {
        let tenants: std::collections::BTreeSet<String> =
            world.pods.iter().map(|p| p.tenant.clone()).collect();
        world.tenant_list = tenants.into_iter().collect();
    }
    Ok(())
}
