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

use std::path::Path;

use aco_testkit::kube::install::{generated, object, render_overlay, yaml_docs, yaml_file};
use aco_testkit::kube::scheduler_config::is_path_token_prefix;
use aco_testkit::kube::{base64, kube_bin, ControlPlane, SchedulerConfig};
use aco_testkit::repo_root;
use serde_json::{json, Value};

const IMAGE: &str = "registry.example/aco-reporter:0.1.0";

/// The overlay of docs/deploy.md "Install": the scheduler config copied with its urlPrefix set (replacing the
/// generated Secret's file), `ACO_WORKER_URL` and the image; rendered.
fn render(dir: &Path, url_prefix: &str, worker_url: &str) -> Vec<Value> {
    let shipped = std::fs::read_to_string(repo_root().join("k8s/scheduler-config.yaml")).unwrap();
    let mut config: serde_yaml::Value = serde_yaml::from_str(&shipped).unwrap();
    config["extenders"][0]["urlPrefix"] = url_prefix.into();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("scheduler-config.yaml"),
        serde_yaml::to_string(&config).unwrap(),
    )
    .unwrap();
    render_overlay(
        &kube_bin(),
        dir,
        worker_url,
        IMAGE,
        "secretGenerator:\n  - name: aco-scheduler-config\n    namespace: kube-system\n    behavior: replace\n    files: [scheduler-config.yaml]\n",
    )
}

fn template<'a>(objects: &'a [Value], deployment: &str) -> &'a Value {
    &object(objects, "Deployment", deployment)["spec"]["template"]
}

fn decode_base64(s: &str) -> String {
    String::from_utf8(base64::decode(s)).unwrap()
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
    let file = decode_base64(secret["data"]["scheduler-config.yaml"].as_str().unwrap());
    assert!(file.contains(&prefix(&token_b)), "{file}");
    assert!(
        !new_token
            .iter()
            .any(|o| o["kind"] == "ConfigMap" && o["data"].to_string().contains(&token_b)),
        "the token is in no ConfigMap"
    );
    assert_ne!(
        generated(&first, "Secret", "aco-scheduler-config")["metadata"]["name"],
        secret["metadata"]["name"],
        "a new urlPrefix is a new Secret name"
    );

    // A new token: aco-scheduler's pod template changes (it mounts the new Secret), the
    // reporter's does not.
    let volume = |objects: &[Value]| template(objects, "aco-scheduler")["spec"]["volumes"].clone();
    assert_ne!(
        template(&first, "aco-scheduler"),
        template(&new_token, "aco-scheduler"),
        "a new urlPrefix must roll aco-scheduler"
    );
    assert_eq!(
        volume(&new_token)[0]["secret"]["secretName"],
        secret["metadata"]["name"],
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
    let settings = generated(&new_url, "ConfigMap", "aco-reporter-settings");
    assert_eq!(
        settings["data"]["ACO_WORKER_URL"],
        "https://aco.example.com/c/prod"
    );
    let env = template(&new_url, "aco-reporter")["spec"]["containers"][0]["env"].clone();
    assert!(
        env.to_string()
            .contains(settings["metadata"]["name"].as_str().unwrap()),
        "the reporter reads the generated ConfigMap: {env}"
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
    let secret = generated(&objects, "Secret", "aco-scheduler-config");
    let config: serde_yaml::Value = serde_yaml::from_str(&decode_base64(
        secret["data"]["scheduler-config.yaml"].as_str().unwrap(),
    ))
    .unwrap();
    let url = config["extenders"][0]["urlPrefix"].as_str().unwrap();
    assert!(is_path_token_prefix(url), "{url}");

    let policy = object(&objects, "NetworkPolicy", "aco-reporter");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        template(&objects, "aco-reporter")["metadata"]["labels"]
    );
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));

    // Each ServiceMonitor selects exactly one rendered Service, in its namespace, by a port it has.
    let monitors = yaml_file(&repo_root().join("k8s/observability/servicemonitors.yaml"));
    assert_eq!(monitors.len(), 2);
    for m in &monitors {
        let name = m["metadata"]["name"].as_str().unwrap();
        let selector = m["spec"]["selector"]["matchLabels"].as_object().unwrap();
        let services: Vec<&Value> = objects
            .iter()
            .filter(|o| {
                o["kind"] == "Service"
                    && selector
                        .iter()
                        .all(|(k, v)| o["metadata"]["labels"][k] == *v)
            })
            .collect();
        assert_eq!(services.len(), 1, "{name} selects one Service");
        let svc = services[0];
        assert_eq!(
            svc["metadata"]["name"], name,
            "job label = Service name = {name}"
        );
        assert!(m["spec"]["namespaceSelector"]["matchNames"]
            .as_array()
            .unwrap()
            .contains(&svc["metadata"]["namespace"]));
        let port = m["spec"]["endpoints"][0]["port"].as_str().unwrap();
        assert!(
            svc["spec"]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == port),
            "{name}: Service has no port {port}"
        );
        // ...and the port is one the selected pods declare.
        let pods = template(&objects, name);
        assert!(
            pods["spec"]["containers"][0]["ports"]
                .to_string()
                .contains(&format!("\"{port}\"")),
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
            assert_eq!(
                o["metadata"]["labels"]["release"], "kube-prometheus-stack",
                "{file}: {} has no release label",
                o["metadata"]["name"]
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
    kube.post(
        "/api/v1/namespaces/monitoring/serviceaccounts",
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "prometheus"}}),
    )
    .await;
    kube.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "prometheus-metrics"},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
    )
    .await;
    kube.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "prometheus-metrics"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "prometheus-metrics"},
                "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}]}),
    )
    .await;
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
