//! End-to-end: the self-hosted install (`k8s/self-hosted/`) — the unchanged Worker bundle on
//! workerd with `workerd.capnp`, no Miniflare — against a real control plane:
//! 1. the overlay, rendered by the pinned kustomize, runs workerd as the test kit does
//!    (`crates/testkit/src/workerd.rs`): the same config bytes, the bundle, TLS and state where
//!    the config looks for them; one replica with its volume; secrets required; probes;
//!    kube-scheduler and the reporter pointed at the Service, `ignorable: true`;
//! 2. a real kube-scheduler (`k8s/self-hosted/scheduler-config.yaml`) schedules through that
//!    workerd, the `aco-reporter` binary feeds it (no test code pushes facts or placements),
//!    every pod bound is learned once (deposits), and a restart of workerd on the same state
//!    directory — the PersistentVolume's role — keeps the colony and the node facts, and
//!    learning goes on from there.
//!
//! Run with `scripts/e2e` (one test at a time).

#![cfg(feature = "e2e")]

use std::collections::BTreeMap;
use std::time::Duration;

use aco_testkit::api::{WorkerApi, WorkerHttp};
use aco_testkit::kube::fixtures::*;
use aco_testkit::kube::install::{generated, kustomize_build, object};
use aco_testkit::kube::reporter::Reporter;
use aco_testkit::kube::{kube_bin, ControlPlane, SchedulerConfig};
use aco_testkit::nodes::name_of;
use aco_testkit::repo_root;
use aco_testkit::workerd::{WorkerdOptions, WorkerdProcess, CONFIG};
use serde_json::Value;

/// The overlay's scheduler configuration.
const SCHEDULER_CONFIG: &str = "k8s/self-hosted/scheduler-config.yaml";
const TENANT: &str = "team-a";

fn render_self_hosted() -> Vec<Value> {
    kustomize_build(&kube_bin(), &repo_root().join("k8s/self-hosted"))
}

fn mount<'a>(container: &'a Value, volume: &str) -> &'a str {
    container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == volume)
        .and_then(|m| m["mountPath"].as_str())
        .unwrap_or_else(|| panic!("no mount of {volume}"))
}

#[test]
fn the_overlay_runs_workerd_as_the_test_kit_does_one_writer_behind_a_service() {
    let objects = render_self_hosted();
    let sts = object(&objects, "StatefulSet", "aco-worker");
    assert_eq!(
        sts["spec"]["replicas"], 1,
        "Durable Objects need one writer"
    );
    let pod = &sts["spec"]["template"]["spec"];
    let c = &pod["containers"][0];

    // The command: the config from the ConfigMap, two import paths (the image's bundle, the
    // TLS directory) — what the launcher gives workerd with the repository and its own TLS copy.
    let config_dir = mount(c, "config");
    let tls_dir = mount(c, "tls");
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let bundle_root = "/srv/aco";
    let tls_root = tls_dir
        .strip_suffix("/tls")
        .expect("mounted as <import>/tls");
    assert_eq!(
        args,
        [
            "serve",
            &format!("{config_dir}/workerd.capnp"),
            &format!("--import-path={bundle_root}"),
            &format!("--import-path={tls_root}"),
        ]
    );
    let dockerfile = std::fs::read_to_string(repo_root().join("workerd/Dockerfile")).unwrap();
    for line in [
        format!("COPY build/index.js build/index_bg.wasm {bundle_root}/build/"),
        format!("COPY workerd/kv-namespace.js {bundle_root}/workerd/"),
    ] {
        assert!(dockerfile.contains(&line), "workerd/Dockerfile: {line}");
    }
    let config_map = generated(&objects, "ConfigMap", "aco-worker-config");
    let shipped = std::fs::read_to_string(repo_root().join(CONFIG)).unwrap();
    assert_eq!(
        config_map["data"]["workerd.capnp"].as_str(),
        Some(shipped.as_str()),
        "the ConfigMap holds the file the tests run"
    );
    let config_volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "config")
        .unwrap();
    assert_eq!(
        config_volume["configMap"]["name"],
        config_map["metadata"]["name"]
    );
    // The disk service "state" is the PersistentVolume's mount.
    assert!(shipped.contains(&format!(
        "(name = \"state\", disk = (path = \"{}\", writable = true))",
        mount(c, "state")
    )));
    let claims = sts["spec"]["volumeClaimTemplates"].as_array().unwrap();
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0]["metadata"]["name"], "state");

    // Secrets from the Secret, all required (an unset one is a null binding).
    for secret in ["ADMIN_TOKEN", "METRICS_TOKEN", "EXTENDER_TOKENS"] {
        let env = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == secret)
            .unwrap_or_else(|| panic!("env {secret}"));
        let r = &env["valueFrom"]["secretKeyRef"];
        assert_eq!(
            (r["name"].as_str(), r["key"].as_str()),
            (Some("aco-worker-secrets"), Some(secret))
        );
        assert!(r["optional"].is_null() || r["optional"] == false);
        assert!(shipped.contains(&format!("fromEnvironment = \"{secret}\"")));
    }
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/livez");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
    assert!(c["resources"]["requests"]["memory"].is_string());
    assert!(c["resources"]["limits"]["memory"].is_string());

    // kube-scheduler and the reporter reach it by Service name.
    let service = object(&objects, "Service", "aco-worker");
    let port = service["spec"]["ports"][0]["port"].as_u64().unwrap();
    let host = format!("aco-worker.kube-system.svc:{port}");
    let scheduler_secret = generated(&objects, "Secret", "aco-scheduler-config");
    let scheduler_config = String::from_utf8(aco_testkit::kube::base64::decode(
        scheduler_secret["data"]["scheduler-config.yaml"]
            .as_str()
            .unwrap(),
    ))
    .unwrap();
    let scheduler: serde_yaml::Value = serde_yaml::from_str(&scheduler_config).unwrap();
    let ext = &scheduler["extenders"][0];
    let url_prefix = ext["urlPrefix"].as_str().unwrap();
    assert!(
        url_prefix.starts_with(&format!("https://{host}/t/")),
        "{url_prefix}"
    );
    assert!(aco_testkit::kube::scheduler_config::is_path_token_prefix(
        url_prefix
    ));
    assert_eq!(ext["ignorable"].as_bool(), Some(true));
    assert_eq!(ext["enableHTTPS"].as_bool(), Some(true));
    let settings = generated(&objects, "ConfigMap", "aco-reporter-settings");
    assert_eq!(
        settings["data"]["ACO_WORKER_URL"].as_str(),
        Some(format!("https://{host}").as_str())
    );
    let reporter = &object(&objects, "Deployment", "aco-reporter")["spec"]["template"]["spec"]
        ["containers"][0];
    assert!(reporter["env"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "ACO_CA_FILE"));
    // Only kube-scheduler and the reporter (and Prometheus) may connect; the reporter may.
    let policy = object(&objects, "NetworkPolicy", "aco-worker");
    let from = policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchExpressions"][0]
        ["values"]
        .clone();
    assert_eq!(from, serde_json::json!(["aco-scheduler", "aco-reporter"]));
    let reporter_policy = object(&objects, "NetworkPolicy", "aco-reporter");
    assert!(reporter_policy["spec"]["egress"]
        .as_array()
        .unwrap()
        .iter()
        .any(
            |r| r["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "aco-worker"
                && r["ports"][0]["port"] == port
        ));
}

fn pods(prefix: &str, n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            pod(
                TENANT,
                &format!("{prefix}-{i}"),
                PodOpts {
                    labels: vec![("scheduling.aco/tenant-id", TENANT.into())],
                    annotations: vec![("scheduling.aco/latency-target-us", "1000".into())],
                    ..Default::default()
                },
            )
        })
        .collect()
}

#[tokio::test]
async fn kube_scheduler_schedules_through_self_hosted_workerd_and_a_restart_keeps_the_colony() {
    let cp = ControlPlane::start().await;
    let mut workerd = WorkerdProcess::start(WorkerdOptions::new(cp.pki.worker_tls())).await;
    let api = WorkerApi::at(&workerd.base_url, &workerd.verb_root(), &cp.pki.ca_pem());
    let kube = &cp.kube;

    // Six nodes: three near (200 µs), three far (3 ms), prices apart.
    let nodes: Vec<Value> = (0..6)
        .map(|i| {
            label_node(
                cpu_node(&format!("node-{i}"), "8", "32Gi"),
                0.5 + i as f64,
                if i % 2 == 0 { 200 } else { 3_000 },
                false,
            )
        })
        .collect();
    let latency: BTreeMap<String, u32> = nodes
        .iter()
        .map(|n| (name_of(n), label(n, "aco/latency-us").parse().unwrap()))
        .collect();
    for n in &nodes {
        kube.create_node(n).await;
    }
    let mut reporter = Reporter::start(&cp, &api.base, "reporter", &["--no-node-metrics"], false);
    reporter
        .wait_nodes_reported(nodes.len(), Duration::from_secs(90))
        .await;
    let config = SchedulerConfig {
        file: SCHEDULER_CONFIG,
        // Names mode: the reporter's facts are all the Worker reads.
        ..SchedulerConfig::worker(api.url_prefix(), cp.pki.ca_pem(), true)
    };
    let _scheduler = cp.start_scheduler("scheduler", &config).await;
    kube.create_namespace(TENANT).await;

    // Latency-critical pods (target 1 ms): only the near nodes pass the Worker's filter.
    let first = create_pods(kube, &pods("before", 6)).await;
    let placed = kube
        .wait_all_bound(TENANT, &first, Duration::from_secs(90))
        .await;
    for node in &placed {
        assert_eq!(latency[node], 200, "placed on {node}: {placed:?}");
    }
    api.wait_deposits(TENANT, first.len() as u64, Duration::from_secs(60))
        .await;
    let before = api.pheromones(TENANT).await;
    assert!(
        before["counters"]["decisions"].as_u64() >= Some(first.len() as u64),
        "kube-scheduler asked workerd: {before}"
    );
    // Every binding confirmed; the trail holds what outcomes taught (none while the pods run).
    assert_eq!(before["confirmedPods"], first.len() as u64, "{before}");
    let trails = api.trails(TENANT).await;
    eprintln!(
        "workerd peak RSS before the restart: {:.1} MiB",
        workerd.peak_rss_bytes().unwrap_or(0) as f64 / (1 << 20) as f64
    );

    // A restart on the same state directory (a rollout, a rescheduled pod on its volume).
    workerd.restart().await;
    assert_eq!(
        api.trails(TENANT).await,
        trails,
        "the trail survived the restart"
    );
    assert_eq!(
        api.pheromones(TENANT).await["confirmedPods"],
        first.len() as u64
    );
    assert_eq!(api.deposits(TENANT).await, first.len() as u64);
    for n in &nodes {
        assert!(
            api.node_facts(&name_of(n)).await.is_some(),
            "{}'s facts survived",
            name_of(n)
        );
    }

    // Learning goes on from the kept state: every new pod deposited once, on near nodes.
    let second = create_pods(kube, &pods("after", 4)).await;
    let placed = kube
        .wait_all_bound(TENANT, &second, Duration::from_secs(90))
        .await;
    for node in &placed {
        assert_eq!(latency[node], 200, "placed on {node}: {placed:?}");
    }
    api.wait_deposits(
        TENANT,
        (first.len() + second.len()) as u64,
        Duration::from_secs(60),
    )
    .await;
    let after = api.pheromones(TENANT).await;
    assert!(
        after["counters"]["decisions"].as_u64() >= Some((first.len() + second.len()) as u64),
        "{after}"
    );
    reporter.server.assert_running();
    let logs = workerd.logs();
    assert!(
        !logs.contains(aco_testkit::worker::BUDGET_EXCEEDED),
        "{logs}"
    );
}
