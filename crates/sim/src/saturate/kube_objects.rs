//! The saturation protocol's cluster and workload as the Kubernetes objects a real kube-scheduler
//! schedules (the real-kube replay, `benches/trace_replay.rs`): the same nodes with the same
//! labels and prices the simulator gives them ([`crate::cluster`]), and the same pods in the
//! same arrival order ([`super::workload`]), so that a figure from the replay and one from
//! `aco-sim saturate` are about the same cluster and the same workload.
//!
//! * **Nodes**: the simulator's labels (`aco/cost-per-hour`, `aco/instance-type`, spot band,
//!   `aco/latency-us`, zone, `aco/gpu-type` and OpenB's `alibabacloud.com/gpu-card-model`);
//!   allocatable as OpenB's node list has it (`alibabacloud.com/gpu-count`, `-milli`, 1001 pods:
//!   the protocol has no pod-count limit); the HAMi device annotation with one device per GPU,
//!   which the device-accounting plugin and the reporter read.
//! * **Pods**: a GPU share requests `alibabacloud.com/gpu-milli: m` alone; k whole GPUs
//!   `alibabacloud.com/gpu-count: k` and `alibabacloud.com/gpu-milli: 1000k`, so the aggregate
//!   that kube-scheduler's NodeResourcesFit, the reporter's `requested` and the Worker's filter
//!   count is the GPU milli held whichever way it is asked. A `gpu_spec` is both the annotation
//!   the Worker reads (`scheduling.aco/gpu-models`) and required node affinity on the GPU-model
//!   label, so configurations without the extender respect it too (the protocol's fit checks
//!   it for GPU pods only, and so do these pods). Tenant, workload class and QoS as the simulator
//!   derives them; **no latency target**: the protocol has no latency constraint, and the
//!   Worker's filter would otherwise refuse nodes the other configurations may use.
//! * **Order**: kube-scheduler's queue pops the pod of highest priority first, then the oldest;
//!   pods that exist when it starts reach it in no particular order (its initial watch-list is
//!   not sorted), and pods created one at a time while it runs arrive no faster than the API
//!   server takes them (12 pods/s here under load: 15 minutes for one configuration). So each pod
//!   carries its arrival rank as `spec.priority` ([`arrival_priority`]: earlier is higher) and
//!   `preemptionPolicy: Never`, all are created before kube-scheduler starts (in parallel), and
//!   it takes them exactly in the protocol's order. Priority decides nothing else here: no score
//!   plugin reads it, and without preemption no pod displaces another (the protocol has none).
//!   The test control plane lets pods give their own priority (the Priority admission plugin
//!   off, `ControlPlaneOptions::priority_in_pod_spec`); a real cluster would need one
//!   PriorityClass per rank. Names `p-000000`, `p-000001`, … follow the same order.

use std::path::Path;

use aco_core::heuristic::PodShape;
use serde_json::{json, Map, Value};

use super::node::{PodClass, SatNode};
use super::Arrivals;
use crate::cluster::{SimNode, SimPod, World, WorldParams, GPU_MILLI_RESOURCE};

pub const GPU_COUNT_RESOURCE: &str = "alibabacloud.com/gpu-count";
/// OpenB's GPU-model node label (the simulator sets it beside `aco/gpu-type`).
pub const GPU_MODEL_LABEL: &str = "alibabacloud.com/gpu-card-model";
/// HAMi's node device list (read by the reporter's `gpu_share.rs` and the device plugin).
pub const HAMI_NODE_REGISTER: &str = "hami.io/node-nvidia-register";
/// HAMi's per-pod allocation, `uuid,type,usedmem,usedcores` per device.
pub const HAMI_POD_ALLOCATED: &str = "hami.io/vgpu-devices-allocated";
/// Device memory registered per GPU (MiB): 1000 makes a device's memory and its milli-GPU the
/// same number, so no share is rounded on its way through the annotations.
pub const DEVICE_MEMORY: u32 = 1000;
/// The annotation the simulator's latency-target pods carry (dropped here, see above).
const LATENCY_TARGET_ANNOTATION: &str = "scheduling.aco/latency-target-us";

/// The name of the pod arriving `i`-th: sorts in arrival order.
pub fn pod_name(i: usize) -> String {
    format!("p-{i:06}")
}

/// The HAMi device id of GPU `i` of `node`.
pub fn device_id(node: &str, i: u32) -> String {
    format!("GPU-{node}-{i}")
}

/// HAMi's node annotation (the JSON list newer releases write): one healthy device per GPU.
pub fn hami_register(n: &SimNode) -> String {
    let model = n.model.clone().unwrap_or_default();
    let devices: Vec<Value> = (0..n.gpus)
        .map(|i| {
            json!({"id": device_id(&n.name, i), "index": i, "count": 10, "devmem": DEVICE_MEMORY,
                   "devcore": 100, "type": model, "numa": 0, "health": true})
        })
        .collect();
    Value::Array(devices).to_string()
}

/// The node as a `v1.Node` with its status (create it with the status in one request).
pub fn node_object(n: &SimNode) -> Value {
    let mut resources = Map::new();
    resources.insert("cpu".into(), format!("{}m", n.cpu_milli).into());
    resources.insert("memory".into(), format!("{}Mi", n.memory_mib).into());
    resources.insert("pods".into(), "1001".into());
    if n.gpus > 0 {
        resources.insert(GPU_COUNT_RESOURCE.into(), n.gpus.to_string().into());
        resources.insert(
            GPU_MILLI_RESOURCE.into(),
            (1000 * n.gpus).to_string().into(),
        );
    }
    let mut annotations = Map::new();
    if n.gpus > 0 {
        annotations.insert(HAMI_NODE_REGISTER.into(), hami_register(n).into());
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": n.name, "labels": n.labels, "annotations": annotations},
        "status": {"allocatable": resources, "capacity": resources},
    })
}

/// The priority of the pod arriving `i`-th of `n`: earlier is higher.
pub fn arrival_priority(i: usize, n: usize) -> i64 {
    (n - i.min(n)) as i64
}

/// The pod arriving `i`-th of `n`, as `v1.Pod` in `namespace` for `scheduler`.
pub fn pod_object(p: &SimPod, i: usize, n: usize, namespace: &str, scheduler: &str) -> Value {
    let t = &p.trace;
    let meta = &p.json["metadata"];
    let labels = meta["labels"].clone();
    let mut annotations = meta["annotations"].as_object().cloned().unwrap_or_default();
    annotations.remove(LATENCY_TARGET_ANNOTATION);
    let mut requests = Map::new();
    requests.insert("cpu".into(), format!("{}m", t.cpu_milli).into());
    requests.insert("memory".into(), format!("{}Mi", t.memory_mib).into());
    let class = PodClass::of(t);
    match class {
        PodClass::NoGpu => {}
        PodClass::Share => {
            requests.insert(GPU_MILLI_RESOURCE.into(), t.gpu_milli.to_string().into());
        }
        PodClass::Whole(k) => {
            requests.insert(GPU_COUNT_RESOURCE.into(), k.to_string().into());
            requests.insert(GPU_MILLI_RESOURCE.into(), (1000 * k).to_string().into());
        }
    }
    let gpu_spec = t.gpu_spec.as_ref().filter(|_| class != PodClass::NoGpu);
    if gpu_spec.is_none() {
        annotations.remove("scheduling.aco/gpu-models");
    }
    // Extended resources may not be overcommitted: their limits equal the requests.
    let limits: Map<String, Value> = requests
        .iter()
        .filter(|(k, _)| k.contains('/'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut spec = json!({
        "schedulerName": scheduler,
        "priority": arrival_priority(i, n),
        "preemptionPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": requests, "limits": limits}}],
    });
    if let Some(models) = gpu_spec {
        spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": GPU_MODEL_LABEL, "operator": "In", "values": models}]}]}}});
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name(i), "namespace": namespace, "labels": labels,
                     "annotations": annotations},
        "spec": spec,
    })
}

/// The cluster's GPU capacity in milli-GPU.
pub fn capacity_milli(world: &World) -> f64 {
    world.nodes.iter().map(|n| 1000.0 * f64::from(n.gpus)).sum()
}

/// The protocol's figures of a replay: `bound[i]` says whether the pod arriving `i`-th (pod
/// `order[i]` of the world) was bound. (curve, allocation at 100% arrived, at 130%.)
pub fn replay_arrivals(
    world: &World,
    order: &[usize],
    bound: &[bool],
) -> (Vec<(f64, f64)>, f64, f64) {
    let mut arrivals = Arrivals::new(capacity_milli(world));
    for (&pi, &b) in order.iter().zip(bound) {
        let t = &world.pods[pi].trace;
        let allocated = if b { PodClass::allocated_milli(t) } else { 0 };
        arrivals.arrive(t.gpu_units() * 1000.0, f64::from(allocated));
    }
    arrivals.finish()
}

/// The index in arrival order where `percent`% of the capacity has arrived (the first pod at or
/// past it; `order.len()` when the order stops short).
pub fn arrived_index(world: &World, order: &[usize], percent: f64) -> usize {
    let capacity = capacity_milli(world);
    let mut arrived = 0.0;
    for (i, &pi) in order.iter().enumerate() {
        arrived += world.pods[pi].trace.gpu_units() * 1000.0;
        if 100.0 * arrived / capacity >= percent {
            return i;
        }
    }
    order.len()
}

/// One replay's cluster and workload: the world as `aco-sim saturate` builds it, the pods in
/// the seed's order up to the first at or past 130% arrived (later ones change no figure), and
/// the trace's typical shapes (FGD's, by the simulator's rule).
pub struct Replay {
    pub world: World,
    pub seed: u64,
    /// Indices into `world.pods`, in arrival order.
    pub order: Vec<usize>,
    pub shapes: Vec<PodShape>,
}

impl Replay {
    pub fn new(world: World, seed: u64) -> Self {
        let mut order = super::workload(&world, seed, capacity_milli(&world));
        let end = arrived_index(&world, &order, 130.0);
        order.truncate((end + 1).min(order.len()));
        let shapes = super::shapes_of(&world);
        Replay {
            world,
            seed,
            order,
            shapes,
        }
    }

    /// The world of the node list `nodes_csv` (every `every`-th GPU node, 1 = all) and the pod list
    /// `pods_csv`, priced from `prices_dir`, as `aco-sim saturate` builds it (world seed 1).
    pub fn load(
        nodes_csv: &Path,
        pods_csv: &Path,
        prices_dir: &Path,
        every: usize,
        seed: u64,
    ) -> Result<Self, crate::trace::Error> {
        let nodes: Vec<_> = crate::trace::read_nodes(nodes_csv)?
            .into_iter()
            .filter(|n| n.gpus > 0)
            .step_by(every.max(1))
            .collect();
        let pods = crate::trace::read_pods(pods_csv, 60)?;
        let prices = crate::prices::PriceTable::load(prices_dir)?;
        let world = World::build(
            &nodes,
            &pods,
            &prices,
            WorldParams {
                seed: 1,
                ..WorldParams::default()
            },
        );
        Ok(Replay::new(world, seed))
    }

    pub fn nodes(&self) -> Vec<Value> {
        self.world.nodes.iter().map(node_object).collect()
    }

    pub fn pods(&self, namespace: &str, scheduler: &str) -> Vec<Value> {
        self.order
            .iter()
            .enumerate()
            .map(|(i, &pi)| {
                pod_object(
                    &self.world.pods[pi],
                    i,
                    self.order.len(),
                    namespace,
                    scheduler,
                )
            })
            .collect()
    }

    pub fn gpus(&self) -> u32 {
        self.world.nodes.iter().map(|n| n.gpus).sum()
    }

    /// The typical shapes as the FGD plugin's arguments take them.
    pub fn shapes_json(&self) -> Value {
        shapes_json(&self.shapes)
    }

    /// (curve, allocation at 100% arrived, at 130%) of a replay where `bound[i]` says whether the
    /// pod arriving `i`-th was bound.
    pub fn figures(&self, bound: &[bool]) -> (Vec<(f64, f64)>, f64, f64) {
        replay_arrivals(&self.world, &self.order, bound)
    }

    pub fn audit(&self, bound: &[Option<BoundPod>]) -> Audit {
        audit(&self.world, &self.order, bound)
    }

    /// The node list as run (`aco-sim saturate` reads a variant's nodes from its folder).
    pub fn node_csv(&self) -> String {
        let mut csv = String::from("sn,cpu_milli,memory_mib,gpu,model\n");
        for n in &self.world.nodes {
            csv += &format!(
                "{},{},{},{},{}\n",
                n.name,
                n.cpu_milli,
                n.memory_mib,
                n.gpus,
                n.model.clone().unwrap_or_default()
            );
        }
        csv
    }
}

/// Typical shapes as a JSON list of `{cpuMilli, numGpu, gpuMilli, gpuModels?, frequency}`, as the
/// FGD plugin's `typicalShapes` take them (`gpuModels` only on shapes constrained to models).
pub fn shapes_json(shapes: &[PodShape]) -> Value {
    shapes
        .iter()
        .map(|s| {
            let mut v = json!({"cpuMilli": s.cpu_milli, "numGpu": s.num_gpu,
                               "gpuMilli": s.gpu_milli, "frequency": s.freq});
            if let Some(models) = &s.gpu_models {
                v["gpuModels"] = json!(models);
            }
            v
        })
        .collect()
}

/// The devices a pod's HAMi allocation names on `node`: (GPU index, milli-GPU taken), from
/// `uuid,type,usedmem,usedcores` per device (devices joined by `:`, containers by `;`); memory is
/// milli-GPU here ([`DEVICE_MEMORY`]). Devices of other nodes or unreadable entries: `Err`.
pub fn parse_allocation(node: &str, text: &str) -> Result<Vec<(usize, u32)>, String> {
    let prefix = format!("GPU-{node}-");
    text.split([';', ':'])
        .filter(|e| !e.trim().is_empty())
        .map(|entry| {
            let f: Vec<&str> = entry.split(',').map(str::trim).collect();
            let index = f
                .first()
                .and_then(|id| id.strip_prefix(&prefix))
                .and_then(|i| i.parse().ok());
            let milli = f.get(2).and_then(|m| m.parse().ok());
            index
                .zip(milli)
                .ok_or_else(|| format!("{node}: allocation entry {entry:?}"))
        })
        .collect()
}

/// A replayed pod as the API server shows it at the end: bound to `node`, with the device
/// plugin's allocation annotation if it wrote one.
#[derive(Debug, Clone, Copy)]
pub struct BoundPod<'a> {
    pub node: &'a str,
    pub allocation: Option<&'a str>,
}

impl<'a> BoundPod<'a> {
    /// A pod bound to `node` with its `annotations` (the device plugin's allocation among them).
    pub fn of(node: &'a str, annotations: &'a std::collections::BTreeMap<String, String>) -> Self {
        BoundPod {
            node,
            allocation: annotations.get(HAMI_POD_ALLOCATED).map(String::as_str),
        }
    }
}

/// What the final state of a replay says about the scheduler that made it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Audit {
    /// Nodes or GPUs holding more than they have (must be none).
    pub overcommitted: Vec<String>,
    /// GPU pods bound without a device allocation (a scheduler without device accounting).
    pub without_devices: usize,
    /// Pods left unbound that fit on some node of the final state: a scheduler with exact
    /// accounting has none (nodes only fill), an extender that refused a node that fitted has.
    pub unbound_that_fit: usize,
}

/// Rebuilds every node from the pods bound to it (`bound[i]` is the pod arriving `i`-th) and
/// audits the result.
pub fn audit(world: &World, order: &[usize], bound: &[Option<BoundPod>]) -> Audit {
    let index: std::collections::HashMap<&str, usize> = world
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut nodes: Vec<SatNode> = world
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| SatNode::new(i, &super::trace_node(n)))
        .collect();
    let mut audit = Audit::default();
    for (&pi, b) in order.iter().zip(bound) {
        let Some(b) = b else { continue };
        let t = &world.pods[pi].trace;
        let Some(&ni) = index.get(b.node) else {
            audit
                .overcommitted
                .push(format!("{}: unknown node", b.node));
            continue;
        };
        let node = &mut nodes[ni];
        let class = PodClass::of(t);
        match (class, b.allocation) {
            (PodClass::NoGpu, _) => {
                node.place(t, None);
            }
            (_, Some(text)) => {
                let taken = match parse_allocation(b.node, text) {
                    Ok(taken) => taken,
                    Err(e) => {
                        audit.overcommitted.push(e);
                        continue;
                    }
                };
                let milli: u32 = taken.iter().map(|(_, m)| m).sum();
                if milli != PodClass::allocated_milli(t) {
                    audit.overcommitted.push(format!(
                        "{}: a pod asking {} milli-GPU was given {milli}",
                        b.node,
                        PodClass::allocated_milli(t)
                    ));
                }
                // CPU and memory as placed; the GPUs as the device plugin took them.
                node.place(
                    &crate::trace::TracePod {
                        num_gpu: 0,
                        ..t.clone()
                    },
                    None,
                );
                for (g, m) in taken {
                    match node.gpu_free.get_mut(g).and_then(|f| f.checked_sub(m)) {
                        Some(left) => node.gpu_free[g] = left,
                        None => audit
                            .overcommitted
                            .push(format!("{} GPU {g}: {m} milli more than it has", b.node)),
                    }
                }
            }
            (_, None) => {
                audit.without_devices += 1;
                if node.fits(t) {
                    node.place(t, None);
                } else {
                    audit.overcommitted.push(format!(
                        "{}: no room per GPU for a pod bound without devices",
                        b.node
                    ));
                }
            }
        }
        if node.cpu_left < 0 || node.mem_left < 0 {
            audit
                .overcommitted
                .push(format!("{}: CPU or memory overcommitted", b.node));
        }
    }
    audit.unbound_that_fit = order
        .iter()
        .zip(bound)
        .filter(|(&pi, b)| b.is_none() && nodes.iter().any(|n| n.fits(&world.pods[pi].trace)))
        .count();
    audit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::WorldParams;
    use crate::trace::{TraceNode, TracePod};

    fn world() -> World {
        let prices = crate::prices::PriceTable::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/prices"),
        )
        .unwrap();
        let node = |name: &str, gpus: u32, model: &str| TraceNode {
            name: name.into(),
            cpu_milli: 32000,
            memory_mib: 131072,
            gpus,
            model: Some(model.into()),
        };
        let pod = |name: &str, gpus: u32, milli: u32, spec: Option<&str>, qos: &str| TracePod {
            name: name.into(),
            cpu_milli: 4000,
            memory_mib: 8192,
            num_gpu: gpus,
            gpu_milli: milli,
            gpu_spec: spec.map(|s| vec![s.to_string()]),
            qos: qos.into(),
            creation_s: 0,
            deletion_s: None,
        };
        World::build(
            &[node("n0", 2, "T4"), node("n1", 4, "V100M16")],
            &[
                pod("share", 1, 460, Some("T4"), "LS"),
                pod("whole", 2, 1000, None, "BE"),
                pod("cpu", 0, 0, None, "LS"),
            ],
            &prices,
            WorldParams {
                latency_target_share: 1.0,
                ..WorldParams::default()
            },
        )
    }

    #[test]
    fn pods_ask_for_their_gpus_as_shares_or_whole_devices_and_keep_their_model() {
        let w = world();
        let by = |name: &str| w.pods.iter().position(|p| p.trace.name == name).unwrap();
        let share = pod_object(&w.pods[by("share")], 7, 10, "trace", "aco-scheduler");
        assert_eq!(
            (
                &share["spec"]["priority"],
                &share["spec"]["preemptionPolicy"]
            ),
            (&json!(3), &json!("Never"))
        );
        assert_eq!(share["metadata"]["name"], "p-000007");
        let req = &share["spec"]["containers"][0]["resources"]["requests"];
        assert_eq!(req[GPU_MILLI_RESOURCE], "460");
        assert!(req.get(GPU_COUNT_RESOURCE).is_none());
        assert_eq!(
            share["spec"]["containers"][0]["resources"]["limits"],
            json!({GPU_MILLI_RESOURCE: "460"})
        );
        assert_eq!(
            share["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                ["matchExpressions"][0],
            json!({"key": GPU_MODEL_LABEL, "operator": "In", "values": ["T4"]})
        );
        let annotations = &share["metadata"]["annotations"];
        assert_eq!(annotations["scheduling.aco/gpu-models"], "T4");
        assert!(
            annotations.get(LATENCY_TARGET_ANNOTATION).is_none(),
            "every LS pod of this world had a target: {}",
            w.pods[by("share")].json
        );
        assert!(share["metadata"]["labels"]["scheduling.aco/tenant-id"].is_string());
        let whole = pod_object(&w.pods[by("whole")], 0, 10, "trace", "s");
        let req = &whole["spec"]["containers"][0]["resources"]["requests"];
        assert_eq!(
            (&req[GPU_COUNT_RESOURCE], &req[GPU_MILLI_RESOURCE]),
            (&json!("2"), &json!("2000"))
        );
        assert!(whole["spec"]["affinity"].is_null());
        let cpu = pod_object(&w.pods[by("cpu")], 0, 10, "trace", "s");
        assert!(cpu["spec"]["containers"][0]["resources"]["limits"]
            .as_object()
            .unwrap()
            .is_empty());
        // The core reads them as the simulator's pods.
        for p in [&share, &whole, &cpu] {
            let view: aco_core::k8s::PodView = serde_json::from_value(p.clone()).unwrap();
            aco_core::demand::PodDemand::from_pod(&view, &w.config.pod_keys, &w.config.node_keys)
                .unwrap();
        }
    }

    #[test]
    fn nodes_carry_the_simulators_labels_and_one_device_per_gpu() {
        let w = world();
        let n = node_object(&w.nodes[1]);
        assert_eq!(n["metadata"]["labels"], json!(w.nodes[1].labels));
        assert_eq!(n["status"]["allocatable"][GPU_COUNT_RESOURCE], "4");
        assert_eq!(n["status"]["allocatable"][GPU_MILLI_RESOURCE], "4000");
        let devices: Vec<Value> = serde_json::from_str(
            n["metadata"]["annotations"][HAMI_NODE_REGISTER]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(devices.len(), 4);
        assert_eq!(devices[3]["id"], "GPU-n1-3");
        assert_eq!(devices[3]["type"], "V100M16");
        let shapes = shapes_json(&crate::saturate::shapes_of(&w));
        let constrained: Vec<&Value> = shapes
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s.get("gpuModels").is_some())
            .collect();
        assert_eq!(constrained.len(), 1, "{shapes}");
        assert_eq!(constrained[0]["gpuModels"], json!(["T4"]));
        let view: aco_core::k8s::NodeView = serde_json::from_value(n).unwrap();
        assert_eq!(
            view.metadata.labels["aco/cost-per-hour"],
            w.nodes[1].labels["aco/cost-per-hour"]
        );
    }

    #[test]
    fn a_replays_figures_count_the_bound_pods_against_every_pod_arrived() {
        let w = world();
        let by = |name: &str| w.pods.iter().position(|p| p.trace.name == name).unwrap();
        let (share, whole, cpu) = (by("share"), by("whole"), by("cpu"));
        // 6 GPUs. Arrived: 460, 2460, 2460, 4460, 6460, 8460 milli (7.7% … 141%); the 4th and
        // the 6th pod failed, so 4460 milli are allocated at 100% (the 5th pod) and at 130%.
        let order = [share, whole, cpu, whole, whole, whole];
        let bound = [true, true, true, false, true, false];
        let (curve, at100, at130) = replay_arrivals(&w, &order, &bound);
        assert_eq!(capacity_milli(&w), 6000.0);
        assert!((at100 - 100.0 * 4460.0 / 6000.0).abs() < 1e-9, "{at100}");
        assert!((at130 - at100).abs() < 1e-9);
        assert_eq!(
            curve.len(),
            5,
            "one point per 0.5% step, none for the CPU pod: {curve:?}"
        );
        assert_eq!(arrived_index(&w, &order, 100.0), 4);
        assert_eq!(arrived_index(&w, &order, 130.0), 5);
        assert_eq!(arrived_index(&w, &order[..3], 100.0), 3);
        // Stopping short: the last allocation.
        let (_, short100, _) = replay_arrivals(&w, &order[..2], &bound[..2]);
        assert!((short100 - 100.0 * 2460.0 / 6000.0).abs() < 1e-9);
    }

    #[test]
    fn an_audit_rebuilds_the_gpus_from_the_allocations_and_finds_what_was_left_out() {
        let w = world();
        let by = |name: &str| w.pods.iter().position(|p| p.trace.name == name).unwrap();
        let (share, whole, cpu) = (by("share"), by("whole"), by("cpu"));
        let order = [share, whole, whole, cpu, whole];
        let ok = [
            Some(BoundPod {
                node: "n0",
                allocation: Some("GPU-n0-1,T4,460,46:;"),
            }),
            Some(BoundPod {
                node: "n1",
                allocation: Some("GPU-n1-0,V,1000,100:GPU-n1-1,V,1000,100:;"),
            }),
            Some(BoundPod {
                node: "n1",
                allocation: Some("GPU-n1-2,V,1000,100:GPU-n1-3,V,1000,100:;"),
            }),
            Some(BoundPod {
                node: "n0",
                allocation: None,
            }),
            None,
        ];
        let a = audit(&w, &order, &ok);
        assert_eq!(
            a,
            Audit::default(),
            "the last whole pod fits nowhere: n0 has a shared GPU"
        );
        // The share on the other GPU: the same, n0 keeps one whole GPU and the pod wants two.
        let mut moved = ok;
        moved[0] = Some(BoundPod {
            node: "n0",
            allocation: Some("GPU-n0-0,T4,460,46:;"),
        });
        assert_eq!(audit(&w, &order, &moved).unbound_that_fit, 0);
        // The share left out: it would have fitted, and so would the last pod (n0 idle).
        let left_out = [None, ok[1], ok[2], ok[3], None];
        assert_eq!(audit(&w, &order, &left_out).unbound_that_fit, 2);
        // A GPU given twice, and a pod bound without devices.
        let twice = [
            ok[0],
            ok[1],
            Some(BoundPod {
                node: "n1",
                allocation: Some("GPU-n1-1,V,1000,100:GPU-n1-2,V,1000,100:;"),
            }),
            ok[3],
            None,
        ];
        let a = audit(&w, &order, &twice);
        assert_eq!(
            a.overcommitted,
            vec!["n1 GPU 1: 1000 milli more than it has".to_string()]
        );
        let bare = [
            Some(BoundPod {
                node: "n0",
                allocation: None,
            }),
            None,
            None,
            None,
            None,
        ];
        assert_eq!(audit(&w, &order, &bare).without_devices, 1);
        assert!(parse_allocation("n0", "GPU-n1-0,T4,1,1:").is_err());
    }
}
