//! End-to-end: `aco-kube-scheduler` (kube-scheduler v1.37.2 with the AcoGpuDevices and AcoFGD
//! plugins, scripts/kube/plugins) against a real etcd + kube-apiserver, with the sample
//! configuration scripts/kube/plugins/scheduler-config.yaml as committed. Nodes are Node objects
//! with OpenB's allocatable and HAMi's device annotation; no kubelet runs (binding is the end).
//!
//! - Device accounting (profile `default-scheduler`, kube-scheduler's own plugins and weights):
//!   shares never cross a device though the node's aggregate would allow it, whole GPUs need
//!   wholly free devices, the GPU-model annotation holds, every placement is written on the pod
//!   in the form the reporter reads, and a restarted scheduler reads them back.
//! - With the Worker as extender (the shipped configuration plus AcoGpuDevices), the real
//!   reporter turns those annotations into the per-GPU free shares of the Worker's facts.
//! - FGD (profile `aco-fgd`, FGD alone scores): pod after pod, the node kube-scheduler binds is
//!   one the simulator's FGD scores highest for the cluster's state at that moment, and a share
//!   takes the GPU the simulator's FGD picks.

// SERIAL is held for a whole test, across awaits, on purpose: each test has its own runtime and
// the lock only keeps two control planes from running at once.
#![allow(clippy::await_holding_lock)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use aco_core::heuristic::{PodGpus, PodShape};
use aco_reporter::gpu_share::gpu_free_milli;
use aco_reporter::k8s_openapi::api::core::v1::{Node, Pod};
use aco_reporter::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use aco_reporter::node_facts::labels_the_worker_reads;
use aco_reporter::node_record::NodeReader;
use aco_reporter::pod_record::{PodReader, PodRecord};
use aco_sim::saturate::policy::fgd::{fgd_score, state_verdict, FgdMemo, NodeFree, ShareGpu};
use aco_testkit::api::WorkerHttp;
use aco_testkit::kube::aco_scheduler::{
    gpu_node, sample_config, with_gpu_devices, GPU_MODEL_LABEL, HAMI_POD_ALLOCATED,
};
use aco_testkit::kube::fixtures::{label_node, Env};
use aco_testkit::kube::kwok::quantity;
use aco_testkit::kube::{wait_for, ControlPlane, Kube, SCHEDULER_NAME};
use aco_testkit::nodes::name_of;
use serde_json::{json, Value};

const NS: &str = "gpu";
const BIND_TIMEOUT: Duration = Duration::from_secs(60);
const GROUP: &str = "e2e-group";

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a pod asks, in the resources the OpenB trace uses.
#[derive(Clone, Copy, Debug)]
enum Ask {
    Cpu,
    Share(u32),
    /// k whole GPUs as `gpu-count: k` with `gpu-milli: k×1000` beside it.
    Whole(u32),
    /// k whole GPUs as `gpu-count: k` alone: NodeResourcesFit checks only the count.
    CountOnly(u32),
}

impl Ask {
    fn gpus(self, cpu_milli: i64) -> PodGpus {
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

struct PodSpec<'a> {
    name: &'a str,
    scheduler: &'a str,
    group: &'a str,
    cpu_milli: i64,
    ask: Ask,
    annotations: Value,
    node_name: Option<&'a str>,
}

fn gpu_pod(p: PodSpec) -> Value {
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

fn node_of(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.node_name.as_deref()
}

fn annotation<'a>(p: &'a Pod, key: &str) -> Option<&'a str> {
    p.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// One node's state as FGD reads it, from the API alone: free CPU (allocatable − the requests of
/// its pods), free milli per GPU as the reporter computes it from the pods' annotations, model.
struct NodeState {
    name: String,
    model: Option<String>,
    cpu_free: i64,
    gpu_free: Vec<u32>,
}

async fn node_states(kube: &Kube, names: &[&str]) -> Vec<NodeState> {
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

fn milli(q: Option<&Quantity>) -> i64 {
    (quantity(&q.expect("a CPU quantity").0).unwrap() * 1000.0).round() as i64
}

/// The device indices a bound pod's annotation names (ids are `<node>-gpu<i>`).
fn allocated_gpus(pod: &Pod) -> Vec<usize> {
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

async fn bound_pod(kube: &Kube, name: &str) -> (String, Pod) {
    let node = kube.wait_bound(NS, name, BIND_TIMEOUT).await;
    // PreBind's patch precedes the binding: the bound pod carries it.
    (node, kube.pod(NS, name).await)
}

/// Creates `pod` and waits until kube-scheduler refuses it for a reason containing `reason`.
async fn refused(kube: &Kube, pod: &Value, reason: &str) {
    let name = name_of(pod);
    kube.create_pod(pod).await;
    let why = kube.wait_unschedulable(NS, &name, BIND_TIMEOUT).await;
    assert!(why.contains(reason), "{name}: {why}");
}

async fn start(cp: &ControlPlane, name: &str) -> aco_testkit::kube::Server {
    cp.start_aco_scheduler(name, &sample_config(&cp.kubeconfig))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_are_accounted_per_gpu_and_survive_a_restart() {
    let _serial = serial();
    let cp = ControlPlane::start().await;
    let kube = &cp.kube;
    kube.create_namespace(NS).await;
    for n in ["dev-0", "dev-1"] {
        kube.create_node(&gpu_node(n, "T4", 2, 32_000, &[(GROUP, "devices")]))
            .await;
    }
    let scheduler = start(&cp, "aco-kube-scheduler").await;
    let pod = |name: &str, ask: Ask, annotations: Value| {
        gpu_pod(PodSpec {
            name,
            scheduler: "default-scheduler",
            group: "devices",
            cpu_milli: 1000,
            ask,
            annotations,
            node_name: None,
        })
    };

    // Five shares of 600 on two nodes of two GPUs: each node's aggregate (2,000 milli) holds
    // three, each GPU only one.
    for i in 0..5 {
        kube.create_pod(&pod(&format!("share600-{i}"), Ask::Share(600), json!({})))
            .await;
    }
    let (bound, pending) = wait_for("4 shares of 600 bound, 1 refused", BIND_TIMEOUT, || async {
        let pods = kube.typed_pods(NS).await;
        let bound: Vec<Pod> = pods
            .iter()
            .filter(|p| node_of(p).is_some())
            .cloned()
            .collect();
        let conditions = |p: &Pod| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.clone())
                .unwrap_or_default()
        };
        let pending: Vec<String> = pods
            .iter()
            .filter(|p| {
                conditions(p).iter().any(|c| {
                    c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable")
                })
            })
            .map(|p| {
                conditions(p)
                    .first()
                    .and_then(|c| c.message.clone())
                    .unwrap_or_default()
            })
            .collect();
        (bound.len() == 4 && pending.len() == 1).then_some((bound, pending))
    })
    .await;
    assert!(
        pending[0].contains("no GPU with 600 milli free"),
        "{}",
        pending[0]
    );
    let mut devices: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for p in &bound {
        devices
            .entry(node_of(p).expect("bound").to_owned())
            .or_default()
            .extend(allocated_gpus(p));
    }
    for (node, gpus) in &devices {
        let mut gpus = gpus.clone();
        gpus.sort();
        assert_eq!(gpus, vec![0, 1], "{node}: one share of 600 per GPU");
    }
    // The reporter reads the annotations as the Worker would be told: 400 free on every GPU.
    for s in node_states(kube, &["dev-0", "dev-1"]).await {
        assert_eq!(s.gpu_free, vec![400, 400], "{}", s.name);
    }

    // A whole GPU asked by count alone: NodeResourcesFit sees both counts free, no device is.
    let whole = pod("whole-1", Ask::CountOnly(1), json!({}));
    refused(kube, &whole, "fewer than 1 GPUs wholly free").await;

    // The GPU-model annotation: no V100M32 here; T4 is.
    let v100 = json!({"scheduling.aco/gpu-models": "V100M32"});
    refused(
        kube,
        &pod("v100", Ask::Share(300), v100),
        "GPU model not among the pod's",
    )
    .await;
    kube.create_pod(&pod(
        "t4",
        Ask::Share(300),
        json!({"scheduling.aco/gpu-models": "V100M16|T4"}),
    ))
    .await;
    let (t4_node, _) = bound_pod(kube, "t4").await;

    // A new scheduler process knows only what the pods say: three GPUs with 400 free, one with
    // 100. A share of 500 fits nowhere; one of 400 best-fits a GPU with exactly 400.
    drop(scheduler);
    let _scheduler = start(&cp, "aco-kube-scheduler-2").await;
    let big = pod("after-restart-500", Ask::Share(500), json!({}));
    refused(kube, &big, "no GPU with 500 milli free").await;
    kube.create_pod(&pod("after-restart-400", Ask::Share(400), json!({})))
        .await;
    let (node, _) = bound_pod(kube, "after-restart-400").await;
    let states = node_states(kube, &["dev-0", "dev-1"]).await;
    let free: BTreeMap<&str, Vec<u32>> = states
        .iter()
        .map(|s| (s.name.as_str(), s.gpu_free.clone()))
        .collect();
    let mut all: Vec<u32> = free.values().flatten().copied().collect();
    all.sort();
    assert_eq!(
        all,
        vec![0, 100, 400, 400],
        "free shares after the restart: {free:?}"
    );
    assert!(free[t4_node.as_str()].contains(&100), "{free:?}");
    assert!(free[node.as_str()].contains(&0), "{free:?}");
}

/// The aco-fgd profile's typical shapes, as the scheduler read them (YAML anchors resolved).
fn sample_shapes() -> Vec<PodShape> {
    let text = sample_config(std::path::Path::new("/dev/null"));
    let doc: SchedulerProfiles = serde_yaml::from_str(&text).unwrap();
    let profile = doc
        .profiles
        .into_iter()
        .find(|p| p.scheduler_name == "aco-fgd")
        .expect("an aco-fgd profile");
    let args = profile
        .plugin_config
        .into_iter()
        .find(|c| c.name == "AcoFGD")
        .expect("AcoFGD args");
    let args: FgdArgs = serde_yaml::from_value(args.args).expect("AcoFGD's args");
    args.typical_shapes
        .into_iter()
        .map(|s| PodShape {
            cpu_milli: s.cpu_milli,
            num_gpu: s.num_gpu,
            gpu_milli: s.gpu_milli,
            gpu_models: s.gpu_models,
            freq: s.frequency,
        })
        .collect()
}

/// The profiles of a KubeSchedulerConfiguration, as much as the test reads.
#[derive(serde::Deserialize)]
struct SchedulerProfiles {
    profiles: Vec<Profile>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Profile {
    scheduler_name: String,
    #[serde(default)]
    plugin_config: Vec<PluginConfig>,
}

#[derive(serde::Deserialize)]
struct PluginConfig {
    name: String,
    /// Each plugin's own arguments.
    args: serde_yaml::Value,
}

/// AcoFGD's arguments (scripts/kube/plugins).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct FgdArgs {
    typical_shapes: Vec<ShapeArg>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShapeArg {
    cpu_milli: i64,
    num_gpu: u32,
    gpu_milli: u32,
    gpu_models: Option<Vec<String>>,
    frequency: f64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fgd_binds_where_the_simulators_fgd_scores_highest() {
    let _serial = serial();
    let shapes = sample_shapes();
    assert!(shapes.len() > 10, "{} shapes", shapes.len());
    let cp = ControlPlane::start().await;
    let kube = &cp.kube;
    kube.create_namespace(NS).await;
    let nodes = [
        ("fgd-0", "V100M32", 8, 96_000),
        ("fgd-1", "T4", 2, 32_000),
        ("fgd-2", "P100", 4, 64_000),
        ("fgd-3", "G2", 1, 16_000),
        ("fgd-4", "V100M16", 8, 96_000),
        ("fgd-5", "T4", 4, 48_000),
    ];
    for (n, model, gpus, cpu) in nodes {
        kube.create_node(&gpu_node(n, model, gpus, cpu, &[(GROUP, "fgd")]))
            .await;
    }
    let names: Vec<&str> = nodes.iter().map(|n| n.0).collect();
    // Some nodes part-used before the scheduler starts: bound pods with their devices written
    // as AcoGpuDevices writes them, which it must read back.
    let placed = [
        (
            "pre-0",
            "fgd-0",
            3152,
            Ask::Share(810),
            "fgd-0-gpu0,NVIDIA,12960,81:;",
        ),
        (
            "pre-1",
            "fgd-0",
            11300,
            Ask::Whole(2),
            "fgd-0-gpu1,NVIDIA,16000,100:fgd-0-gpu2,NVIDIA,16000,100:;",
        ),
        (
            "pre-2",
            "fgd-2",
            11908,
            Ask::Share(470),
            "fgd-2-gpu3,NVIDIA,7520,47:;",
        ),
        (
            "pre-3",
            "fgd-1",
            8000,
            Ask::Share(320),
            "fgd-1-gpu1,NVIDIA,5120,32:;",
        ),
    ];
    for (name, node, cpu, ask, allocated) in placed {
        kube.create_pod(&gpu_pod(PodSpec {
            name,
            scheduler: "aco-fgd",
            group: "fgd",
            cpu_milli: cpu,
            ask,
            annotations: json!({HAMI_POD_ALLOCATED: allocated}),
            node_name: Some(node),
        }))
        .await;
    }
    let _scheduler = start(&cp, "aco-kube-scheduler").await;

    // OpenB-like pods, one at a time: each lands where the Rust FGD scores the cluster highest.
    let arrivals = [
        (3152, Ask::Share(810)),
        (11908, Ask::Share(470)),
        (11300, Ask::Whole(1)),
        (4000, Ask::Share(320)),
        (12500, Ask::Cpu),
        (8000, Ask::Whole(2)),
        (11908, Ask::Share(650)),
        (4000, Ask::Share(230)),
        (3152, Ask::Share(810)),
        (9810, Ask::Whole(1)),
        (6000, Ask::Share(460)),
        (32000, Ask::Cpu),
        (16000, Ask::Whole(4)),
        (8000, Ask::Share(470)),
        (18708, Ask::Whole(1)),
        (4152, Ask::Share(550)),
    ];
    let (mut unique, mut discriminating) = (0, 0);
    for (i, (cpu, ask)) in arrivals.into_iter().enumerate() {
        let states = node_states(kube, &names).await;
        let pod = ask.gpus(cpu);
        let verdicts: Vec<(i64, Option<usize>)> = states
            .iter()
            .map(|s| {
                let node = NodeFree {
                    model: s.model.as_deref(),
                    cpu_left: s.cpu_free,
                    gpu_free: &s.gpu_free,
                };
                match state_verdict(
                    &mut FgdMemo::new(),
                    node,
                    pod,
                    &shapes,
                    ShareGpu::FirstBestScore,
                ) {
                    Some((d, gpu)) => (fgd_score(d), gpu),
                    None => (-1, None), // not feasible: filtered before scoring
                }
            })
            .collect();
        let best = verdicts.iter().map(|v| v.0).max().unwrap();
        assert!(best >= 0, "arrival {i} ({ask:?}) fits no node");
        // The check says something only where some feasible node scores below the best.
        discriminating += usize::from(verdicts.iter().any(|v| (0..best).contains(&v.0)));
        let argmax: Vec<&str> = (0..states.len())
            .filter(|j| verdicts[*j].0 == best)
            .map(|j| names[j])
            .collect();
        unique += usize::from(argmax.len() == 1);
        eprintln!(
            "arrival {i} {ask:?}: scores {:?}",
            verdicts.iter().map(|v| v.0).collect::<Vec<_>>()
        );

        let name = format!("arrival-{i}");
        kube.create_pod(&gpu_pod(PodSpec {
            name: &name,
            scheduler: "aco-fgd",
            group: "fgd",
            cpu_milli: cpu,
            ask,
            annotations: json!({}),
            node_name: None,
        }))
        .await;
        let (node, bound) = bound_pod(kube, &name).await;
        let scores: Vec<(&str, i64)> = names
            .iter()
            .copied()
            .zip(verdicts.iter().map(|v| v.0))
            .collect();
        assert!(
            argmax.contains(&node.as_str()),
            "arrival {i} ({ask:?}) bound on {node}; Rust FGD scores {scores:?}"
        );
        let j = names.iter().position(|n| *n == node).unwrap();
        match ask {
            Ask::Cpu => assert_eq!(annotation(&bound, HAMI_POD_ALLOCATED), None),
            Ask::Share(_) => {
                let want = verdicts[j].1.expect("a share's GPU");
                assert_eq!(
                    allocated_gpus(&bound),
                    vec![want],
                    "arrival {i} on {node}: free {:?}",
                    states[j].gpu_free
                );
            }
            Ask::Whole(k) | Ask::CountOnly(k) => {
                let want: Vec<usize> = (0..states[j].gpu_free.len())
                    .filter(|g| states[j].gpu_free[*g] == 1000)
                    .take(k as usize)
                    .collect();
                assert_eq!(allocated_gpus(&bound), want, "arrival {i} on {node}");
            }
        }
    }
    eprintln!(
        "{} arrivals: {unique} with one best node, {discriminating} with a feasible node scored lower",
        arrivals.len()
    );
    assert!(
        discriminating >= 5 && unique >= 4,
        "only {discriminating} arrivals had a feasible node scored below the best ({unique} one best node): the check says little"
    );
}

/// The chain the Worker's η relies on, with the shipped extender configuration: AcoGpuDevices
/// (added to the shipped profile) writes each placement's devices, the real reporter reads them
/// and the Worker's facts carry every node's per-GPU free shares — what it would get behind HAMi.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workers_facts_carry_the_per_gpu_shares_placed_through_the_extender() {
    let _serial = serial();
    let gpu_resources = "nvidia.com/gpu,alibabacloud.com/gpu-count,alibabacloud.com/gpu-milli";
    let env = Env::start_with_reporter_and_vars(&[], &[("GPU_RESOURCES", gpu_resources)]).await;
    let kube = env.kube();
    kube.create_namespace(NS).await;
    let nodes: Vec<Value> = [("ext-0", 2), ("ext-1", 4)]
        .into_iter()
        .map(|(n, gpus)| {
            let node = gpu_node(n, "T4", gpus, 32_000, &[(GROUP, "ext")]);
            label_node(node, 1.0, 100, false)
        })
        .collect();
    env.add_nodes(&nodes).await;
    let shipped = env.worker_config(false).render(&env.cp.kubeconfig);
    let config = with_gpu_devices(&shipped, &json!({"shareGpuChoice": "bestFit"}));
    let _scheduler = env
        .cp
        .start_aco_scheduler("aco-kube-scheduler-ext", &config)
        .await;

    let asks = [
        Ask::Share(600),
        Ask::Share(470),
        Ask::Whole(2),
        Ask::Share(810),
        Ask::Share(320),
    ];
    for (i, ask) in asks.into_iter().enumerate() {
        let name = format!("ext-{i}");
        kube.create_pod(&gpu_pod(PodSpec {
            name: &name,
            scheduler: SCHEDULER_NAME,
            group: "ext",
            cpu_milli: 2000,
            ask,
            annotations: json!({}),
            node_name: None,
        }))
        .await;
        bound_pod(kube, &name).await;
    }
    let states = node_states(kube, &["ext-0", "ext-1"]).await;
    let used: u32 = states
        .iter()
        .flat_map(|s| &s.gpu_free)
        .map(|f| 1000 - f)
        .sum();
    assert_eq!(
        used,
        600 + 470 + 2000 + 810 + 320,
        "what the annotations hold"
    );
    for s in &states {
        let name = s.name.clone();
        let want = &s.gpu_free;
        wait_for(
            &format!("the Worker's facts for {name} to carry gpuFreeMilli {want:?}"),
            BIND_TIMEOUT,
            || async {
                let facts = env.api.try_node_facts(&name).await?;
                (&facts.gpu_free_milli?.value == want).then_some(())
            },
        )
        .await;
    }
}
