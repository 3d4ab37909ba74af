//! Turns trace rows into the objects a real cluster would show kube-scheduler and the extender:
//! `v1.Node` JSON with the extender's labels, `v1.Pod` JSON with requests, workload class,
//! tenant and GPU-model annotation. Every derived attribute is seeded and documented here.
//!
//! * **GPU model** `aco/gpu-type` = trace model. **Price** `aco/cost-per-hour` from the price
//!   table; a seeded `spot_share` of nodes is `aco/instance-type=spot` at `spot_factor` × price,
//!   the rest `on-demand`.
//! * **Latency model** `aco/latency-us`: each node sits in one of three zones (seeded, uniform):
//!   `zone-a` 100 µs, `zone-b` 250 µs, `zone-c` 600 µs base round-trip, times a seeded factor in
//!   [0.8, 1.25). Static over the run (the reporter sends the same value as a fact).
//! * **GPUs**: whole-GPU pods request `nvidia.com/gpu: n`; GPU-sharing pods (one GPU, `gpu_milli`
//!   < 1000) request `alibabacloud.com/gpu-milli: m` (the extended resource of Alibaba's GPU-share
//!   device plugin; nodes advertise `1000 × GPUs` of it). The simulated kube-scheduler places
//!   shares per physical GPU (a share must fit in one GPU's free milli); the extender (core
//!   filter) sees node totals, with `alibabacloud.com/gpu-milli` added to `GPU_RESOURCES`.
//! * **Workload**: qos `LS` → `aco/workload-type: latency-critical`, `BE` → `batch`, others
//!   unlabelled. A seeded `latency_target_share` of LS pods carries
//!   `scheduling.aco/latency-target-us: <latency_target_us>`.
//! * **GPU spec** `gpu_spec` → annotation `scheduling.aco/gpu-models` (`V100M16|V100M32`).
//! * **Tenants**: each pod is assigned (seeded, uniform) to one of `tenants` tenants `team-a`,
//!   `team-b`, …; namespace and label `scheduling.aco/tenant-id` both carry it.

use std::collections::BTreeMap;

use aco_core::config::{Config, NodeKeys, PodKeys};
use aco_core::demand::PodDemand;
use aco_core::k8s::{NodeView, PodView};
use aco_core::names::PodKey;
use serde_json::{json, Value};

use crate::prices::PriceTable;
use crate::rng;
use crate::trace::{TraceNode, TracePod};

pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
pub const GPU_MILLI_RESOURCE: &str = "alibabacloud.com/gpu-milli";

/// Knobs of the derived world; `Default` = the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldParams {
    pub seed: u64,
    pub tenants: usize,
    pub spot_share: f64,
    pub spot_factor: f64,
    pub latency_target_share: f64,
    pub latency_target_us: f64,
}

impl Default for WorldParams {
    fn default() -> Self {
        Self {
            seed: 1,
            tenants: 3,
            spot_share: 0.2,
            spot_factor: 0.4,
            latency_target_share: 0.3,
            latency_target_us: 300.0,
        }
    }
}

/// The extender config the simulator (and a replayed Worker) runs with: the design defaults plus
/// the GPU-share resource (Worker var `GPU_RESOURCES=nvidia.com/gpu,alibabacloud.com/gpu-count,alibabacloud.com/gpu-milli`).
pub fn sim_config() -> Config {
    let mut c = Config::default();
    if !c
        .node_keys
        .gpu_resources
        .iter()
        .any(|r| r == GPU_MILLI_RESOURCE)
    {
        c.node_keys
            .gpu_resources
            .push(GPU_MILLI_RESOURCE.to_string());
    }
    c
}

/// [`sim_config`] with Worker `[vars]` given as `KEY=VALUE` on top (`aco-sim --var`), parsed
/// by the Worker's own `Config::from_vars`; a bad var is an error naming it.
pub fn sim_config_with(vars: &[String]) -> Result<Config, String> {
    let mut map: std::collections::BTreeMap<String, String> = worker_vars()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    for var in vars {
        let (key, value) = var
            .split_once('=')
            .ok_or_else(|| format!("--var {var:?}: expected KEY=VALUE"))?;
        map.insert(key.trim().to_string(), value.to_string());
    }
    Config::from_vars(|k| map.get(k).cloned()).map_err(|e| e.to_string())
}

/// The Worker `[vars]` that make it run [`sim_config`].
pub fn worker_vars() -> Vec<(&'static str, String)> {
    vec![(
        "GPU_RESOURCES",
        sim_config().node_keys.gpu_resources.join(","),
    )]
}

#[derive(Debug, Clone)]
pub struct SimNode {
    pub idx: usize,
    pub name: String,
    pub cpu_milli: i64,
    pub memory_mib: i64,
    pub gpus: u32,
    pub model: Option<String>,
    pub price: f64,
    pub spot: bool,
    pub zone: &'static str,
    pub latency_us: f64,
    pub labels: BTreeMap<String, String>,
    pub allocatable: BTreeMap<String, String>,
    /// The `v1.Node` object as kube-scheduler would send it.
    pub json: Value,
    pub view: NodeView,
}

#[derive(Debug, Clone)]
pub struct SimPod {
    pub idx: usize,
    pub trace: TracePod,
    pub uid: PodKey,
    pub namespace: String,
    pub tenant: String,
    pub ls: bool,
    pub latency_target_us: Option<f64>,
    /// The `v1.Pod` object.
    pub json: Value,
    pub demand: PodDemand,
}

impl SimPod {
    pub fn arrival_s(&self) -> u64 {
        self.trace.creation_s
    }
}

pub struct World {
    pub params: WorldParams,
    pub config: Config,
    pub nodes: Vec<SimNode>,
    pub pods: Vec<SimPod>,
    /// The tenants, in order: `team-a`, `team-b`, … for a trace, an imported cluster's own
    /// (`crate::import::observed`).
    pub tenant_list: Vec<String>,
}

const ZONES: [(&str, f64); 3] = [("zone-a", 100.0), ("zone-b", 250.0), ("zone-c", 600.0)];

/// The shipped OpenB sample (`data/openb-sample` under the repository `root`, prices from
/// `data/prices`) as a world of `seed`: what the replay tests run against the Worker.
pub fn sample_world(root: &std::path::Path, seed: u64) -> Result<World, crate::trace::Error> {
    let nodes = crate::trace::read_nodes(&root.join("data/openb-sample/nodes.csv"))?;
    let pods = crate::trace::read_pods(&root.join("data/openb-sample/pods.csv"), 60)?;
    let prices = PriceTable::load(&root.join("data/prices"))?;
    Ok(World::build(
        &nodes,
        &pods,
        &prices,
        WorldParams {
            seed,
            ..WorldParams::default()
        },
    ))
}

pub fn tenant_name(i: usize) -> String {
    format!("team-{}", (b'a' + (i % 26) as u8) as char)
}

impl World {
    pub fn build(
        nodes: &[TraceNode],
        pods: &[TracePod],
        prices: &PriceTable,
        params: WorldParams,
    ) -> Self {
        let config = sim_config();
        let seed = params.seed;
        let nodes = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| make_node(i, n, prices, &params))
            .collect();
        let mut pods: Vec<SimPod> = pods
            .iter()
            .enumerate()
            .map(|(i, p)| make_pod(i, p, &params, &config.pod_keys, &config.node_keys))
            .collect();
        pods.sort_by_key(|p| (p.trace.creation_s, p.idx));
        let _ = seed;
        World {
            tenant_list: (0..params.tenants.max(1)).map(tenant_name).collect(),
            params,
            config,
            nodes,
            pods,
        }
    }

    pub fn tenants(&self) -> Vec<String> {
        self.tenant_list.clone()
    }

    /// First arrival to last departure (or last arrival + 1 h for pods that never leave).
    pub fn span_s(&self) -> (u64, u64) {
        let start = self
            .pods
            .iter()
            .map(|p| p.trace.creation_s)
            .min()
            .unwrap_or(0);
        let end = self
            .pods
            .iter()
            .map(|p| p.trace.deletion_s.unwrap_or(p.trace.creation_s + 3600))
            .max()
            .unwrap_or(start);
        (start, end.max(start))
    }
}

fn make_node(idx: usize, n: &TraceNode, prices: &PriceTable, p: &WorldParams) -> SimNode {
    let k = rng::key(&n.name);
    let spot = rng::unit(&[p.seed, k, 1]) < p.spot_share;
    let price = prices.on_demand(n) * if spot { p.spot_factor } else { 1.0 };
    let (zone, base) = ZONES[(rng::hash(&[p.seed, k, 2]) % 3) as usize];
    let latency_us = (base * rng::range(&[p.seed, k, 3], 0.8, 1.25)).round();
    let mut labels = BTreeMap::new();
    labels.insert("kubernetes.io/hostname".to_string(), n.name.clone());
    labels.insert("kubernetes.io/os".to_string(), "linux".to_string());
    labels.insert("topology.kubernetes.io/zone".to_string(), zone.to_string());
    labels.insert("aco/cost-per-hour".to_string(), format!("{price:.4}"));
    labels.insert("aco/latency-us".to_string(), format!("{latency_us}"));
    labels.insert(
        "aco/instance-type".to_string(),
        if spot { "spot" } else { "on-demand" }.to_string(),
    );
    let model = n.model.as_deref();
    labels.insert(
        "node.kubernetes.io/instance-type".to_string(),
        crate::spot_pool::instance_type(model, n.gpus, n.cpu_milli, n.memory_mib),
    );
    if spot {
        // The pool's Spot Advisor band, as a platform team labels its spot node pools: the
        // extender's prior for the interruption rate the engine then draws reclamations from.
        let monthly =
            crate::spot_pool::pool_frequency(p.seed, model, n.gpus, n.cpu_milli, n.memory_mib);
        labels.insert(
            "aco/spot-interruption-band".to_string(),
            crate::spot_pool::band_label(monthly).to_string(),
        );
    }
    if let Some(m) = &n.model {
        labels.insert("aco/gpu-type".to_string(), m.clone());
        labels.insert("alibabacloud.com/gpu-card-model".to_string(), m.clone());
    }
    let mut allocatable = BTreeMap::new();
    allocatable.insert("cpu".to_string(), format!("{}m", n.cpu_milli));
    allocatable.insert("memory".to_string(), format!("{}Mi", n.memory_mib));
    allocatable.insert("pods".to_string(), "110".to_string());
    if n.gpus > 0 {
        allocatable.insert(GPU_RESOURCE.to_string(), n.gpus.to_string());
        allocatable.insert(GPU_MILLI_RESOURCE.to_string(), (n.gpus * 1000).to_string());
    }
    let json = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": n.name, "uid": format!("node-{:016x}", rng::hash(&[k, 9])), "labels": labels},
        "spec": {},
        "status": {"capacity": allocatable, "allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True"}]}
    });
    let view: NodeView = serde_json::from_value(json.clone()).expect("node json");
    SimNode {
        idx,
        name: n.name.clone(),
        cpu_milli: n.cpu_milli,
        memory_mib: n.memory_mib,
        gpus: n.gpus,
        model: n.model.clone(),
        price,
        spot,
        zone,
        latency_us,
        labels,
        allocatable,
        json,
        view,
    }
}

fn uid(seed: u64, k: u64) -> String {
    let a = rng::hash(&[seed, k, 11]);
    let b = rng::hash(&[seed, k, 12]);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

fn make_pod(
    idx: usize,
    t: &TracePod,
    p: &WorldParams,
    pod_keys: &PodKeys,
    node_keys: &NodeKeys,
) -> SimPod {
    let k = rng::key(&t.name);
    let tenant = tenant_name((rng::hash(&[p.seed, k, 4]) % p.tenants.max(1) as u64) as usize);
    let ls = t.is_ls();
    let latency_target_us =
        (ls && rng::unit(&[p.seed, k, 5]) < p.latency_target_share).then_some(p.latency_target_us);
    let mut labels = BTreeMap::new();
    labels.insert("app".to_string(), t.name.clone());
    labels.insert("scheduling.aco/tenant-id".to_string(), tenant.clone());
    match t.qos.as_str() {
        "LS" => {
            labels.insert(
                "aco/workload-type".to_string(),
                "latency-critical".to_string(),
            );
        }
        "BE" => {
            labels.insert("aco/workload-type".to_string(), "batch".to_string());
        }
        _ => {}
    }
    let mut annotations = BTreeMap::new();
    if let Some(spec) = &t.gpu_spec {
        annotations.insert("scheduling.aco/gpu-models".to_string(), spec.join("|"));
    }
    if let Some(target) = latency_target_us {
        annotations.insert(
            "scheduling.aco/latency-target-us".to_string(),
            format!("{target}"),
        );
    }
    annotations.insert("openb.alibaba.com/qos".to_string(), t.qos.clone());
    let mut requests = BTreeMap::new();
    requests.insert("cpu".to_string(), format!("{}m", t.cpu_milli));
    requests.insert("memory".to_string(), format!("{}Mi", t.memory_mib));
    let mut limits = BTreeMap::new();
    if t.num_gpu > 0 {
        if t.is_gpu_share() {
            requests.insert(GPU_MILLI_RESOURCE.to_string(), t.gpu_milli.to_string());
            limits.insert(GPU_MILLI_RESOURCE.to_string(), t.gpu_milli.to_string());
        } else {
            requests.insert(GPU_RESOURCE.to_string(), t.num_gpu.to_string());
            limits.insert(GPU_RESOURCE.to_string(), t.num_gpu.to_string());
        }
    }
    let uid = PodKey::try_from(uid(p.seed, k)).expect("a made UID is a pod key");
    let json = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": t.name, "namespace": tenant, "uid": uid, "labels": labels, "annotations": annotations},
        "spec": {"schedulerName": "aco-scheduler",
                 "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                 "resources": {"requests": requests, "limits": limits}}]},
        "status": {"phase": "Pending"}
    });
    let view: PodView = serde_json::from_value(json.clone()).expect("pod json");
    let demand = PodDemand::from_pod(&view, pod_keys, node_keys).expect("derived pods are valid");
    SimPod {
        idx,
        trace: t.clone(),
        uid,
        namespace: tenant.clone(),
        tenant,
        ls,
        latency_target_us,
        json,
        demand,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace_node(name: &str, gpus: u32, model: Option<&str>) -> TraceNode {
        TraceNode {
            name: name.into(),
            cpu_milli: 32000,
            memory_mib: 131072,
            gpus,
            model: model.map(String::from),
        }
    }

    #[test]
    fn derived_objects_carry_what_the_core_reads() {
        let prices = PriceTable::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/prices"),
        )
        .unwrap();
        let pod = TracePod {
            name: "p".into(),
            cpu_milli: 6000,
            memory_mib: 12288,
            num_gpu: 1,
            gpu_milli: 460,
            gpu_spec: Some(vec!["V100M16".into(), "V100M32".into()]),
            qos: "LS".into(),
            creation_s: 0,
            deletion_s: Some(10),
        };
        let w = World::build(
            &[
                trace_node("n0", 4, Some("V100M16")),
                trace_node("n1", 0, None),
            ],
            &[pod],
            &prices,
            WorldParams::default(),
        );
        let d = &w.pods[0].demand;
        assert!(d.workload.is_latency_critical());
        assert_eq!(d.gpus, vec![(GPU_MILLI_RESOURCE.to_string(), 460)]);
        assert_eq!(d.allowed_gpu_models.as_ref().unwrap().len(), 2);
        assert!(d.tenant.starts_with("team-"));
        let n = &w.nodes[0];
        assert_eq!(n.view.metadata.labels["aco/gpu-type"], "V100M16");
        assert!(n.labels["aco/cost-per-hour"].parse::<f64>().unwrap() > 0.0);
        assert!(!w.nodes[1].labels.contains_key("aco/gpu-type"));
        // Same seed, same world.
        let w2 = World::build(
            &[trace_node("n0", 4, Some("V100M16"))],
            &[],
            &prices,
            WorldParams::default(),
        );
        assert_eq!(w2.nodes[0].latency_us, n.latency_us);
    }
}
