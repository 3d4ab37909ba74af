//! End-to-end: a real kube-scheduler (built from k8s.io/kubernetes by `scripts/build-kube`)
//! schedules pods through the Worker (Miniflare, HTTPS with a private CA) using the shipped
//! `k8s/scheduler-config.yaml`. Run with `scripts/e2e` (builds the control plane and the Worker
//! first). The scenarios:
//!
//! 1. GPU pods land on GPU nodes of an allowed model; CPU pods anywhere that fits.
//! 2. Latency targets hold; an impossible target leaves the pod Pending with our reason.
//! 3. Each tenant's placements are confirmed in its own colony, and teach no trail by themselves
//!    (outcomes do: `e2e_reporter.rs` 4).
//! 4. Cheaper eligible nodes win over a batch, compared with kube-scheduler alone.
//! 5. Fallback: Worker unreachable / HTTP 500 / hanging / stopped → pods still schedule; back
//!    up → the Worker decides again.
//! 6. 1 and 2 run with `nodeCacheCapable: false` (node objects) and `true` (names + KV facts),
//!    in the two-verb install (`k8s/scheduler-config-filter.yaml`, the Worker's filter) and the
//!    one-verb default (`k8s/scheduler-config.yaml` + the reporter's admission webhook).
//!
//! Nodes are Node objects from the OpenB trace (`../shared/data/openb/`) with
//! `status.allocatable` patched in (no kubelet) plus the labels the Worker reads. The real
//! `aco-reporter` binary runs beside them (`Env::start_with_reporter`): node facts and
//! placements reach the Worker only from it, never from test code.
//! The tests run one at a time (each starts its own etcd + apiserver + Worker): the machine has
//! two cores, and scheduling outcomes should not depend on CPU contention.

// SERIAL is held for a whole test, across awaits, on purpose: each test has its own runtime and
// the lock only keeps two control planes from running at once.
#![allow(clippy::await_holding_lock)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use aco_testkit::api::WorkerApi;
use aco_testkit::api::WorkerHttp;

use aco_testkit::k8s_openapi::api::apps::v1::Deployment;
use aco_testkit::k8s_openapi::api::core::v1::{Event, Pod, Secret};
use aco_testkit::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::{name_of, set_label, set_name};

use aco_testkit::kube::{host_port, install, typed, Kube, ProxyMode, SchedulerConfig};
use aco_testkit::openb::openb_cpu_nodes;
use serde_json::{json, Value};
const BIND_TIMEOUT: Duration = Duration::from_secs(60);

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The FailedScheduling events of a pod (waits until at least one is there).
async fn failed_scheduling_messages(kube: &Kube, ns: &str, name: &str) -> Vec<String> {
    aco_testkit::kube::wait_for(
        &format!("FailedScheduling event of {ns}/{name}"),
        BIND_TIMEOUT,
        || async move {
            let msgs: Vec<String> = kube
                .pod_events(ns, name)
                .await
                .iter()
                .map(typed::<Event>)
                .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
                .map(|e| e.message.unwrap_or_default())
                .collect();
            (!msgs.is_empty()).then_some(msgs)
        },
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// 1, 2, 6: hard constraints, in both installs and both node modes

/// The constraints in both installs: two verbs (`k8s/scheduler-config-filter.yaml`: the
/// Worker's filter decides, its reasons in the Pending pods' events) and one verb (the shipped
/// `k8s/scheduler-config.yaml` with the reporter's admission webhook, `k8s/webhook/webhook.yaml`:
/// kube-scheduler decides on the required node affinity the webhook wrote), each in both node
/// modes. The same pods land on the same kinds of node; an impossible one stays Pending with
/// a reason a user can read (one verb: "didn't match Pod's node affinity/selector", and the
/// pod's annotation saying what it requires).
#[tokio::test]
async fn constraints_hold_in_both_installs_and_node_modes() {
    let _serial = serial();
    let env = Env::start_with_reporter().await;
    let kube = env.kube();
    let nodes = constraint_nodes();
    env.add_nodes(&nodes).await;
    let by_name: HashMap<String, Value> = nodes.iter().map(|n| (name_of(n), n.clone())).collect();
    let model = |node: &str| label(&by_name[node], "aco/gpu-type");
    let latency = |node: &str| {
        label(&by_name[node], "aco/latency-us")
            .parse::<u32>()
            .unwrap()
    };
    let is_gpu = |node: &str| !model(node).is_empty();

    // Two verbs first: the webhook, once registered, applies to every later pod.
    for (one_verb, node_cache_capable) in
        [(false, false), (false, true), (true, false), (true, true)]
    {
        if one_verb && !node_cache_capable {
            env.install_webhook().await;
        }
        let ns = format!(
            "{}-{}",
            if one_verb { "one-verb" } else { "two-verbs" },
            if node_cache_capable {
                "names"
            } else {
                "objects"
            }
        );
        kube.create_namespace(&ns).await;
        let config = if one_verb {
            env.worker_config(node_cache_capable)
        } else {
            env.worker_config_filter(node_cache_capable)
        };
        let mut sched = env
            .cp
            .start_scheduler(&format!("scheduler-{ns}"), &config)
            .await;

        let v100 = || ("scheduling.aco/gpu-models", "V100M16|V100M32".to_owned());
        let mut pods = Vec::new();
        for i in 0..5 {
            pods.push(pod(
                &ns,
                &format!("gpu-v100-{i}"),
                PodOpts {
                    gpus: 1,
                    annotations: vec![v100()],
                    ..Default::default()
                },
            ));
        }
        for i in 0..3 {
            pods.push(pod(
                &ns,
                &format!("gpu-any-{i}"),
                PodOpts {
                    gpus: 1,
                    ..Default::default()
                },
            ));
        }
        for i in 0..4 {
            pods.push(pod(
                &ns,
                &format!("cpu-{i}"),
                PodOpts {
                    cpu: "2",
                    memory: "4Gi",
                    ..Default::default()
                },
            ));
        }
        for i in 0..4 {
            pods.push(pod(
                &ns,
                &format!("latency-{i}"),
                PodOpts {
                    labels: vec![("aco/workload-type", "latency-critical".into())],
                    annotations: vec![("scheduling.aco/latency-target-us", "200".into())],
                    ..Default::default()
                },
            ));
        }
        let names = create_pods(kube, &pods).await;
        // Impossible constraints: no A100 anywhere; no node within 50 µs.
        kube.create_pod(&pod(
            &ns,
            "gpu-a100",
            PodOpts {
                gpus: 1,
                annotations: vec![("scheduling.aco/gpu-models", "A100".into())],
                ..Default::default()
            },
        ))
        .await;
        kube.create_pod(&pod(
            &ns,
            "latency-impossible",
            PodOpts {
                labels: vec![("aco/workload-type", "latency-critical".into())],
                annotations: vec![("scheduling.aco/latency-target-us", "50".into())],
                ..Default::default()
            },
        ))
        .await;

        let placed = kube.wait_all_bound(&ns, &names, BIND_TIMEOUT).await;
        let placement: BTreeMap<&str, &str> = names
            .iter()
            .map(String::as_str)
            .zip(placed.iter().map(String::as_str))
            .collect();
        eprintln!("{ns}: {placement:#?}");
        for (pod, node) in &placement {
            if pod.starts_with("gpu-v100") {
                assert!(
                    model(node).starts_with("V100"),
                    "{pod} (V100 only) bound to {node} ({})",
                    model(node)
                );
            } else if pod.starts_with("gpu-any") {
                assert!(is_gpu(node), "{pod} (GPU) bound to CPU-only node {node}");
            } else if pod.starts_with("latency") {
                assert!(
                    latency(node) <= 200,
                    "{pod} (target 200 µs) bound to {node} at {} µs",
                    latency(node)
                );
            }
        }

        // 2: Pending. Two verbs: the Worker's FailedAndUnresolvableNodes reasons in status and
        // events. One verb: kube-scheduler's node affinity reason, and the webhook's annotation
        // on the pod (`kubectl describe pod`) naming what it requires, on the labels its
        // affinity reads.
        for (pod, needle, required, key) in [
            ("gpu-a100", "a100", "GPU model A100", "aco/gpu-type"),
            (
                "latency-impossible",
                "latency",
                "latency ≤ 50 µs",
                "aco/latency-us",
            ),
        ] {
            let message = kube.wait_unschedulable(&ns, pod, BIND_TIMEOUT).await;
            let events = failed_scheduling_messages(kube, &ns, pod).await;
            eprintln!("{pod}: condition: {message}\n  events: {events:?}");
            let needle = if one_verb {
                "didn't match pod's node affinity/selector"
            } else {
                needle
            };
            assert!(
                message.to_lowercase().contains(needle),
                "{pod}: condition lacks {needle:?}: {message}"
            );
            assert!(
                events.iter().any(|m| m.to_lowercase().contains(needle)),
                "{pod}: no FailedScheduling event mentions {needle:?}: {events:?}"
            );
            let stored = kube.pod(&ns, pod).await;
            let said = stored
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(WEBHOOK_ANNOTATION))
                .map(String::as_str);
            let affinity = stored
                .spec
                .as_ref()
                .and_then(|s| s.affinity.as_ref())
                .and_then(|a| a.node_affinity.as_ref())
                .map(|a| serde_json::to_string(a).unwrap())
                .unwrap_or_default();
            if one_verb {
                assert!(
                    said.is_some_and(|s| s.starts_with(required)) && affinity.contains(key),
                    "{pod}: annotation {said:?}, affinity {affinity}"
                );
            } else {
                assert_eq!(said, None, "{pod}: no webhook in the two-verb install");
            }
        }
        sched.assert_running();
        drop(sched);
        kube.delete_pods(&ns).await;
    }
}

// ---------------------------------------------------------------------------------------------
// 3: tenants kept apart; placements alone teach no trail

/// Identical CPU nodes: nothing but the pheromone trail could tell them apart.
fn identical_nodes(n: usize, prefix: &str) -> Vec<Value> {
    let base = openb_cpu_nodes().into_iter().next().unwrap();
    (0..n)
        .map(|i| {
            let mut node = base.clone();
            let name = format!("{prefix}-{i}");
            set_name(&mut node, name.clone().into());
            set_label(&mut node, "kubernetes.io/hostname", &name);
            label_node(node, 1.0, 100, false)
        })
        .collect()
}

/// Steers a pod to `node`: required to land on `node` or `other` (two feasible nodes, so the
/// extender's prioritize is called and a decision remembered), preferring `node`. The required
/// part keeps the reporter's real `requested` facts (busy nodes are cheaper to add to) from
/// pulling the pod onto a third, busier node.
fn prefer_node(node: &str, other: &str) -> Value {
    json!({"nodeAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node, other]}]}]},
    "preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100,
        "preference": {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    }]}})
}

fn tenant_pod(ns: &str, name: &str, tenant: &str, affinity: Option<Value>) -> Value {
    pod(
        ns,
        name,
        PodOpts {
            labels: vec![
                ("scheduling.aco/tenant-id", tenant.into()),
                ("aco/workload-type", "batch".into()),
            ],
            affinity,
            ..Default::default()
        },
    )
}

/// The reporter reports every pod bound through the extender: the tenant's confirmed placements
/// grow by exactly the pods bound (never more).
async fn wait_reported(env: &Env, tenant: &str, before: u64, names: &[String]) {
    env.api
        .wait_deposits(tenant, before + names.len() as u64, Duration::from_secs(60))
        .await;
}

#[tokio::test]
async fn tenants_are_kept_apart_and_placements_alone_teach_no_trail() {
    let _serial = serial();
    let env = Env::start_with_reporter().await;
    let kube = env.kube();
    let nodes = identical_nodes(5, "same");
    env.add_nodes(&nodes).await;
    let (x, y) = (name_of(&nodes[1]), name_of(&nodes[3]));
    let (w, z) = (name_of(&nodes[0]), name_of(&nodes[4]));
    let ns = "tenants";
    kube.create_namespace(ns).await;
    let _sched = env
        .cp
        .start_scheduler("scheduler", &env.worker_config(false))
        .await;

    // team-a's pods on X, team-b's on Y (a soft node affinity makes kube-scheduler choose).
    let mut confirmed = BTreeMap::new();
    for (tenant, node, other) in [("team-a", &x, &w), ("team-b", &y, &z)] {
        let hist: Vec<Value> = (0..6)
            .map(|i| {
                tenant_pod(
                    ns,
                    &format!("{tenant}-hist-{i}"),
                    tenant,
                    Some(prefer_node(node, other)),
                )
            })
            .collect();
        let names = create_pods(kube, &hist).await;
        let placed = kube.wait_all_bound(ns, &names, BIND_TIMEOUT).await;
        assert!(
            placed.iter().all(|n| n == node),
            "{tenant}'s pods should be on {node}: {placed:?}"
        );
        // Each tenant's reporter-sent placements are confirmed in its own colony only.
        wait_reported(&env, tenant, 0, &names).await;
        confirmed.insert(tenant, names.len() as u64);
    }
    for tenant in ["team-a", "team-b"] {
        let table = env.api.pheromones(tenant).await;
        assert_eq!(
            table["counters"]["deposits"].as_u64(),
            confirmed.get(tenant).copied(),
            "{tenant}: {table}"
        );
        // The pods are still running: no outcome yet, so nothing learned about any node. Only an
        // outcome deposits (a placement is mostly the colony's own choice: self-reinforcing).
        assert_eq!(table["nodes"], json!([]), "{tenant}: {table}");
    }
}

// ---------------------------------------------------------------------------------------------
// 4: cheaper nodes preferred, compared with kube-scheduler alone

#[tokio::test]
async fn cheaper_nodes_are_preferred_over_scheduler_alone() {
    let _serial = serial();
    let env = Env::start_with_reporter().await;
    let kube = env.kube();
    let costs = [0.4, 0.8, 1.6, 3.2, 6.4, 12.8];
    let nodes: Vec<Value> = identical_nodes(costs.len(), "priced")
        .into_iter()
        .zip(costs)
        .map(|(mut n, c)| {
            set_label(&mut n, "aco/cost-per-hour", &c.to_string());
            n
        })
        .collect();
    env.add_nodes(&nodes).await;
    let cost: HashMap<String, f64> = nodes
        .iter()
        .map(|n| (name_of(n), label(n, "aco/cost-per-hour").parse().unwrap()))
        .collect();
    let ns = "cost";
    kube.create_namespace(ns).await;

    let batch = |tag: &str| -> Vec<Value> {
        (0..12)
            .map(|i| {
                pod(
                    ns,
                    &format!("{tag}-{i}"),
                    PodOpts {
                        cpu: "2",
                        memory: "4Gi",
                        labels: vec![("aco/workload-type", "batch".into())],
                        ..Default::default()
                    },
                )
            })
            .collect()
    };
    let mut mean_cost = Vec::new();
    for (tag, config) in [
        ("alone", SchedulerConfig::off()),
        ("aco", env.worker_config(false)),
    ] {
        let sched = env
            .cp
            .start_scheduler(&format!("scheduler-{tag}"), &config)
            .await;
        let names = create_pods(kube, &batch(tag)).await;
        let placed = kube.wait_all_bound(ns, &names, BIND_TIMEOUT).await;
        let mean = placed.iter().map(|n| cost[n]).sum::<f64>() / placed.len() as f64;
        eprintln!("{tag}: mean cost/h per pod {mean:.2}: {placed:?}");
        mean_cost.push(mean);
        drop(sched);
        kube.delete_pods(ns).await;
    }
    let [alone, aco] = mean_cost[..] else {
        unreachable!("two runs")
    };
    assert!(
        aco < alone,
        "the extender should lower the cost per pod: alone {alone}, aco {aco}"
    );
}

// ---------------------------------------------------------------------------------------------
// 5: fallback (ignorable extender)

#[tokio::test]
async fn pods_schedule_when_worker_is_down_erroring_or_slow() {
    let _serial = serial();
    let mut env = Env::start_with_reporter().await;
    let nodes = constraint_nodes();
    env.add_nodes(&nodes).await;
    let by_name: HashMap<String, Value> = nodes.iter().map(|n| (name_of(n), n.clone())).collect();
    let ns = "fallback";
    env.kube().create_namespace(ns).await;

    // kube-scheduler → aco-netem-proxy → Worker; the proxy injects the failures.
    let proxy = env
        .cp
        .start_proxy("proxy", &host_port(&env.api.base), Duration::ZERO);
    // Two verbs: the Worker's filter is what refuses the A100 pod while it is up (the one-verb
    // install keeps that constraint without the Worker: tests/e2e_onehop.rs).
    let mut config = env.worker_config_filter(false);
    if let aco_testkit::kube::Extender::Worker { url_prefix, .. } = &mut config.extender {
        // The same path (with its token), through the proxy.
        *url_prefix = url_prefix.replace(&env.api.base, &format!("https://{}", proxy.addr));
    }
    let mut sched = env.cp.start_scheduler("scheduler", &config).await;
    // A pod only the Worker would refuse: no node has an A100.
    let a100 = |name: &str| {
        pod(
            ns,
            name,
            PodOpts {
                gpus: 1,
                annotations: vec![("scheduling.aco/gpu-models", "A100".into())],
                ..Default::default()
            },
        )
    };

    // Through the Worker: refused.
    env.kube().create_pod(&a100("via-worker")).await;
    let msg = env
        .kube()
        .wait_unschedulable(ns, "via-worker", BIND_TIMEOUT)
        .await;
    assert!(msg.to_lowercase().contains("a100"), "{msg}");
    env.kube()
        .delete(&format!("/api/v1/namespaces/{ns}/pods/via-worker"))
        .await
        .unwrap();

    // Unreachable, HTTP 500, hanging (httpTimeout 1s): kube-scheduler goes on without it.
    for (mode, name) in [
        (ProxyMode::Refuse, "refused"),
        (ProxyMode::Error, "http-500"),
        (ProxyMode::Blackhole, "hanging"),
    ] {
        proxy.set_mode(mode).await;
        env.kube().create_pod(&a100(name)).await;
        let node = env.kube().wait_bound(ns, name, BIND_TIMEOUT).await;
        eprintln!("{mode:?}: {name} bound to {node} without the Worker");
    }

    // The Worker process stopped.
    proxy.set_mode(ProxyMode::Pass).await;
    drop(env.worker.take());
    env.kube().create_pod(&a100("worker-stopped")).await;
    let node = env
        .kube()
        .wait_bound(ns, "worker-stopped", BIND_TIMEOUT)
        .await;
    eprintln!("Worker stopped: bound to {node}");

    // Back (same state dir, new port): scheduling goes through it again.
    let worker = start_worker(&env.cp, &env.worker_state);
    env.api = WorkerApi::new(&worker, &env.cp.pki.ca_pem());
    env.worker = Some(worker);
    proxy.set_upstream(&host_port(&env.api.base)).await;
    env.kube().create_pod(&a100("worker-back")).await;
    let msg = env
        .kube()
        .wait_unschedulable(ns, "worker-back", BIND_TIMEOUT)
        .await;
    assert!(msg.to_lowercase().contains("a100"), "{msg}");
    env.kube()
        .create_pod(&pod(
            ns,
            "v100-back",
            PodOpts {
                gpus: 1,
                annotations: vec![("scheduling.aco/gpu-models", "V100M16|V100M32".into())],
                ..Default::default()
            },
        ))
        .await;
    let node = env.kube().wait_bound(ns, "v100-back", BIND_TIMEOUT).await;
    assert!(
        label(&by_name[&node], "aco/gpu-type").starts_with("V100"),
        "v100-back on {node}"
    );
    sched.assert_running();
}

// ---------------------------------------------------------------------------------------------
// the shipped manifests

/// Any object's kind and metadata.
#[derive(serde::Deserialize)]
struct Manifest {
    kind: String,
    metadata: ObjectMeta,
}

/// Path in the API server for the kinds of k8s/examples.
fn collection_path(obj: &Manifest) -> String {
    let ns = obj.metadata.namespace.as_deref().unwrap_or("default");
    match obj.kind.as_str() {
        "Pod" => format!("/api/v1/namespaces/{ns}/pods"),
        "Deployment" => format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        "Job" => format!("/apis/batch/v1/namespaces/{ns}/jobs"),
        other => panic!("k8s/examples ships a {other}: add it here"),
    }
}

/// k8s/ as `kubectl apply -k` installs it (rendered by the pinned kustomize: the Secret
/// generated from scheduler-config.yaml, hashed names), then the example pods scheduled by the
/// real kube-scheduler through the Worker.
#[tokio::test]
async fn shipped_manifests_install_and_example_pods_schedule() {
    let _serial = serial();
    let env = Env::start_with_reporter().await;
    let kube = env.kube();
    let k8s = aco_testkit::repo_root().join("k8s");

    let objects = install::render(&env.cp, &env.api.base, "registry.example/aco-reporter:e2e");
    // Everything as rendered, but the admission webhook calls this test's reporter (in a
    // cluster: the Service aco-reporter-webhook and the CA cert-manager or scripts/webhook-cert
    // put in its caBundle).
    let webhook = env.local_webhook(&objects, env.reporter.as_ref().unwrap());
    let others: Vec<Value> = objects
        .iter()
        .filter(|o| typed::<Manifest>(o).kind != "MutatingWebhookConfiguration")
        .cloned()
        .collect();
    install::apply(kube, &others).await;
    env.register_webhook(&webhook).await;
    let deploy: Deployment = kube
        .get_as("/apis/apps/v1/namespaces/kube-system/deployments/aco-scheduler")
        .await
        .unwrap();
    let pod_spec = deploy
        .spec
        .and_then(|s| s.template.spec)
        .expect("a pod template spec");
    // kube-scheduler's --config is the file of the Secret generated from scheduler-config.yaml.
    let volume = pod_spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "config")
        .expect("the config volume");
    let secret_name = volume
        .secret
        .as_ref()
        .and_then(|s| s.secret_name.clone())
        .expect("a Secret volume");
    assert!(
        secret_name.starts_with("aco-scheduler-config-"),
        "the config volume is the generated, hashed Secret: {volume:?}"
    );
    // The API server decodes what kustomize wrapped: the typed Secret reads its data.
    let secret: Secret = kube
        .get_as(&format!(
            "/api/v1/namespaces/kube-system/secrets/{secret_name}"
        ))
        .await
        .unwrap();
    let file = secret
        .data
        .unwrap_or_default()
        .into_keys()
        .next()
        .expect("a file in the Secret");
    let container = &pod_spec.containers[0];
    let mount = &container.volume_mounts.as_ref().expect("mounts")[0].mount_path;
    assert!(
        container
            .command
            .iter()
            .flatten()
            .any(|arg| arg.contains(&format!("--config={mount}/{file}"))),
        "the Deployment must read the Secret's {file}: {container:?}"
    );
    let image = container.image.clone().expect("an image");
    let version = std::process::Command::new(env.cp.bin.join("kube-scheduler"))
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout)
        .trim()
        .replace("Kubernetes ", "");
    assert!(
        image.ends_with(&format!(":{version}")),
        "Deployment image {image} should be the tested {version}"
    );

    // Example pods, scheduled by kube-scheduler with the shipped config (one verb) through the
    // Worker, their constraints written by the webhook.
    env.add_nodes(&constraint_nodes()).await;
    let by_name: HashMap<String, Value> = constraint_nodes()
        .iter()
        .map(|n| (name_of(n), n.clone()))
        .collect();
    let _sched = env
        .cp
        .start_scheduler("scheduler", &env.worker_config(false))
        .await;
    let mut examples: Vec<Value> = Vec::new();
    let mut dir: Vec<_> = std::fs::read_dir(k8s.join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dir.sort();
    for path in dir {
        examples.extend(install::yaml_file(&path));
    }
    for obj in &examples {
        let manifest: Manifest = typed(obj);
        if let Some(ns) = &manifest.metadata.namespace {
            if kube.get(&format!("/api/v1/namespaces/{ns}")).await.is_err() {
                kube.create_namespace(ns).await;
            }
        }
        if manifest.kind == "Node" {
            continue; // documentation of the labels; the test nodes above carry them
        }
        kube.post(&collection_path(&manifest), obj).await;
    }
    let pods = examples
        .iter()
        .filter(|o| typed::<Manifest>(o).kind == "Pod")
        .map(typed::<Pod>);
    for p in pods {
        let spec = p.spec.as_ref().expect("a pod spec");
        assert_eq!(spec.scheduler_name.as_deref(), Some(SCHEDULER_NAME_STR));
        let ns = p.metadata.namespace.as_deref().expect("a namespace");
        let name = p.metadata.name.clone().expect("a name");
        let node = kube.wait_bound(ns, &name, BIND_TIMEOUT).await;
        let n = &by_name[&node];
        let annotations = p.metadata.annotations.clone().unwrap_or_default();
        if let Some(models) = annotations.get("scheduling.aco/gpu-models") {
            assert!(
                models.split('|').any(|m| m == label(n, "aco/gpu-type")),
                "{name} on {node}"
            );
        }
        if let Some(t) = annotations.get("scheduling.aco/latency-target-us") {
            let lat: u32 = label(n, "aco/latency-us").parse().unwrap();
            assert!(lat <= t.parse().unwrap(), "{name} on {node} at {lat} µs");
        }
        eprintln!("example {ns}/{name} -> {node}");
    }
}

const SCHEDULER_NAME_STR: &str = aco_testkit::kube::SCHEDULER_NAME;
