//! End-to-end: the shipped install (`k8s/`, `k8s/observability/`) as docs/deploy.md "Install" uses it.
//!
//! 1. A changed value rolls the pods: the overlay of docs/deploy.md rendered twice by the pinned
//!    kustomize (`$KUBE_BIN/kustomize`, what `kubectl apply -k` renders), once with another
//!    urlPrefix token, once with another Worker URL: the generated Secret/ConfigMap get a new
//!    name and the Deployment that mounts it a different pod template (so it rolls); the other
//!    Deployment stays as it was.
//! 2. The observability objects fit the install: each ServiceMonitor selects a rendered Service
//!    by its labels and names one of its ports, and every Prometheus Operator object carries the
//!    label kube-prometheus-stack's default selectors match.
//! 3. kube-scheduler's `/metrics` is scraped as `k8s/observability/servicemonitors.yaml` does:
//!    a real kube-scheduler running as ServiceAccount aco-scheduler under RBAC serves it to a
//!    token allowed `get /metrics` (kube-prometheus-stack's Prometheus role) and refuses others.
//!
//! Run by `scripts/e2e` (needs the control plane binaries).
#![cfg(feature = "e2e")]

use std::collections::BTreeMap;
use std::path::Path;

use aco_testkit::k8s_openapi::api::apps::v1::Deployment;
use aco_testkit::k8s_openapi::api::core::v1::{
    ConfigMap, PodTemplateSpec, Service, ServiceAccount,
};
use aco_testkit::k8s_openapi::api::networking::v1::NetworkPolicy;
use aco_testkit::k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject,
};
use aco_testkit::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use aco_testkit::kube::install::{
    generated, object, of_kind, render_overlay, secret_file, yaml_docs, yaml_file,
};
use aco_testkit::kube::scheduler_config::is_path_token_prefix;
use aco_testkit::kube::{kube_bin, typed, ControlPlane, SchedulerConfig};
use aco_testkit::nodes::name_of;
use aco_testkit::repo_root;
use serde::Deserialize;
use serde_json::Value;

const IMAGE: &str = "registry.example/aco-reporter:0.1.0";

/// The overlay of docs/deploy.md "Install": the scheduler config copied with its urlPrefix set (replacing the
/// generated Secret's file), `ACO_WORKER_URL` and the image; rendered.
fn render(dir: &Path, url_prefix: &str, worker_url: &str) -> Vec<Value> {
    let shipped = std::fs::read_to_string(repo_root().join("k8s/scheduler-config.yaml")).unwrap();
    let config = shipped
        .lines()
        .map(|line| match line.split_once("urlPrefix:") {
            Some((indent, _)) => format!("{indent}urlPrefix: {url_prefix}"),
            None => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        url_prefix_of(&config),
        url_prefix,
        "the shipped file has one urlPrefix line"
    );
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("scheduler-config.yaml"), config).unwrap();
    render_overlay(
        &kube_bin(),
        dir,
        worker_url,
        IMAGE,
        "secretGenerator:\n  - name: aco-scheduler-config\n    namespace: kube-system\n    behavior: replace\n    files: [scheduler-config.yaml]\n",
    )
}

/// What the tests read of a kube-scheduler configuration: its extender's urlPrefix.
#[derive(Deserialize)]
struct SchedulerExtenders {
    extenders: Vec<ExtenderUrl>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExtenderUrl {
    url_prefix: String,
}

fn url_prefix_of(config_yaml: &str) -> String {
    let config: SchedulerExtenders = serde_yaml::from_str(config_yaml).unwrap();
    config.extenders[0].url_prefix.clone()
}

/// Any object's metadata (a Prometheus Operator object has no k8s-openapi type).
#[derive(Deserialize)]
struct Labelled {
    metadata: ObjectMeta,
}

/// A Prometheus Operator ServiceMonitor, as much as the test reads (no k8s-openapi type).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ServiceMonitor {
    metadata: ObjectMeta,
    spec: ServiceMonitorSpec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ServiceMonitorSpec {
    selector: LabelSelector,
    namespace_selector: NamespaceSelector,
    endpoints: Vec<Endpoint>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LabelSelector {
    match_labels: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NamespaceSelector {
    match_names: Vec<String>,
}

#[derive(Deserialize)]
struct Endpoint {
    port: String,
}

fn template(objects: &[Value], deployment: &str) -> PodTemplateSpec {
    let d: Deployment = typed(object(objects, "Deployment", deployment));
    d.spec.expect("a Deployment spec").template
}

/// The scheduler configuration file of the generated Secret.
fn scheduler_file(secret: &Value) -> String {
    secret_file(secret, "scheduler-config.yaml")
}

fn name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().expect("a name")
}

#[test]
fn a_changed_url_prefix_or_worker_url_rolls_the_deployment_that_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let token_a = "a".repeat(64);
    let token_b = "b".repeat(64);
    let prefix = |t: &str| format!("https://aco.example.com/t/{t}/v1");
    let first = render(dir.path(), &prefix(&token_a), "https://aco.example.com");
    let new_token = render(dir.path(), &prefix(&token_b), "https://aco.example.com");
    let new_url = render(
        dir.path(),
        &prefix(&token_b),
        "https://aco.example.com/c/prod",
    );

    // The scheduler's config is a Secret with a content-hashed name, holding the token.
    let secret = generated(&new_token, "Secret", "aco-scheduler-config");
    let file = scheduler_file(secret);
    assert!(file.contains(&prefix(&token_b)), "{file}");
    let config_maps: Vec<ConfigMap> = of_kind(&new_token);
    assert!(
        !config_maps.is_empty(),
        "the rendered install has ConfigMaps"
    );
    assert!(
        !config_maps
            .into_iter()
            .flat_map(|c| c.data.unwrap_or_default().into_values())
            .any(|v| v.contains(&token_b)),
        "the token is in no ConfigMap"
    );
    assert_ne!(
        name_of(generated(&first, "Secret", "aco-scheduler-config")),
        name_of(secret),
        "a new urlPrefix is a new Secret name"
    );

    // A new token: aco-scheduler's pod template changes (it mounts the new Secret), the
    // reporter's does not.
    let volume = |objects: &[Value]| {
        template(objects, "aco-scheduler")
            .spec
            .and_then(|s| s.volumes)
            .expect("volumes")
    };
    assert_ne!(
        template(&first, "aco-scheduler"),
        template(&new_token, "aco-scheduler"),
        "a new urlPrefix must roll aco-scheduler"
    );
    assert_eq!(
        volume(&new_token)[0]
            .secret
            .as_ref()
            .and_then(|s| s.secret_name.as_deref()),
        Some(name_of(secret).as_str()),
        "aco-scheduler mounts the generated Secret"
    );
    assert_eq!(
        template(&first, "aco-reporter"),
        template(&new_token, "aco-reporter")
    );

    // A new Worker URL: the reporter's pod template changes (a new ConfigMap), the scheduler's
    // does not.
    assert_ne!(
        template(&new_token, "aco-reporter"),
        template(&new_url, "aco-reporter"),
        "a new ACO_WORKER_URL must roll aco-reporter"
    );
    assert_eq!(
        template(&new_token, "aco-scheduler"),
        template(&new_url, "aco-scheduler")
    );
    let settings: ConfigMap = typed(generated(&new_url, "ConfigMap", "aco-reporter-settings"));
    assert_eq!(
        settings
            .data
            .as_ref()
            .and_then(|d| d.get("ACO_WORKER_URL"))
            .map(String::as_str),
        Some("https://aco.example.com/c/prod")
    );
    let reporter = template(&new_url, "aco-reporter").spec.expect("a pod spec");
    let container = &reporter.containers[0];
    let from_settings = |config_map: Option<&str>| config_map == Some(name(&settings.metadata));
    assert!(
        container
            .env_from
            .iter()
            .flatten()
            .any(|e| from_settings(e.config_map_ref.as_ref().map(|c| c.name.as_str())))
            || container.env.iter().flatten().any(|e| from_settings(
                e.value_from
                    .as_ref()
                    .and_then(|v| v.config_map_key_ref.as_ref())
                    .map(|c| c.name.as_str())
            )),
        "the reporter reads the generated ConfigMap: {container:?}"
    );
}

#[test]
fn the_shipped_k8s_renders_a_path_token_url_prefix_a_network_policy_and_services_the_monitors_select(
) {
    // k8s/ itself, without an overlay: its placeholder urlPrefix has the shape the Worker serves.
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(kube_bin().join("kustomize"))
        .arg("build")
        .arg(repo_root().join("k8s"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let objects: Vec<Value> = yaml_docs(&String::from_utf8(out.stdout).unwrap());
    let url = url_prefix_of(&scheduler_file(generated(
        &objects,
        "Secret",
        "aco-scheduler-config",
    )));
    assert!(is_path_token_prefix(&url), "{url}");

    let policy: NetworkPolicy = typed(object(&objects, "NetworkPolicy", "aco-reporter"));
    let policy = policy.spec.expect("a NetworkPolicy spec");
    assert_eq!(
        policy.pod_selector.and_then(|s| s.match_labels),
        template(&objects, "aco-reporter")
            .metadata
            .and_then(|m| m.labels)
    );
    assert_eq!(
        policy.policy_types,
        Some(vec!["Ingress".to_owned(), "Egress".to_owned()])
    );

    // Each ServiceMonitor selects exactly one rendered Service, in its namespace, by a port it has.
    let monitors: Vec<ServiceMonitor> =
        yaml_file(&repo_root().join("k8s/observability/servicemonitors.yaml"))
            .iter()
            .map(typed)
            .collect();
    assert_eq!(monitors.len(), 2);
    let services: Vec<Service> = of_kind(&objects);
    for m in &monitors {
        let name = name(&m.metadata);
        let selector = &m.spec.selector.match_labels;
        let selected: Vec<&Service> = services
            .iter()
            .filter(|s| {
                let labels = s.metadata.labels.clone().unwrap_or_default();
                selector.iter().all(|(k, v)| labels.get(k) == Some(v))
            })
            .collect();
        assert_eq!(selected.len(), 1, "{name} selects one Service");
        let svc = selected[0];
        assert_eq!(
            svc.metadata.name.as_deref(),
            Some(name),
            "job label = Service name = {name}"
        );
        let namespace = svc.metadata.namespace.as_ref().expect("a namespace");
        assert!(m.spec.namespace_selector.match_names.contains(namespace));
        let port = &m.spec.endpoints[0].port;
        let ports = svc.spec.as_ref().and_then(|s| s.ports.as_ref());
        assert!(
            ports
                .into_iter()
                .flatten()
                .any(|p| p.name.as_ref() == Some(port)),
            "{name}: Service has no port {port}"
        );
        // ...and the port is one the selected pods declare (as a container port's name).
        let pods = template(&objects, name).spec.expect("a pod spec");
        assert!(
            pods.containers[0]
                .ports
                .iter()
                .flatten()
                .any(|p| p.name.as_ref() == Some(port)),
            "{name}: pods declare no port {port}"
        );
    }

    // kube-prometheus-stack's default selectors: `release: <release name>`.
    for file in [
        "prometheus-rules.yaml",
        "servicemonitors.yaml",
        "worker-scrape.yaml",
    ] {
        for o in yaml_file(&repo_root().join("k8s/observability").join(file)) {
            let meta = typed::<Labelled>(&o).metadata;
            assert_eq!(
                meta.labels.as_ref().and_then(|l| l.get("release")),
                Some(&"kube-prometheus-stack".to_owned()),
                "{file}: {} has no release label",
                name(&meta)
            );
        }
    }
}

#[tokio::test]
async fn kube_scheduler_as_aco_scheduler_serves_metrics_to_a_token_allowed_them_and_refuses_others()
{
    let cp = ControlPlane::start().await;
    let sched = cp
        .start_scheduler("scheduler", &SchedulerConfig::off())
        .await;
    // What kube-prometheus-stack gives its Prometheus: a ServiceAccount allowed `get /metrics`.
    let kube = &cp.kube;
    kube.create_namespace("monitoring").await;
    let named = |name: &str| ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    };
    let account = ServiceAccount {
        metadata: named("prometheus"),
        ..ServiceAccount::default()
    };
    let role = ClusterRole {
        metadata: named("prometheus-metrics"),
        rules: Some(vec![PolicyRule {
            non_resource_urls: Some(vec!["/metrics".into()]),
            verbs: vec!["get".into()],
            ..PolicyRule::default()
        }]),
        ..ClusterRole::default()
    };
    let binding = ClusterRoleBinding {
        metadata: named("prometheus-metrics"),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: "prometheus-metrics".into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: "prometheus".into(),
            namespace: Some("monitoring".into()),
            ..Subject::default()
        }]),
    };
    for (collection, object) in [
        (
            "/api/v1/namespaces/monitoring/serviceaccounts",
            serde_json::to_value(account),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            serde_json::to_value(role),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            serde_json::to_value(binding),
        ),
    ] {
        kube.post(collection, &object.expect("a k8s object serialises"))
            .await;
    }
    let allowed = cp.service_account_token("monitoring", "prometheus").await;
    let other = cp
        .service_account_token("kube-system", "aco-reporter")
        .await;

    // As the ServiceMonitor scrapes: HTTPS, kube-scheduler's self-signed certificate not
    // verified, the scraper's token as bearer.
    let http = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    let url = format!("https://127.0.0.1:{}/metrics", sched.port);
    let scrape = |token: Option<String>| {
        let mut req = http.get(&url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    let r = scrape(Some(allowed)).await.unwrap();
    assert_eq!(r.status(), 200, "the allowed token's scrape");
    let text = r.text().await.unwrap();
    assert!(text.contains("scheduler_pending_pods"), "{text}");
    for (who, token) in [("no token", None), ("aco-reporter's token", Some(other))] {
        let status = scrape(token).await.unwrap().status();
        assert!(
            status == 401 || status == 403,
            "{who}: /metrics answered {status}"
        );
    }
}
