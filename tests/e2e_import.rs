//! End-to-end: `aco-sim import` on what a real kube-apiserver lists, and the imported workload
//! replayed by `aco-sim run` ("what would the colony have done on my cluster?").
//!
//! A real control plane with kwok's fake kubelets and the cluster's `default-scheduler` (a real
//! kube-scheduler, no extender): two OpenB GPU nodes with the labels the Worker reads (one
//! priced by its `aco/cost-per-hour` label, both through kwok), an unlabelled CPU node (priced
//! by the table) and a cordoned one; pods in two namespaces that the scheduler binds and kwok
//! runs — services that keep running, Job pods kwok ends (`Succeeded` after 2 s), GPU pods — and
//! one too large for any node (left `Pending`). The node and pod lists the API returns
//! (`NodeList`, `PodList`) are imported through the command line, each pod's row checked
//! against its API object (requests, start, scheduled and finish times, node), then replayed.

use std::path::Path;
use std::time::Duration;

use aco_sim::cli::{main as aco_sim, Cli};
use aco_testkit::k8s_openapi::api::core::v1::{Node, Pod};
use aco_testkit::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use aco_testkit::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use aco_testkit::k8s_openapi::List;
use aco_testkit::kube::fixtures::*;
use aco_testkit::kube::kwok::{JobStages, JOB};
use aco_testkit::kube::{typed, wait_for, ControlPlane, Kube, SchedulerConfig};
use aco_testkit::nodes::{cordon, name_of, remove_label};
use aco_testkit::openb::pick_gpu_nodes;
use aco_testkit::pods::edit_spec;
use clap::Parser;
use serde::Deserialize;
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(90);
const NAMESPACES: [&str; 2] = ["serving", "research"];
/// The price label of the first GPU node ($/h).
const LABELLED_PRICE: f64 = 3.25;

/// A pod the cluster's default scheduler binds (the fixture names the extender's scheduler).
fn plain_pod(ns: &str, name: &str, o: PodOpts) -> Value {
    edit_spec(pod(ns, name, o), |spec| {
        spec.scheduler_name = None;
        spec.restart_policy = Some("Never".into());
    })
}

/// What the test reads of a replay's metrics (`aco_sim::engine::Metrics`, written as JSON).
#[derive(Debug, Deserialize)]
struct RunSummary {
    pods: usize,
    placed: usize,
    cost_busy_usd: f64,
}

fn is_ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// CPU cores of a quantity.
fn cores(q: Option<&Quantity>) -> f64 {
    q.and_then(|q| aco_testkit::kube::kwok::quantity(&q.0))
        .expect("a CPU quantity")
}

fn cli(args: &[&str]) {
    let argv = [&["aco-sim", "--quiet"], args].concat();
    if let Err(e) = aco_sim(Cli::parse_from(argv)) {
        panic!("aco-sim {args:?}: {e}");
    }
}

fn csv_rows(path: &Path) -> Vec<csv::StringRecord> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.records().map(Result::unwrap).collect()
}

fn header(path: &Path) -> Vec<String> {
    let mut r = csv::Reader::from_path(path).unwrap();
    r.headers().unwrap().iter().map(str::to_owned).collect()
}

/// Seconds since the Unix epoch of a time the API server wrote.
fn unix(t: Option<&Time>) -> u64 {
    let v = serde_json::to_value(t.expect("a time")).unwrap();
    aco_sim::import::seconds(&v).unwrap_or_else(|| panic!("not a timestamp: {v}"))
}

async fn list(kube: &Kube, path: &str) -> Value {
    kube.get(path).await.unwrap()
}

#[tokio::test]
async fn a_kwok_clusters_own_lists_import_and_replay() {
    let cp = ControlPlane::start().await;
    let kube = &cp.kube;
    let stages = JobStages {
        run_ms: 2000,
        ..JobStages::default()
    };
    let _kwok = cp.start_kwok_with(&stages.yaml()).await;
    let _scheduler = cp
        .start_scheduler("default-scheduler", &SchedulerConfig::default_scheduler())
        .await;

    // Nodes.
    let gpu = pick_gpu_nodes(&["T4", "V100M16"]);
    let labelled = kwok_node(label_node(gpu[0].clone(), LABELLED_PRICE, 200, false));
    let unpriced_gpu = kwok_node(remove_label(
        label_node(gpu[1].clone(), 0.0, 200, false),
        "aco/cost-per-hour",
    ));
    let cpu = kwok_node(cpu_node("cpu-0", "32", "128Gi"));
    let cordoned = cordon(kwok_node(cpu_node("cpu-cordoned", "32", "128Gi")));
    let nodes = [
        labelled.clone(),
        unpriced_gpu.clone(),
        cpu.clone(),
        cordoned,
    ];
    create_kwok_nodes(kube, &nodes).await;
    for n in &nodes {
        let name = name_of(n);
        wait_for(&format!("node {name} Ready"), TIMEOUT, || async {
            is_ready(&kube.try_node(&name).await?).then_some(())
        })
        .await;
    }

    // Pods: services (run on), Job pods (kwok ends them), GPU pods, one that fits nowhere.
    let mut pods = Vec::new();
    for ns in NAMESPACES {
        kube.create_namespace(ns).await;
        for i in 0..3 {
            pods.push(plain_pod(
                ns,
                &format!("svc-{i}"),
                PodOpts {
                    cpu: "2",
                    memory: "4Gi",
                    labels: vec![("aco/workload-type", "latency-critical".into())],
                    ..Default::default()
                },
            ));
            pods.push(plain_pod(
                ns,
                &format!("job-{i}"),
                PodOpts {
                    cpu: "1500m",
                    memory: "1Gi",
                    labels: vec![("aco/workload-type", "batch".into())],
                    annotations: vec![(JOB, "yes".into())],
                    ..Default::default()
                },
            ));
        }
        pods.push(plain_pod(
            ns,
            "train",
            PodOpts {
                cpu: "4",
                memory: "8Gi",
                gpus: 1,
                ..Default::default()
            },
        ));
    }
    pods.push(plain_pod(
        "research",
        "too-large",
        PodOpts {
            cpu: "500",
            ..Default::default()
        },
    ));
    create_pods(kube, &pods).await;
    let total = pods.len();
    let settled = |p: &Pod| {
        let name = p.metadata.name.as_deref().unwrap_or_default();
        let status = p.status.clone().unwrap_or_default();
        let phase = status.phase.unwrap_or_default();
        let unschedulable = status.conditions.is_some_and(|c| {
            c.iter()
                .any(|c| c.reason.as_deref() == Some("Unschedulable"))
        });
        match name {
            "too-large" => unschedulable,
            n if n.starts_with("job-") => phase == "Succeeded",
            _ => phase == "Running",
        }
    };
    let pod_list = wait_for("every pod settled", TIMEOUT, || async {
        let list = list(kube, "/api/v1/pods").await;
        let items = typed::<List<Pod>>(&list).items;
        (items.len() == total && items.iter().all(settled)).then_some(list)
    })
    .await;
    let node_list = list(kube, "/api/v1/nodes").await;
    // As the API returned them (a typed List checks its kind: NodeList, PodList).
    let (listed_nodes, listed_pods) = (
        typed::<List<Node>>(&node_list).items,
        typed::<List<Pod>>(&pod_list).items,
    );

    // Import the lists as the API returned them.
    let dir = tempfile::Builder::new()
        .prefix("aco-e2e-import-")
        .tempdir()
        .unwrap();
    let (nodes_file, pods_file) = (dir.path().join("nodes.json"), dir.path().join("pods.json"));
    std::fs::write(&nodes_file, node_list.to_string()).unwrap();
    std::fs::write(&pods_file, pod_list.to_string()).unwrap();
    let trace = dir.path().join("trace");
    cli(&[
        "import",
        "--kubectl",
        nodes_file.to_str().unwrap(),
        "--kubectl",
        pods_file.to_str().unwrap(),
        "--out",
        trace.to_str().unwrap(),
    ]);

    // Nodes: the three schedulable ones, at their allocatable; the GPU nodes alone in the GPU
    // list; the labelled node at its label's price, the others at the table's (> 0).
    let node_file = trace.join("openb_node_list_all_node.csv");
    assert_eq!(
        header(&node_file)[..5],
        ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
    );
    let rows = csv_rows(&node_file);
    let names: Vec<&str> = rows.iter().map(|r| &r[0]).collect();
    let mut want: Vec<String> = [&labelled, &unpriced_gpu, &cpu].map(name_of).to_vec();
    want.sort();
    let mut got: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    got.sort();
    assert_eq!(got, want);
    for row in &rows {
        let listed = listed_nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(&row[0]))
            .unwrap();
        let alloc = listed.status.as_ref().and_then(|s| s.allocatable.as_ref());
        let cores = cores(alloc.and_then(|a| a.get("cpu")));
        assert_eq!(row[1].parse::<f64>().unwrap(), cores * 1000.0, "{row:?}");
        let price: f64 = row[5].parse().unwrap();
        if row[0] == name_of(&labelled) {
            assert_eq!(price, LABELLED_PRICE);
        } else {
            assert!(price > 0.0, "{row:?}");
        }
        let gpus: u32 = row[3].parse().unwrap();
        assert_eq!(gpus > 0, &row[0] != "cpu-0", "{row:?}");
    }
    assert_eq!(
        csv_rows(&trace.join("openb_node_list_gpu_node.csv")).len(),
        2
    );

    // Pods: one row each, requests and times as the API server recorded them.
    let pod_file = trace.join("openb_pod_list_cluster.csv");
    let cols = header(&pod_file);
    let col = |name: &str| cols.iter().position(|c| c == name).unwrap();
    let rows = csv_rows(&pod_file);
    assert_eq!(rows.len(), total);
    let origin = listed_pods
        .iter()
        .map(|p| unix(p.metadata.creation_timestamp.as_ref()))
        .min()
        .unwrap();
    for row in &rows {
        let (name, ns) = (&row[col("name")], &row[col("namespace")]);
        let base = name.strip_suffix(&format!(".{ns}")).unwrap_or(name);
        let p = listed_pods
            .iter()
            .find(|p| {
                p.metadata.name.as_deref() == Some(base)
                    && p.metadata.namespace.as_deref() == Some(ns)
            })
            .unwrap_or_else(|| panic!("no pod for {row:?}"));
        let spec = p.spec.as_ref().expect("a pod spec");
        let requests = spec.containers[0]
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref());
        let cores = cores(requests.and_then(|r| r.get("cpu")));
        assert_eq!(
            row[col("cpu_milli")].parse::<f64>().unwrap(),
            cores * 1000.0
        );
        let created = unix(p.metadata.creation_timestamp.as_ref()) - origin;
        assert_eq!(row[col("creation_time")], created.to_string(), "{row:?}");
        let status = p.status.as_ref().expect("a pod status");
        assert_eq!(
            Some(&row[col("pod_phase")]),
            status.phase.as_deref(),
            "{row:?}"
        );
        assert_eq!(
            &row[col("node")],
            spec.node_name.as_deref().unwrap_or_default()
        );
        let (scheduled, ended) = (&row[col("scheduled_time")], &row[col("deletion_time")]);
        match base {
            "too-large" => {
                assert!(scheduled.is_empty() && ended.is_empty(), "{row:?}");
                assert_eq!(&row[col("pod_phase")], "Pending");
            }
            b if b.starts_with("job-") => {
                // Ended when its container finished, which kwok stamps after its 2 s run.
                let terminated = status
                    .container_statuses
                    .as_ref()
                    .and_then(|cs| cs.first())
                    .and_then(|c| c.state.as_ref())
                    .and_then(|s| s.terminated.as_ref())
                    .expect("a terminated container");
                let finished = unix(terminated.finished_at.as_ref());
                assert_eq!(*ended, (finished - origin).to_string(), "{row:?}");
                assert!(finished - origin > created, "{row:?}");
                assert_eq!(&row[col("qos")], "BE");
            }
            b => {
                assert!(ended.is_empty(), "a running pod never leaves: {row:?}");
                assert!(!scheduled.is_empty(), "{row:?}");
                if b.starts_with("svc-") {
                    assert_eq!(&row[col("qos")], "LS");
                } else {
                    assert_eq!(&row[col("num_gpu")], "1");
                }
            }
        }
    }

    // Replayed: every pod arrives; all but the one that fits nowhere are placed, on the
    // cluster's own schedulable nodes.
    let out = dir.path().join("out");
    cli(&[
        "run",
        "--openb-dir",
        trace.to_str().unwrap(),
        "--policies",
        "first-fit,colony",
        "--out",
        out.to_str().unwrap(),
        "--name",
        "cluster",
    ]);
    let runs: Vec<RunSummary> =
        serde_json::from_str(&std::fs::read_to_string(out.join("cluster.json")).unwrap()).unwrap();
    assert_eq!(runs.len(), 2);
    for m in &runs {
        assert_eq!(m.pods, total, "{m:?}");
        assert_eq!(m.placed, total - 1, "{m:?}");
        assert!(m.cost_busy_usd > 0.0, "{m:?}");
    }
    let placements = std::fs::read_to_string(out.join("cluster-placements.csv")).unwrap();
    let schedulable = [name_of(&labelled), name_of(&unpriced_gpu), name_of(&cpu)];
    for line in placements.lines().skip(1) {
        let node = line.split(',').nth(8).unwrap();
        assert!(
            node.is_empty() || schedulable.iter().any(|n| n == node),
            "{line}"
        );
    }
}
