//! End-to-end: a real kube-scheduler calls the Worker through the `path-token` urlPrefix
//! (`EXTENDER_AUTH=path-token`, `https://<host>/t/<token>/v1`). With the right token the Worker
//! decides (a pod asking for a GPU model no node has stays Pending with our reason); with a wrong
//! token the Worker refuses every call (401 JSON) and, the extender being `ignorable: true`, pods
//! still schedule without it. And the shipped mTLS variant of the scheduler config
//! (`k8s/scheduler-config-mtls.yaml`, a client certificate in `tlsConfig`) is one a real
//! kube-scheduler runs with against a Worker under `EXTENDER_AUTH=mtls`. (Every other e2e suite
//! runs path-token too: `aco_testkit::kube::fixtures::worker_options`.) Run by `scripts/e2e`
//! (needs the control plane binaries).
#![cfg(feature = "e2e")]

use std::time::Duration;

use aco_testkit::api::WorkerHttp;
use aco_testkit::api::{error_body, WorkerApi};

use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::name_of;

use aco_testkit::kube::scheduler_config::{SHIPPED_FILTER, SHIPPED_MTLS};
use aco_testkit::kube::{ControlPlane, SchedulerConfig};
use aco_testkit::openb::pick_gpu_nodes;
use aco_testkit::WorkerProcess;
use serde::Deserialize;
use serde_json::{json, Value};

/// What the test reads of a rendered kube-scheduler configuration's extender.
#[derive(Debug, Deserialize)]
struct RenderedExtenders {
    extenders: Vec<RenderedExtender>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RenderedExtender {
    filter_verb: Option<String>,
    tls_config: TlsConfig,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TlsConfig {
    cert_data: Option<String>,
    key_data: Option<String>,
}

const BIND_TIMEOUT: Duration = Duration::from_secs(60);
const TOKEN: &str = "e2e-extender-token-0123456789abcdefghijklmnop";
const NEXT_TOKEN: &str = "e2e-extender-token-next-0123456789abcdefghijk";

/// Two V100 and two T4 GPU nodes, created and their facts pushed.
async fn gpu_nodes(cp: &ControlPlane, api: &WorkerApi) -> Vec<Value> {
    let nodes: Vec<Value> = pick_gpu_nodes(&["V100M16", "V100M32", "T4", "T4"])
        .into_iter()
        .enumerate()
        .map(|(i, n)| label_node(n, 1.0 + i as f64, 100, false))
        .collect();
    for n in &nodes {
        cp.kube.create_node(n).await;
    }
    api.put_facts(nodes.iter().map(facts_of).collect::<Vec<_>>())
        .await;
    nodes
}

#[tokio::test]
async fn pods_schedule_through_the_path_token_and_a_wrong_token_is_refused_but_ignorable() {
    let cp = ControlPlane::start().await;
    let state = tempfile::Builder::new()
        .prefix("aco-e2e-auth-")
        .tempdir()
        .unwrap();
    let worker = WorkerProcess::start(
        worker_options(&cp, state.path()).var("EXTENDER_TOKENS", format!("{TOKEN},{NEXT_TOKEN}")),
    );
    let api = WorkerApi::new(&worker, &cp.pki.ca_pem());
    let nodes = gpu_nodes(&cp, &api).await;
    let ns = "tokened";
    cp.kube.create_namespace(ns).await;
    let gpu_pod = |name: &str, models: &str| gpu_model_pod(ns, name, models);
    // Two verbs (`k8s/scheduler-config-filter.yaml`): both verbs go through the token path, and
    // the Worker's filter shows it decided (the mTLS test below runs the one-verb default).
    let with_token = |token: &str| SchedulerConfig {
        file: SHIPPED_FILTER,
        ..SchedulerConfig::worker(format!("{}/t/{token}/v1", api.base), cp.pki.ca_pem(), false)
    };

    // The right token: the Worker filters (A100 exists nowhere → Pending with our reason) and scores.
    let mut sched = cp
        .start_scheduler("scheduler-token", &with_token(TOKEN))
        .await;
    cp.kube
        .create_pod(&gpu_pod("a100-through-worker", "A100"))
        .await;
    let msg = cp
        .kube
        .wait_unschedulable(ns, "a100-through-worker", BIND_TIMEOUT)
        .await;
    assert!(msg.to_lowercase().contains("a100"), "{msg}");
    cp.kube
        .create_pod(&gpu_pod("v100-through-worker", "V100M16|V100M32"))
        .await;
    let node = cp
        .kube
        .wait_bound(ns, "v100-through-worker", BIND_TIMEOUT)
        .await;
    assert!(
        nodes
            .iter()
            .any(|n| name_of(n) == node && label(n, "aco/gpu-type").starts_with("V100")),
        "{node}"
    );
    let decisions = api.pheromone_table(ns).await.counters.decisions;
    assert!(decisions >= 1, "prioritize went through the token path");
    sched.assert_running();
    drop(sched);
    cp.kube
        .delete(&format!("/api/v1/namespaces/{ns}/pods/a100-through-worker"))
        .await
        .unwrap();

    // A wrong token: refused with a JSON 401 ...
    let wrong = "e2e-extender-token-wrong-0123456789abcdefghij";
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&cp.pki.ca_pem()).unwrap())
        .build()
        .unwrap();
    let r = http
        .post(format!("{}/t/{wrong}/v1/filter", api.base))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(error_body(&r.text().await.unwrap()).error.contains("token"));
    // ... and, the extender being ignorable, kube-scheduler schedules without it: the A100 pod
    // that the Worker would keep Pending binds.
    let mut sched = cp
        .start_scheduler("scheduler-wrong-token", &with_token(wrong))
        .await;
    cp.kube
        .create_pod(&gpu_pod("a100-wrong-token", "A100"))
        .await;
    let node = cp
        .kube
        .wait_bound(ns, "a100-wrong-token", BIND_TIMEOUT)
        .await;
    eprintln!("wrong token: a100-wrong-token bound to {node} without the Worker");
    assert_eq!(
        api.pheromone_table(ns).await.counters.decisions,
        decisions,
        "refused calls decided nothing"
    );
    sched.assert_running();
    drop(worker);
}

/// The SHA-256 fingerprint of a PEM certificate as API Shield reports it (hex of the DER).
fn fingerprint(cert: &std::path::Path) -> String {
    let out = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
        .arg(cert)
        .output()
        .expect("openssl");
    assert!(out.status.success(), "openssl x509 -fingerprint");
    String::from_utf8_lossy(&out.stdout)
        .split_once('=')
        .expect("sha256 Fingerprint=AA:BB:...")
        .1
        .trim()
        .replace(':', "")
        .to_lowercase()
}

#[tokio::test]
async fn the_shipped_mtls_scheduler_config_runs_a_real_kube_scheduler_through_the_worker() {
    let cp = ControlPlane::start().await;
    let state = tempfile::Builder::new()
        .prefix("aco-e2e-mtls-")
        .tempdir()
        .unwrap();
    // The client certificate kube-scheduler presents (tlsConfig.certData/keyData). Miniflare
    // terminates TLS itself, so what Cloudflare's edge would put in request.cf after verifying
    // it is given to every request here: this certificate, verified, as API Shield reports it.
    let (cert, key) = (cp.pki.path("admin.crt"), cp.pki.path("admin.key"));
    let fp = fingerprint(&cert);
    let worker = WorkerProcess::start(
        aco_testkit::StartOptions {
            cf: Some(
                json!({"tlsClientAuth": {"certPresented": "1", "certVerified": "SUCCESS",
                "certFingerprintSHA256": fp, "certIssuerDN": "CN=aco-test-ca"}}),
            ),
            ..worker_options(&cp, state.path())
        }
        .var("EXTENDER_AUTH", "mtls")
        .var("EXTENDER_CERT_FINGERPRINTS", fp.clone()),
    );
    let api = WorkerApi::new(&worker, &cp.pki.ca_pem());
    assert!(
        api.url_prefix().ends_with("/v1") && !api.url_prefix().contains("/t/"),
        "mtls: the verbs at https://<host>/v1, no token: {}",
        api.url_prefix()
    );
    let nodes = gpu_nodes(&cp, &api).await;
    let ns = "mtls";
    cp.kube.create_namespace(ns).await;

    let config = SchedulerConfig {
        file: SHIPPED_MTLS,
        client_cert: Some((std::fs::read(&cert).unwrap(), std::fs::read(&key).unwrap())),
        ..SchedulerConfig::worker(api.url_prefix(), cp.pki.ca_pem(), false)
    };
    let rendered: RenderedExtenders = serde_yaml::from_str(&config.render(&cp.kubeconfig)).unwrap();
    let extender = &rendered.extenders[0];
    let tls = &extender.tls_config;
    assert!(
        tls.cert_data.is_some() && tls.key_data.is_some(),
        "{SHIPPED_MTLS}'s tlsConfig carries the client certificate: {tls:?}"
    );
    let mut sched = cp.start_scheduler("scheduler-mtls", &config).await;
    // One verb (the shipped default): every pod's prioritize goes through the mTLS config and
    // is decided by the Worker (a decision remembered per pod), and kube-scheduler binds it.
    let pods: Vec<Value> = (0..3)
        .map(|i| pod(ns, &format!("mtls-{i}"), PodOpts::default()))
        .collect();
    let names = create_pods(&cp.kube, &pods).await;
    let placed = cp.kube.wait_all_bound(ns, &names, BIND_TIMEOUT).await;
    assert!(
        placed
            .iter()
            .all(|p| nodes.iter().any(|n| &name_of(n) == p)),
        "{placed:?}"
    );
    assert_eq!(
        extender.filter_verb, None,
        "{SHIPPED_MTLS} asks only prioritize"
    );
    aco_testkit::kube::wait_for(
        "a decision per pod through the mTLS config",
        BIND_TIMEOUT,
        || async {
            let decisions = api.pheromone_table(ns).await.counters.decisions;
            (decisions >= names.len() as u64).then_some(())
        },
    )
    .await;
    sched.assert_running();
    drop(worker);
}
