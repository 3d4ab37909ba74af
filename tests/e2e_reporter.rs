//! End-to-end: the closed loop with real moving parts and no test code standing in for the
//! reporter. kube-apiserver + etcd + the second kube-scheduler (names mode,
//! `nodeCacheCapable: true`) + kwok (fake kubelets: heartbeats, pods Running, usage from pod
//! annotations, pod fates) + metrics-server (the real `v1beta1.metrics.k8s.io` APIService,
//! scraping kwok) + **the `aco-reporter` binary** + the Worker over HTTPS on Miniflare.
//!
//! Nothing here calls `PUT /v1/nodes` or `POST /v1/placements`: every fact and every deposit the
//! Worker has came from the reporter watching the cluster. The scenarios are those of the
//! reporter issue:
//! 1. names mode schedules correctly (GPU model, latency, headroom) on the reporter's facts only;
//! 2. a tenant's trail moves only after real bindings, one deposit per pod bound through the
//!    extender;
//! 3. usage travels kwok → metrics-server → NodeMetrics → reporter → Worker, and
//!    latency-critical pods avoid the hot node;
//! 4. pods of one workload that fail on one node only lower its reliability, and the next
//!    latency-critical pods avoid it;
//! 5. faults: the Worker unreachable for a while, the reporter killed and restarted, the
//!    kube-apiserver restarted — every placement is deposited exactly once;
//! 6. two replicas with a Lease: one reports; kill it and the other takes over.
//!
//! Run with `scripts/e2e` (one test at a time; each starts its own cluster).

#![allow(clippy::await_holding_lock)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aco_core::api::pheromones::PheromoneTableReply;
use aco_testkit::api::WorkerHttp;
use aco_testkit::extender::FilterResult;
use aco_testkit::k8s_openapi::api::coordination::v1::Lease;
use aco_testkit::kube::fixtures::*;

use aco_testkit::kube::kwok::{NodeMetrics, FATE, USAGE_CPU};
use aco_testkit::kube::reporter::Reporter;
use aco_testkit::kube::{wait_for, ProxyMode, Server};
use aco_testkit::nodes::{allocatable_of, name_of};
use aco_testkit::openb::{openb_cpu_nodes, pick_gpu_nodes};
use aco_testkit::pods::{edit_pod, edit_spec};
use serde_json::{json, Value};

const BIND_TIMEOUT: Duration = Duration::from_secs(90);

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The closed loop: control plane, kwok, metrics-server, the Worker, kube-scheduler in names
/// mode, and reporters started on demand.
struct Loop {
    env: Env,
    _kwok: Server,
    _metrics_server: Option<Server>,
    _scheduler: Server,
    /// The Worker URL the reporters use (a proxy in the fault test).
    reporter_worker_url: String,
}

impl Loop {
    async fn start(nodes: &[Value], with_metrics: bool) -> Loop {
        let env = Env::start().await;
        let kwok = env.cp.start_kwok().await;
        let metrics_server = if with_metrics {
            Some(env.cp.start_metrics_server().await)
        } else {
            None
        };
        create_kwok_nodes(env.kube(), nodes).await;
        for n in nodes {
            let name = name_of(n);
            let kube = env.kube().clone();
            wait_for(
                &format!("kwok node {name} Ready"),
                Duration::from_secs(60),
                || {
                    let (kube, name) = (kube.clone(), name.clone());
                    async move {
                        let node = kube.try_node(&name).await?;
                        let ready = node
                            .status?
                            .conditions?
                            .iter()
                            .any(|c| c.type_ == "Ready" && c.status == "True");
                        ready.then_some(())
                    }
                },
            )
            .await;
        }
        let scheduler = env
            .cp
            .start_scheduler("scheduler", &env.worker_config(true))
            .await;
        let reporter_worker_url = env.api.base.clone();
        Loop {
            env,
            _kwok: kwok,
            _metrics_server: metrics_server,
            _scheduler: scheduler,
            reporter_worker_url,
        }
    }

    fn start_reporter(&self, name: &str, extra: &[&str]) -> Reporter {
        Reporter::start(&self.env.cp, &self.reporter_worker_url, name, extra, false)
    }

    fn kube(&self) -> &aco_testkit::kube::Kube {
        self.env.kube()
    }

    async fn wait_nodes_reported(&self, reporter: &mut Reporter, n: usize) {
        reporter
            .wait_nodes_reported(n, Duration::from_secs(60))
            .await;
    }

    // Colony reads go through the shared fixtures (`WorkerApi`), as in the kube-scheduler suite.
    async fn table(&self, tenant: &str) -> PheromoneTableReply {
        self.env.api.pheromone_table(tenant).await
    }

    async fn deposits(&self, tenant: &str) -> u64 {
        self.env.api.deposits(tenant).await
    }

    async fn wait_deposits(&self, tenant: &str, n: u64, timeout: Duration) {
        self.env.api.wait_deposits(tenant, n, timeout).await
    }

    /// The Worker's prioritize scores for a pod over node names (what kube-scheduler would get).
    async fn scores(&self, pod: &Value, nodes: &[String]) -> BTreeMap<String, i64> {
        let body = json!({"Pod": pod, "NodeNames": nodes});
        let r = self.env.api.prioritize_args(body.to_string()).await;
        r.into_iter().map(|h| (h.host, h.score)).collect()
    }

    /// The Worker's filter answer for a pod over node names.
    async fn filter(&self, pod: &Value, nodes: &[String]) -> FilterResult {
        self.env.api.filter(pod, nodes).await
    }
}

fn with_uid(pod: Value, uid: &str) -> Value {
    edit_pod(pod, |p| p.metadata.uid = Some(uid.into()))
}

/// The failures recorded on `node` in a colony table (0 when it has no trail).
fn failures(table: &PheromoneTableReply, node: &str) -> f64 {
    table
        .nodes
        .iter()
        .find(|e| e.node == node)
        .map_or(0.0, |e| e.failures)
}

/// A pod bound directly to `node` (no scheduler involved): load that is not ours to report.
fn bound_elsewhere(ns: &str, name: &str, node: &str, cpu: &str, usage_cpu: &str) -> Value {
    let p = pod(
        ns,
        name,
        PodOpts {
            cpu,
            memory: "64Mi",
            annotations: vec![(USAGE_CPU, usage_cpu.into())],
            ..Default::default()
        },
    );
    edit_spec(p, |spec| {
        spec.scheduler_name = Some("default-scheduler".into());
        spec.node_name = Some(node.into());
    })
}

fn latency_critical(ns: &str, name: &str, target_us: Option<u32>) -> Value {
    let mut annotations = vec![];
    if let Some(t) = target_us {
        annotations.push(("scheduling.aco/latency-target-us", t.to_string()));
    }
    pod(
        ns,
        name,
        PodOpts {
            cpu: "500m",
            memory: "256Mi",
            labels: vec![("aco/workload-type", "latency-critical".into())],
            annotations,
            ..Default::default()
        },
    )
}

// ---------------------------------------------------------------------------------------------
// 1 + 2: names mode on the reporter's facts; trails move only with real bindings

#[tokio::test]
async fn names_mode_schedules_on_reporter_facts_and_deposits_equal_bindings() {
    let _serial = serial();
    let nodes: Vec<Value> = pick_gpu_nodes(&["V100M16", "V100M16", "T4", "T4"])
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            kwok_node(label_node(
                n,
                1.0 + i as f64 * 0.5,
                if i % 2 == 0 { 200 } else { 3_000 },
                false,
            ))
        })
        .collect();
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let lp = Loop::start(&nodes, false).await;
    let kube = lp.kube();
    kube.create_namespace("team-a").await;

    // Before the reporter runs the Worker knows no node: names mode rejects every one.
    let probe = pod("team-a", "probe", PodOpts::default());
    let before = lp
        .filter(&with_uid(probe.clone(), "probe-uid"), &names)
        .await;
    assert_eq!(before.node_names, Some(vec![]), "{before:?}");

    let mut reporter = lp.start_reporter("reporter", &["--no-node-metrics"]);
    lp.wait_nodes_reported(&mut reporter, nodes.len()).await;
    // The one-verb install (prioritize only): the reporter's admission webhook writes the GPU
    // model and latency constraints into the pods' node affinity.
    lp.env.install_webhook_for(&reporter).await;
    assert!(
        lp.table("team-a").await.nodes.is_empty(),
        "no trail before any binding"
    );

    // GPU model and latency: enforced by kube-scheduler on the webhook's affinity, scored by
    // the Worker on reported facts.
    let gpu = pod(
        "team-a",
        "gpu-v100",
        PodOpts {
            gpus: 1,
            annotations: vec![("scheduling.aco/gpu-models", "V100M16".into())],
            ..Default::default()
        },
    );
    let lc = latency_critical("team-a", "lc-near", Some(1_000));
    let batch: Vec<Value> = (0..4)
        .map(|i| pod("team-a", &format!("batch-{i}"), PodOpts::default()))
        .collect();
    let mut all = vec![gpu, lc];
    all.extend(batch);
    let created = create_pods(kube, &all).await;
    let placed = kube.wait_all_bound("team-a", &created, BIND_TIMEOUT).await;
    let by_name: BTreeMap<String, &Value> = nodes.iter().map(|n| (name_of(n), n)).collect();
    assert_eq!(
        label(by_name[&placed[0]], "aco/gpu-type"),
        "V100M16",
        "gpu pod on {}",
        placed[0]
    );
    let lat: u32 = label(by_name[&placed[1]], "aco/latency-us")
        .parse()
        .unwrap();
    assert!(
        lat <= 1_000,
        "latency-critical pod on {} at {lat} µs",
        placed[1]
    );

    // Deposits: exactly the pods bound through the extender (6), none for a pod bound directly.
    let other = bound_elsewhere("team-a", "direct", &names[0], "100m", "10m");
    kube.create_pod(&other).await;
    lp.wait_deposits("team-a", created.len() as u64, Duration::from_secs(60))
        .await;
    let table = lp.table("team-a").await;
    // Confirmed, each once; the pods still run, so no outcome has reached the trail yet.
    assert_eq!(
        (table.confirmed_pods, table.nodes.len()),
        (created.len() as u64, 0),
        "{table:?}"
    );
    assert!(
        reporter
            .metric("aco_reporter_reports_sent_total{kind=\"placements\"}")
            .await
            >= created.len() as f64
    );

    // Headroom from the reporter's `requested`: fill one node with directly bound pods; the
    // Worker then refuses it for a pod that no longer fits — a reason only facts can give.
    let full = &names[2];
    let alloc_cpu = allocatable_of(by_name[full], "cpu").expect("allocatable cpu");
    let filler = bound_elsewhere("team-a", "filler", full, &alloc_cpu, "10m");
    kube.create_pod(&filler).await;
    let big = with_uid(
        pod(
            "team-a",
            "big",
            PodOpts {
                cpu: "2",
                ..Default::default()
            },
        ),
        "big-uid",
    );
    let rejected = wait_for(
        "the Worker to see the filled node",
        Duration::from_secs(30),
        || {
            let (big, names) = (big.clone(), names.clone());
            let lp = &lp;
            async move {
                let r = lp.filter(&big, &names).await;
                r.failed_nodes.get(full.as_str()).cloned()
            }
        },
    )
    .await;
    assert!(
        rejected.to_lowercase().contains("cpu"),
        "reason for {full}: {rejected}"
    );
    reporter.server.assert_running();
}

// ---------------------------------------------------------------------------------------------
// 3: usage travels to the Worker; latency-critical pods avoid the hot node

#[tokio::test]
async fn usage_reaches_the_worker_and_latency_critical_pods_avoid_the_hot_node() {
    let _serial = serial();
    // Identical nodes: nothing but load tells them apart.
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(3)
        .map(|n| kwok_node(label_node(n, 1.0, 300, false)))
        .collect();
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let lp = Loop::start(&nodes, true).await;
    let kube = lp.kube();
    kube.create_namespace("svc").await;
    let mut reporter = lp.start_reporter("reporter", &[]);
    lp.wait_nodes_reported(&mut reporter, nodes.len()).await;

    // Make names[0] hot: pods bound directly with tiny requests but high real usage.
    let hot = &names[0];
    let alloc_milli = aco_testkit::kube::kwok::quantity(
        &allocatable_of(&nodes[0], "cpu").expect("allocatable cpu"),
    )
    .unwrap()
        * 1000.0;
    let per_pod = format!("{}m", (alloc_milli * 0.9 / 4.0) as u64);
    for i in 0..4 {
        kube.create_pod(&bound_elsewhere(
            "svc",
            &format!("hog-{i}"),
            hot,
            "10m",
            &per_pod,
        ))
        .await;
    }
    let seen_hot = Instant::now();
    let probe = with_uid(latency_critical("svc", "probe", None), "probe-uid");
    let scores = wait_for(
        "the hot node to score below the others",
        Duration::from_secs(120),
        || {
            let (probe, names) = (probe.clone(), names.clone());
            let lp = &lp;
            async move {
                let s = lp.scores(&probe, &names).await;
                (s[&names[0]] < s[&names[1]] && s[&names[0]] < s[&names[2]]).then_some(s)
            }
        },
    )
    .await;
    eprintln!(
        "usage reached the Worker {:?} after the hogs were created: {scores:?}",
        seen_hot.elapsed()
    );
    let metrics: NodeMetrics = kube
        .get_as(&format!("/apis/metrics.k8s.io/v1beta1/nodes/{hot}"))
        .await
        .unwrap();
    eprintln!("NodeMetrics of {hot}: {:?}", metrics.usage);

    let lcs: Vec<Value> = (0..4)
        .map(|i| latency_critical("svc", &format!("lc-{i}"), None))
        .collect();
    let created = create_pods(kube, &lcs).await;
    let placed = kube.wait_all_bound("svc", &created, BIND_TIMEOUT).await;
    assert!(
        placed.iter().all(|n| n != hot),
        "latency-critical pods on the hot node: {placed:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 4: outcomes lower a node's reliability; the next latency-critical pods avoid it

#[tokio::test]
async fn failing_pods_lower_reliability_and_latency_critical_pods_move_away() {
    let _serial = serial();
    // names[0] is cheaper: without outcomes every pod prefers it.
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(2)
        .enumerate()
        .map(|(i, n)| kwok_node(label_node(n, if i == 0 { 0.5 } else { 1.0 }, 300, false)))
        .collect();
    let names: Vec<String> = nodes.iter().map(name_of).collect();
    let lp = Loop::start(&nodes, false).await;
    let kube = lp.kube();
    kube.create_namespace("jobs").await;
    // The crashing pods are one workload (label `app: crash`): an application error is the
    // node's once the workload fails twice on it and nowhere else (crates/reporter/src/outcome.rs).
    let mut reporter = lp.start_reporter(
        "reporter",
        &["--no-node-metrics", "--workload-label", "app"],
    );
    lp.wait_nodes_reported(&mut reporter, nodes.len()).await;

    let probe = with_uid(latency_critical("jobs", "probe", None), "probe-uid");
    let before = lp.scores(&probe, &names).await;
    assert!(
        before[&names[0]] > before[&names[1]],
        "the cheaper node should win at first: {before:?}"
    );

    // Pods that fail (kwok: phase Failed, container Error exit 1) one at a time, so that each
    // is scored while the previous failures are known; they land on the cheap node.
    let mut failed_on_cheap = 0;
    for i in 0..12 {
        let p = pod(
            "jobs",
            &format!("crash-{i}"),
            PodOpts {
                cpu: "100m",
                memory: "64Mi",
                labels: vec![("app", "crash".into())],
                annotations: vec![(FATE, "failed".into())],
                ..Default::default()
            },
        );
        let p = edit_spec(p, |spec| spec.restart_policy = Some("Never".into()));
        kube.create_pod(&p).await;
        let node = kube
            .wait_bound("jobs", &format!("crash-{i}"), BIND_TIMEOUT)
            .await;
        let name = format!("crash-{i}");
        wait_for(&format!("{name} Failed"), Duration::from_secs(60), || {
            let kube = kube.clone();
            let name = name.clone();
            async move {
                let phase = kube.pod("jobs", &name).await.status?.phase;
                (phase.as_deref() == Some("Failed")).then_some(())
            }
        })
        .await;
        if node == names[0] {
            failed_on_cheap += 1;
        }
        let table = lp.table("jobs").await;
        // Counts fade with OUTCOME_HALF_LIFE_MS (1 h): minutes fade an outcome by far less than
        // half of one, so the rounded count is the outcomes recorded.
        let failed = |n: &str| failures(&table, n).round();
        // Wait for this pod's outcome to be recorded before the next one is scored.
        // The first failure stays undecided until the second one on the same node.
        let want = if failed_on_cheap >= 2 {
            failed_on_cheap as f64
        } else {
            0.0
        };
        if failed(&names[0]) < want {
            wait_for(
                &format!("outcome of {name}"),
                Duration::from_secs(60),
                || {
                    let lp = &lp;
                    let n0 = names[0].clone();
                    async move {
                        let t = lp.table("jobs").await;
                        (failures(&t, &n0).round() >= want).then_some(())
                    }
                },
            )
            .await;
        }
        let s = lp.scores(&probe, &names).await;
        if s[&names[0]] < s[&names[1]] {
            break;
        }
    }
    // Two at least: the first failure is undecided until the second on the same node
    // (attribution), and η prices a latency-critical pod's failure risk at SLA_VIOLATION_COST,
    // so the second decided failure already outweighs the price difference.
    assert!(
        failed_on_cheap >= 2,
        "the failing pods should have landed on the cheap node first ({failed_on_cheap})"
    );
    let after = lp.scores(&probe, &names).await;
    assert!(
        after[&names[0]] < after[&names[1]],
        "after {failed_on_cheap} failures the cheap node should lose: {after:?}"
    );
    let t = lp.table("jobs").await;
    eprintln!(
        "after {failed_on_cheap} failures: scores {after:?}, table {:?}",
        t.nodes
    );

    let lcs: Vec<Value> = (0..3)
        .map(|i| latency_critical("jobs", &format!("lc-{i}"), None))
        .collect();
    let created = create_pods(kube, &lcs).await;
    let placed = kube.wait_all_bound("jobs", &created, BIND_TIMEOUT).await;
    assert!(
        placed.iter().all(|n| *n == names[1]),
        "latency-critical pods should avoid the failing node: {placed:?}"
    );
    assert!(
        reporter
            .metric("aco_reporter_reports_sent_total{kind=\"outcomes\"}")
            .await
            >= 1.0
    );
}

// ---------------------------------------------------------------------------------------------
// 5: faults — Worker unreachable, reporter killed and restarted: exactly once

#[tokio::test]
async fn worker_outage_and_reporter_restart_lose_nothing_and_double_nothing() {
    let _serial = serial();
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(3)
        .map(|n| kwok_node(label_node(n, 1.0, 300, false)))
        .collect();
    let mut lp = Loop::start(&nodes, false).await;
    // The reporter reaches the Worker through a proxy we can cut; kube-scheduler does not, so
    // decisions are still made (and remembered) while the reporter cannot report.
    let upstream = aco_testkit::kube::host_port(&lp.env.api.base);
    let proxy = lp
        .env
        .cp
        .start_proxy("reporter-proxy", &upstream, Duration::ZERO);
    lp.reporter_worker_url = format!("https://{}", proxy.addr);
    let kube = lp.kube();
    kube.create_namespace("t").await;
    let mut reporter = lp.start_reporter("reporter", &["--no-node-metrics"]);
    lp.wait_nodes_reported(&mut reporter, nodes.len()).await;

    let first: Vec<Value> = (0..5)
        .map(|i| pod("t", &format!("a-{i}"), PodOpts::default()))
        .collect();
    let first = create_pods(kube, &first).await;
    kube.wait_all_bound("t", &first, BIND_TIMEOUT).await;
    lp.wait_deposits("t", 5, Duration::from_secs(60)).await;

    // The Worker is unreachable for the reporter: pods keep binding, reports queue and retry.
    proxy.set_mode(ProxyMode::Refuse).await;
    let during: Vec<Value> = (0..5)
        .map(|i| pod("t", &format!("b-{i}"), PodOpts::default()))
        .collect();
    let during = create_pods(kube, &during).await;
    kube.wait_all_bound("t", &during, BIND_TIMEOUT).await;
    wait_for(
        "failed deliveries while the Worker is unreachable",
        Duration::from_secs(60),
        || async {
            (reporter
                .metric("aco_reporter_reports_failed_total{kind=\"placements\"}")
                .await
                >= 2.0)
                .then_some(())
        },
    )
    .await;
    assert!(
        reporter.metric("aco_reporter_queue_depth").await >= 1.0,
        "reports should wait in the queue"
    );
    assert_eq!(
        lp.deposits("t").await,
        5,
        "nothing arrives while the Worker is unreachable"
    );
    proxy.set_mode(ProxyMode::Pass).await;
    lp.wait_deposits("t", 10, Duration::from_secs(60)).await;

    // Killed mid-run (SIGKILL: no graceful flush); pods bind while it is down; a new process
    // re-derives what may be unreported from the API server. The Worker counts the repeats as
    // duplicates and deposits each pod once.
    reporter.server.kill();
    let gap: Vec<Value> = (0..5)
        .map(|i| pod("t", &format!("c-{i}"), PodOpts::default()))
        .collect();
    let gap = create_pods(kube, &gap).await;
    kube.wait_all_bound("t", &gap, BIND_TIMEOUT).await;
    let dup_before = lp.table("t").await.counters.duplicate_reports;
    let mut restarted = lp.start_reporter("reporter-2", &["--no-node-metrics"]);
    lp.wait_nodes_reported(&mut restarted, nodes.len()).await;
    lp.wait_deposits("t", 15, Duration::from_secs(60)).await;
    // The restarted reporter re-sent the ten placements the Worker already had.
    wait_for(
        "the re-sent placements counted as duplicates",
        Duration::from_secs(30),
        || async {
            let d = lp.table("t").await.counters.duplicate_reports;
            (d >= dup_before + 10).then_some(d)
        },
    )
    .await;
    assert_eq!(lp.deposits("t").await, 15);

    // kube-apiserver restarted: every watch breaks; the reporter's resume, and pods bound
    // afterwards are reported (once).
    lp.env.cp.restart_apiserver().await;
    let kube = lp.kube();
    let after: Vec<Value> = (0..5)
        .map(|i| pod("t", &format!("d-{i}"), PodOpts::default()))
        .collect();
    let after = create_pods(kube, &after).await;
    kube.wait_all_bound("t", &after, BIND_TIMEOUT).await;
    lp.wait_deposits("t", 20, Duration::from_secs(90)).await;
    restarted.server.assert_running();
    eprintln!(
        "pod watch errors across the apiserver restart: {}",
        restarted
            .metric("aco_reporter_watch_errors_total{kind=\"pods\"}")
            .await
    );
}

// ---------------------------------------------------------------------------------------------
// 6: two replicas, one leader; kill it and the other takes over

#[tokio::test]
async fn two_replicas_one_reports_and_the_standby_takes_over() {
    let _serial = serial();
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(2)
        .map(|n| kwok_node(label_node(n, 1.0, 300, false)))
        .collect();
    let lp = Loop::start(&nodes, false).await;
    let kube = lp.kube();
    kube.create_namespace("ha").await;
    // The Lease where the installed reporter keeps it (POD_NAMESPACE): k8s/base/reporter.yaml's Role
    // allows no other namespace, and the reporters run with that RBAC.
    let lease = [
        "--leader-elect",
        "true",
        "--lease-namespace",
        "kube-system",
        "--lease-duration",
        "6s",
        "--lease-grace",
        "4s",
        "--renew-deadline",
        "4s",
        "--no-node-metrics",
    ];
    let mut a = lp.start_reporter(
        "reporter-a",
        &[&lease[..], &["--identity", "reporter-a"]].concat(),
    );
    let mut b = lp.start_reporter(
        "reporter-b",
        &[&lease[..], &["--identity", "reporter-b"]].concat(),
    );

    let holder = wait_for("one leader", Duration::from_secs(60), || async {
        let la = a.metric("aco_reporter_leader").await;
        let lb = b.metric("aco_reporter_leader").await;
        match (la as i64, lb as i64) {
            (1, 0) => Some("reporter-a"),
            (0, 1) => Some("reporter-b"),
            _ => None,
        }
    })
    .await;
    let lease_obj: Lease = kube
        .get_as("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/aco-reporter")
        .await
        .unwrap();
    assert_eq!(
        lease_obj.spec.and_then(|s| s.holder_identity).as_deref(),
        Some(holder)
    );
    let (leader, standby) = if holder == "reporter-a" {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    lp.wait_nodes_reported(leader, nodes.len()).await;

    let first: Vec<Value> = (0..4)
        .map(|i| pod("ha", &format!("a-{i}"), PodOpts::default()))
        .collect();
    let first = create_pods(kube, &first).await;
    kube.wait_all_bound("ha", &first, BIND_TIMEOUT).await;
    lp.wait_deposits("ha", 4, Duration::from_secs(60)).await;
    assert_eq!(
        standby
            .metric("aco_reporter_reports_sent_total{kind=\"placements\"}")
            .await,
        0.0,
        "the standby must not report"
    );
    assert_eq!(
        standby
            .metric("aco_reporter_reports_sent_total{kind=\"nodes\"}")
            .await,
        0.0,
        "the standby must not report"
    );

    // SIGKILL: the lease is not released; the standby takes over when it expires.
    leader.server.kill();
    let killed = Instant::now();
    // Bounded by the lease: 6 s after the last renewal, plus the standby's retry period and a
    // loaded machine's slack. Without a working election this never happens.
    wait_for("the standby to lead", Duration::from_secs(20), || async {
        (standby.metric("aco_reporter_leader").await == 1.0).then_some(())
    })
    .await;
    let takeover = killed.elapsed();
    eprintln!("standby took over {takeover:?} after the leader was killed (lease 6 s)");

    let second: Vec<Value> = (0..4)
        .map(|i| pod("ha", &format!("b-{i}"), PodOpts::default()))
        .collect();
    let second = create_pods(kube, &second).await;
    kube.wait_all_bound("ha", &second, BIND_TIMEOUT).await;
    lp.wait_deposits("ha", 8, Duration::from_secs(60)).await;
    standby.server.assert_running();
}
