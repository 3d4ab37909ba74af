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
use aco_testkit::k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use aco_testkit::k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, Service};
use aco_testkit::k8s_openapi::api::networking::v1::NetworkPolicy;
use aco_testkit::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use aco_testkit::kube::fixtures::*;
use aco_testkit::kube::install::{generated, kustomize_build, object, secret_file};
use aco_testkit::kube::reporter::Reporter;
use aco_testkit::kube::{kube_bin, typed, ControlPlane, SchedulerConfig};
use aco_testkit::nodes::name_of;
use aco_testkit::repo_root;
use aco_testkit::workerd::{WorkerdOptions, WorkerdProcess, CONFIG};
use serde::Deserialize;
use serde_json::Value;

/// The overlay's scheduler configuration.
const SCHEDULER_CONFIG: &str = "k8s/self-hosted/scheduler-config.yaml";
const TENANT: &str = "team-a";

fn render_self_hosted() -> Vec<Value> {
    kustomize_build(&kube_bin(), &repo_root().join("k8s/self-hosted"))
}

fn mount<'a>(container: &'a Container, volume: &str) -> &'a str {
    container
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == volume)
        .map(|m| m.mount_path.as_str())
        .unwrap_or_else(|| panic!("no mount of {volume}"))
}

/// The pod template's spec of a workload.
fn template(spec: Option<&PodSpec>) -> &PodSpec {
    spec.expect("a pod template spec")
}

/// What the test reads of a kube-scheduler configuration: its extenders' connection settings.
#[derive(Debug, Deserialize)]
struct SchedulerExtenders {
    extenders: Vec<ExtenderSettings>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExtenderSettings {
    url_prefix: String,
    ignorable: Option<bool>,
    #[serde(rename = "enableHTTPS")]
    enable_https: Option<bool>,
}

#[test]
fn the_overlay_runs_workerd_as_the_test_kit_does_one_writer_behind_a_service() {
    let objects = render_self_hosted();
    let sts: StatefulSet = typed(object(&objects, "StatefulSet", "aco-worker"));
    let sts = sts.spec.expect("a StatefulSet spec");
    assert_eq!(sts.replicas, Some(1), "Durable Objects need one writer");
    let pod = template(sts.template.spec.as_ref());
    let c = &pod.containers[0];

    // The command: the config from the ConfigMap, two import paths (the image's bundle, the
    // TLS directory) — what the launcher gives workerd with the repository and its own TLS copy.
    let config_dir = mount(c, "config");
    let tls_dir = mount(c, "tls");
    let args: Vec<&str> = c.args.iter().flatten().map(String::as_str).collect();
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
    let config_map: ConfigMap = typed(generated(&objects, "ConfigMap", "aco-worker-config"));
    let shipped = std::fs::read_to_string(repo_root().join(CONFIG)).unwrap();
    assert_eq!(
        config_map
            .data
            .as_ref()
            .and_then(|d| d.get("workerd.capnp")),
        Some(&shipped),
        "the ConfigMap holds the file the tests run"
    );
    let config_volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "config")
        .unwrap();
    assert_eq!(
        config_volume.config_map.as_ref().map(|c| &c.name),
        config_map.metadata.name.as_ref()
    );
    // The disk service "state" is the PersistentVolume's mount.
    assert!(shipped.contains(&format!(
        "(name = \"state\", disk = (path = \"{}\", writable = true))",
        mount(c, "state")
    )));
    let claims = sts.volume_claim_templates.unwrap_or_default();
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].metadata.name.as_deref(), Some("state"));

    // Secrets from the Secret, all required (an unset one is a null binding).
    for secret in ["ADMIN_TOKEN", "METRICS_TOKEN", "EXTENDER_TOKENS"] {
        let env = c
            .env
            .iter()
            .flatten()
            .find(|e| e.name == secret)
            .unwrap_or_else(|| panic!("env {secret}"));
        let r = env
            .value_from
            .as_ref()
            .and_then(|v| v.secret_key_ref.as_ref())
            .unwrap_or_else(|| panic!("env {secret} from a Secret"));
        assert_eq!(
            (r.name.as_str(), r.key.as_str()),
            ("aco-worker-secrets", secret)
        );
        assert_ne!(r.optional, Some(true));
        assert!(shipped.contains(&format!("fromEnvironment = \"{secret}\"")));
    }
    let http_get = |probe: &Option<_>| {
        let probe: &aco_testkit::k8s_openapi::api::core::v1::Probe =
            probe.as_ref().expect("a probe");
        probe.http_get.clone().expect("an HTTP probe")
    };
    assert_eq!(http_get(&c.liveness_probe).path.as_deref(), Some("/livez"));
    let ready = http_get(&c.readiness_probe);
    assert_eq!(
        (ready.path.as_deref(), ready.scheme.as_deref()),
        (Some("/readyz"), Some("HTTPS"))
    );
    let resources = c.resources.as_ref().expect("resources");
    for list in [&resources.requests, &resources.limits] {
        assert!(list.as_ref().is_some_and(|l| l.contains_key("memory")));
    }

    // kube-scheduler and the reporter reach it by Service name.
    let service: Service = typed(object(&objects, "Service", "aco-worker"));
    let port = service.spec.and_then(|s| s.ports).expect("ports")[0].port;
    let host = format!("aco-worker.kube-system.svc:{port}");
    let scheduler_secret = generated(&objects, "Secret", "aco-scheduler-config");
    let scheduler_config = secret_file(scheduler_secret, "scheduler-config.yaml");
    let scheduler: SchedulerExtenders = serde_yaml::from_str(&scheduler_config).unwrap();
    let ext = &scheduler.extenders[0];
    let url_prefix = ext.url_prefix.as_str();
    assert!(
        url_prefix.starts_with(&format!("https://{host}/t/")),
        "{url_prefix}"
    );
    assert!(aco_testkit::kube::scheduler_config::is_path_token_prefix(
        url_prefix
    ));
    assert_eq!(ext.ignorable, Some(true));
    assert_eq!(ext.enable_https, Some(true));
    let settings: ConfigMap = typed(generated(&objects, "ConfigMap", "aco-reporter-settings"));
    assert_eq!(
        settings.data.as_ref().and_then(|d| d.get("ACO_WORKER_URL")),
        Some(&format!("https://{host}"))
    );
    let reporter: Deployment = typed(object(&objects, "Deployment", "aco-reporter"));
    let reporter = reporter.spec.expect("a Deployment spec").template.spec;
    assert!(template(reporter.as_ref()).containers[0]
        .env
        .iter()
        .flatten()
        .any(|e| e.name == "ACO_CA_FILE"));
    // Only kube-scheduler and the reporter (and Prometheus) may connect; the reporter may.
    let policy: NetworkPolicy = typed(object(&objects, "NetworkPolicy", "aco-worker"));
    let ingress = policy.spec.and_then(|s| s.ingress).expect("ingress rules");
    let from = ingress[0].from.as_ref().expect("peers")[0]
        .pod_selector
        .as_ref()
        .and_then(|s| s.match_expressions.as_ref())
        .expect("match expressions")[0]
        .values
        .clone();
    assert_eq!(
        from,
        Some(vec!["aco-scheduler".to_owned(), "aco-reporter".to_owned()])
    );
    let reporter_policy: NetworkPolicy = typed(object(&objects, "NetworkPolicy", "aco-reporter"));
    let egress = reporter_policy
        .spec
        .and_then(|s| s.egress)
        .expect("egress rules");
    assert!(egress.iter().any(|r| {
        let to_worker = r.to.iter().flatten().take(1).any(|peer| {
            peer.pod_selector
                .as_ref()
                .and_then(|s| s.match_labels.as_ref())
                .and_then(|l| l.get("app.kubernetes.io/name"))
                .is_some_and(|name| name == "aco-worker")
        });
        let on_port = r
            .ports
            .iter()
            .flatten()
            .take(1)
            .any(|p| p.port == Some(IntOrString::Int(port)));
        to_worker && on_port
    }));
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
    let before = api.pheromone_table(TENANT).await;
    assert!(
        before.counters.decisions >= first.len() as u64,
        "kube-scheduler asked workerd: {before:?}"
    );
    // Every binding confirmed. No kubelet runs these pods, so no outcome comes from the cluster:
    // one is told as the reporter would tell a failure, and it is what the trail holds.
    assert_eq!(before.confirmed_pods, first.len() as u64, "{before:?}");
    let pod = kube.pod(TENANT, &first[0]).await;
    let uid = pod.metadata.uid.clone().unwrap();
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap();
    let told = api
        .place_summary(
            serde_json::json!([{"podUid": uid, "namespace": TENANT, "node": node, "outcome": "failed"}]),
        )
        .await;
    assert_eq!(told.outcomes, 1, "{told:?}");
    let trails = api.trails(TENANT).await;
    assert_eq!(
        trails.len(),
        1,
        "the failure is on {node}'s trail: {trails:?}"
    );
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
        api.pheromone_table(TENANT).await.confirmed_pods,
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
    let after = api.pheromone_table(TENANT).await;
    assert!(
        after.counters.decisions >= (first.len() + second.len()) as u64,
        "{after:?}"
    );
    reporter.server.assert_running();
    let logs = workerd.logs();
    assert!(
        !logs.contains(aco_testkit::worker::BUDGET_EXCEEDED),
        "{logs}"
    );
}
