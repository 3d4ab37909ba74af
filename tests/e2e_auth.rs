//! End-to-end: a real kube-scheduler calls the Worker through the `path-token` urlPrefix
//! (`EXTENDER_AUTH=path-token`, `https://<host>/t/<token>/v1`). With the right token the Worker
//! decides (a pod asking for a GPU model no node has stays Pending with our reason); with a wrong
//! token the Worker refuses every call (401 JSON) and, the extender being `ignorable: true`, pods
//! still schedule without it. Run by `scripts/e2e` (needs the control plane binaries).
#![cfg(feature = "e2e")]

use std::time::Duration;

use aco_testkit::api::WorkerApi;
use aco_testkit::api::WorkerHttp;

use aco_testkit::kube::fixtures::*;
use aco_testkit::nodes::name_of;

use aco_testkit::kube::{ControlPlane, SchedulerConfig};
use aco_testkit::openb::pick_gpu_nodes;
use aco_testkit::{StartOptions, WorkerProcess};
use serde_json::Value;

const BIND_TIMEOUT: Duration = Duration::from_secs(60);
const TOKEN: &str = "e2e-extender-token-0123456789abcdefghijklmnop";
const NEXT_TOKEN: &str = "e2e-extender-token-next-0123456789abcdefghijk";

#[tokio::test]
async fn pods_schedule_through_the_path_token_and_a_wrong_token_is_refused_but_ignorable() {
    let cp = ControlPlane::start().await;
    let state = tempfile::Builder::new()
        .prefix("aco-e2e-auth-")
        .tempdir()
        .unwrap();
    let worker = WorkerProcess::start(
        StartOptions {
            persist_dir: Some(state.path().to_path_buf()),
            https: Some(cp.pki.worker_tls()),
            ..StartOptions::default()
        }
        .var("EXTENDER_AUTH", "path-token")
        .var("EXTENDER_TOKENS", format!("{TOKEN},{NEXT_TOKEN}")),
    );
    let api = WorkerApi::new(&worker, &cp.pki.ca_pem());
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
    let ns = "tokened";
    cp.kube.create_namespace(ns).await;
    let gpu_pod = |name: &str, models: &str| {
        pod(
            ns,
            name,
            PodOpts {
                gpus: 1,
                annotations: vec![("scheduling.aco/gpu-models", models.into())],
                ..Default::default()
            },
        )
    };
    let with_token = |token: &str| {
        SchedulerConfig::worker(format!("{}/t/{token}/v1", api.base), cp.pki.ca_pem(), false)
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
    let decisions = api.pheromones(ns).await["counters"]["decisions"]
        .as_u64()
        .unwrap_or(0);
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
    assert!(r.json::<Value>().await.unwrap()["error"]
        .as_str()
        .unwrap()
        .contains("token"));
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
        api.pheromones(ns).await["counters"]["decisions"]
            .as_u64()
            .unwrap_or(0),
        decisions,
        "refused calls decided nothing"
    );
    sched.assert_running();
    drop(worker);
}
