//! End-to-end: the one-verb install — the shipped `k8s/scheduler-config.yaml` (the extender is
//! asked only `prioritize`) with the reporter's admission webhook (`k8s/webhook/webhook.yaml`, rendered
//! by the pinned kustomize) registered with a real kube-apiserver — in which kube-scheduler
//! enforces the hard constraints itself, on the required node affinity the webhook writes.
//! (`tests/e2e_kube_constraints.rs` runs the constraint scenario of the filter verb in both installs.)
//!
//! 1. Latency targets at the boundary, in a real kube-scheduler: a node at exactly the target
//!    passes, one µs above does not, a fractional target rounds down, a node without a latency
//!    label never passes — exactly the nodes the Worker's filter passes; a pod's own required
//!    node affinity still holds (ours is ANDed into each of its terms). With the Worker stopped
//!    the constraints still hold: they no longer depend on the edge.
//! 2. The webhook itself: an unusable annotation is refused at creation with the Worker's
//!    message; while the webhook is up, pods outside its scope are never sent to it; while it
//!    hangs past `timeoutSeconds`, refuses connections or is stopped, creating a pod in its
//!    scope fails (`failurePolicy: Fail`, as documented) and every other pod is created as if
//!    it did not exist — pods of other schedulers, pods without constraints, opted-out pods and
//!    namespaces.

// SERIAL is held for a whole test, across awaits, on purpose: each test has its own runtime and
// the lock only keeps two control planes from running at once.
#![allow(clippy::await_holding_lock)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aco_testkit::api::WorkerHttp;
use aco_testkit::k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use aco_testkit::k8s_openapi::api::core::v1::{Container, Pod};
use aco_testkit::k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use aco_testkit::kube::fixtures::*;
use aco_testkit::kube::reporter::sample;
use aco_testkit::kube::{install, typed, wait_for, Kube, ProxyMode};
use aco_testkit::nodes::{name_of, set_label};
use aco_testkit::pods::{edit_pod, edit_spec};
use serde_json::{json, Value};

const BIND_TIMEOUT: Duration = Duration::from_secs(60);
/// The shipped webhook's `timeoutSeconds` (k8s/webhook/webhook.yaml).
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(3);
const AFFINITY_REASON: &str = "didn't match pod's node affinity/selector";

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the admission webhook wrote on a pod, if it did.
fn webhook_annotation(p: &Pod) -> Option<&str> {
    p.metadata
        .annotations
        .as_ref()?
        .get(WEBHOOK_ANNOTATION)
        .map(String::as_str)
}

/// A CPU node with this latency label (none: no label).
fn edge_node(name: &str, latency_us: Option<u32>) -> Value {
    let mut node = cpu_node(name, "8", "16Gi");
    if let Some(l) = latency_us {
        set_label(&mut node, "aco/latency-us", &l.to_string());
    }
    node
}

/// Required node affinity of the pod's own: each inner list one term (`kubernetes.io/hostname
/// In` those nodes), the terms ORed.
fn own_terms(terms: &[&[&str]]) -> Value {
    let terms: Vec<Value> = terms
        .iter()
        .map(|hosts| json!({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": hosts}]}))
        .collect();
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}})
}

fn latency_pod(ns: &str, name: &str, target: &str, affinity: Option<Value>) -> Value {
    pod(
        ns,
        name,
        PodOpts {
            annotations: vec![(LATENCY_TARGET_ANNOTATION, target.into())],
            affinity,
            ..Default::default()
        },
    )
}

/// Waits until the pod is bound (its node) or Unschedulable (`None`, after checking the reason
/// is kube-scheduler's node affinity one).
async fn outcome(kube: &Kube, ns: &str, name: &str) -> Option<String> {
    let state = wait_for(
        &format!("{ns}/{name} bound or Unschedulable"),
        BIND_TIMEOUT,
        || async move {
            let p = kube.pod(ns, name).await;
            if let Some(node) = p.spec.and_then(|s| s.node_name) {
                return Some(Ok(node));
            }
            p.status?.conditions?.into_iter().find_map(|c| {
                (c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable"))
                    .then(|| Err(c.message.unwrap_or_default()))
            })
        },
    )
    .await;
    match state {
        Ok(node) => Some(node),
        Err(message) => {
            assert!(
                message.to_lowercase().contains(AFFINITY_REASON),
                "{name}: {message}"
            );
            None
        }
    }
}

#[tokio::test]
async fn latency_boundary_own_affinity_and_a_stopped_worker() {
    let _serial = serial();
    let mut env = Env::start_with_reporter().await;
    env.install_webhook().await;
    let kube = env.kube().clone();
    let mut nodes = constraint_nodes();
    nodes.extend([
        edge_node("edge-250", Some(250)),
        edge_node("edge-251", Some(251)),
        edge_node("edge-nolabel", None),
    ]);
    env.add_nodes(&nodes).await;
    let ns = "boundary";
    kube.create_namespace(ns).await;
    let mut sched = env
        .cp
        .start_scheduler("scheduler", &env.worker_config(true))
        .await;

    // (pod, latency target, the pod's own terms): where kube-scheduler may put it is where the
    // Worker's filter passes it among the nodes its own terms allow.
    let cases: [(&str, &str, &[&[&str]]); 6] = [
        (
            "at-target",
            "250",
            &[&["edge-250", "edge-251", "edge-nolabel"]],
        ),
        ("above-target", "250", &[&["edge-251", "edge-nolabel"]]),
        ("fraction-rounds-down", "250.9", &[&["edge-251"]]),
        ("one-more", "251", &[&["edge-251"]]),
        ("own-terms-ored", "250", &[&["edge-251"], &["edge-250"]]),
        ("no-label-never", "100000", &[&["edge-nolabel"]]),
    ];
    let mut expected: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (name, target, terms) in cases {
        let p = latency_pod(ns, name, target, Some(own_terms(terms)));
        let created: Pod = typed(&kube.create_pod(&p).await);
        let annotation = webhook_annotation(&created).unwrap_or_default();
        assert!(
            annotation.starts_with(&format!("latency ≤ {target} µs")),
            "{name}: {annotation:?}"
        );
        // The Worker's filter (names mode, the reporter's facts) over the same nodes.
        let allowed: Vec<&str> = terms.iter().flat_map(|t| t.iter().copied()).collect();
        let body = json!({"Pod": p, "NodeNames": allowed});
        let reply = env.api.filter_args(body.to_string()).await;
        let passed: BTreeSet<String> = reply.passed().into_iter().collect();
        expected.insert(name, passed);
    }
    for (name, passed) in &expected {
        let got = outcome(&kube, ns, name).await;
        eprintln!("{name}: kube-scheduler {got:?}, the Worker's filter {passed:?}");
        match &got {
            Some(node) => assert!(
                passed.contains(node),
                "{name} bound to {node}, filter passed {passed:?}"
            ),
            None => assert!(
                passed.is_empty(),
                "{name} Pending, filter passed {passed:?}"
            ),
        }
    }
    let bound = |n: &str| expected[n].len();
    assert_eq!(
        [
            bound("at-target"),
            bound("above-target"),
            bound("fraction-rounds-down")
        ],
        [1, 0, 0],
        "the boundary: 250 µs meets 250 and 250.9, 251 meets neither"
    );
    assert_eq!(
        (
            bound("one-more"),
            bound("own-terms-ored"),
            bound("no-label-never")
        ),
        (1, 1, 0)
    );

    // The Worker stopped: prioritize fails (ignored), the constraints still hold.
    drop(env.worker.take());
    let by_name: HashMap<String, Value> = nodes.iter().map(|n| (name_of(n), n.clone())).collect();
    let ns = "worker-down";
    kube.create_namespace(ns).await;
    let v100 = gpu_model_pod(ns, "v100", "V100M16|V100M32");
    let a100 = gpu_model_pod(ns, "a100", "A100");
    for p in [&v100, &a100, &latency_pod(ns, "near", "200", None)] {
        kube.create_pod(p).await;
    }
    let node = outcome(&kube, ns, "v100").await.expect("v100 bound");
    assert!(
        label(&by_name[&node], "aco/gpu-type").starts_with("V100"),
        "{node}"
    );
    let node = outcome(&kube, ns, "near").await.expect("near bound");
    let lat: u32 = label(&by_name[&node], "aco/latency-us").parse().unwrap();
    assert!(lat <= 200, "near on {node} at {lat} µs");
    assert_eq!(outcome(&kube, ns, "a100").await, None);
    sched.assert_running();
}

/// Every `aco_reporter_admission_reviews_total` sample added up: how many reviews the API
/// server sent the reporter.
async fn reviews(env: &Env) -> f64 {
    let text = env.reporter.as_ref().unwrap().metrics().await;
    ["skipped", "unchanged", "mutated", "refused"]
        .iter()
        .map(|o| {
            sample(
                &text,
                &format!("aco_reporter_admission_reviews_total{{outcome=\"{o}\"}}"),
            )
        })
        .sum()
}

/// The pods the scope test creates, in the namespace `ns`: those in the webhook's scope and
/// those outside it.
struct Pods {
    in_scope: Vec<Value>,
    outside: Vec<Value>,
}

fn pods(ns: &str, opted_out_ns: &str, round: &str) -> Pods {
    let n = |what: &str| format!("{what}-{round}");
    let latency = |ns: &str, name: &str| latency_pod(ns, name, "200", None);
    // A GPU requested by an init container only.
    let setup: Container = serde_json::from_value(
        json!({"name": "setup", "image": "registry.k8s.io/pause:3.10",
        "resources": {"limits": {"nvidia.com/gpu": "1"}}}),
    )
    .unwrap();
    let gpu_init = edit_spec(pod(ns, &n("gpu-init"), PodOpts::default()), |spec| {
        spec.init_containers = Some(vec![setup])
    });
    let other_scheduler = edit_spec(latency(ns, &n("default-scheduler")), |spec| {
        spec.scheduler_name = Some("default-scheduler".into())
    });
    let opted_out = edit_pod(latency(ns, &n("opted-out")), |p| {
        p.metadata
            .labels
            .get_or_insert_default()
            .insert("scheduling.aco/admission".into(), "disabled".into());
    });
    let bare = edit_spec(pod(ns, &n("no-resources"), PodOpts::default()), |spec| {
        spec.containers[0].resources = None
    });
    Pods {
        in_scope: vec![latency(ns, &n("latency")), gpu_init],
        outside: vec![
            pod(ns, &n("plain"), PodOpts::default()),
            bare,
            other_scheduler,
            opted_out,
            latency(opted_out_ns, &n("in-opted-out-ns")),
        ],
    }
}

async fn create_timed(kube: &Kube, pod: &Value) -> (Result<Value, (u16, String)>, Duration) {
    let t = Instant::now();
    let r = kube.try_create_pod(pod, false).await;
    (r, t.elapsed())
}

#[tokio::test]
async fn the_webhook_refuses_bad_annotations_and_down_or_slow_blocks_only_its_scope() {
    let _serial = serial();
    let mut env = Env::start_with_reporter().await;
    let kube = env.kube().clone();
    // API server → aco-netem-proxy → the reporter's webhook: the proxy makes it hang or refuse.
    let webhook = env.reporter.as_ref().unwrap().webhook;
    let proxy = env.cp.start_proxy(
        "webhook-proxy",
        &format!("127.0.0.1:{webhook}"),
        Duration::ZERO,
    );
    let port: u16 = proxy.addr.rsplit(':').next().unwrap().parse().unwrap();
    let objects = install::render(&env.cp, &env.api.base, "aco-reporter:test");
    let mwc = install::local_webhook(&objects, port, &env.cp.pki.webhook_ca_pem());
    let hook = &typed::<MutatingWebhookConfiguration>(&mwc)
        .webhooks
        .expect("webhooks")[0];
    assert_eq!(
        hook.timeout_seconds.map(i64::from),
        Some(WEBHOOK_TIMEOUT.as_secs() as i64)
    );
    assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
    env.register_webhook(&mwc).await;

    let ns = "scope";
    kube.create_namespace(ns).await;
    let opted_out_ns = "opted-out";
    kube.post(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": opted_out_ns, "labels": {"scheduling.aco/admission": "disabled"}}}),
    )
    .await;

    // Unusable annotations: refused at creation with the Worker's message.
    for (name, annotations, gpus, needle) in [
        (
            "soon",
            vec![(LATENCY_TARGET_ANNOTATION, "soon".to_owned())],
            0,
            "scheduling.aco/latency-target-us \"soon\"",
        ),
        (
            "no-model",
            vec![("scheduling.aco/gpu-models", " | ".to_owned())],
            0,
            "lists no GPU model",
        ),
        (
            "spaced-model",
            vec![("scheduling.aco/gpu-models", "A100 SXM4".to_owned())],
            1,
            "label value",
        ),
    ] {
        let p = pod(
            ns,
            name,
            PodOpts {
                annotations,
                gpus,
                ..Default::default()
            },
        );
        let (code, body) = kube.try_create_pod(&p, false).await.unwrap_err();
        eprintln!("{name}: HTTP {code}: {body}");
        assert_eq!(code, 400, "{body}");
        // What `kubectl apply` prints: the Status's message.
        let status: Status = serde_json::from_str(&body).unwrap();
        let message = status.message.unwrap_or_default();
        assert!(
            message.contains("aco-scheduler cannot place this pod") && message.contains(needle),
            "{name}: {message}"
        );
    }

    // Up: the pods in scope get their affinity; the others are not even sent to the webhook.
    let up = pods(ns, opted_out_ns, "up");
    let before = reviews(&env).await;
    for p in &up.outside {
        let created = kube
            .try_create_pod(p, false)
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        let created: Pod = typed(&created);
        assert!(
            webhook_annotation(&created).is_none()
                && created.spec.as_ref().is_some_and(|s| s.affinity.is_none()),
            "{}: {created:?}",
            name_of(p)
        );
    }
    assert_eq!(
        reviews(&env).await,
        before,
        "pods outside the scope reached the webhook"
    );
    for p in &up.in_scope {
        let created = kube
            .try_create_pod(p, false)
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        let created: Pod = typed(&created);
        let node_affinity = created
            .spec
            .as_ref()
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref());
        assert!(
            webhook_annotation(&created).is_some() && node_affinity.is_some(),
            "{}: {created:?}",
            name_of(p)
        );
    }
    assert_eq!(reviews(&env).await, before + up.in_scope.len() as f64);

    // Hanging past timeoutSeconds, refusing connections, and stopped.
    for (round, mode) in [
        ("hanging", Some(ProxyMode::Blackhole)),
        ("refused", Some(ProxyMode::Refuse)),
        ("stopped", None),
    ] {
        match mode {
            Some(m) => proxy.set_mode(m).await,
            None => {
                proxy.set_mode(ProxyMode::Pass).await;
                drop(env.reporter.take());
            }
        }
        let set = pods(ns, opted_out_ns, round);
        for p in &set.in_scope {
            let (r, took) = create_timed(&kube, p).await;
            let (code, body) = r.expect_err("a pod in scope is refused while the webhook is down");
            eprintln!(
                "{round}: {} refused in {took:?}: HTTP {code}: {body}",
                name_of(p)
            );
            assert!(body.contains("failed calling webhook"), "{body}");
            if round == "hanging" {
                assert!(
                    took >= WEBHOOK_TIMEOUT,
                    "refused after {took:?}, before the timeout"
                );
            }
        }
        for p in &set.outside {
            let (r, took) = create_timed(&kube, p).await;
            r.unwrap_or_else(|e| panic!("{round}: {} refused: {e:?}", name_of(p)));
            assert!(
                took < WEBHOOK_TIMEOUT,
                "{round}: {} took {took:?}: the API server waited on the webhook",
                name_of(p)
            );
        }
    }
}
