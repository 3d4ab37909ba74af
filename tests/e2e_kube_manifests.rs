//! End-to-end with kube-scheduler: the shipped manifests install and the example pods schedule.
//!
//! A real kube-scheduler (built from k8s.io/kubernetes by `scripts/build-kube`) schedules pods
//! through the Worker (Miniflare, HTTPS with a private CA) using the shipped
//! `k8s/scheduler-config.yaml`. Nodes are Node objects from the OpenB trace
//! (`../shared/data/openb/`) with `status.allocatable` patched in (no kubelet) plus the labels the
//! Worker reads. The real `aco-reporter` binary runs beside them (`Env::start_with_reporter`):
//! node facts and placements reach the Worker only from it, never from test code. Run with
//! `scripts/e2e` (builds the control plane and the Worker first).

#![allow(clippy::await_holding_lock)]

use std::collections::HashMap;
use std::time::Duration;

use aco_testkit::k8s_openapi::api::apps::v1::Deployment;
use aco_testkit::k8s_openapi::api::core::v1::{Pod, Secret};
use aco_testkit::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::name_of;

use aco_testkit::kube::serial;
use aco_testkit::kube::{install, typed};
use serde_json::Value;

const BIND_TIMEOUT: Duration = Duration::from_secs(60);

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
