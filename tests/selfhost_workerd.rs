//! The self-hosted install's workerd configuration (`k8s/self-hosted/workerd.capnp`), run by
//! workerd itself — no Miniflare — on the built bundle, as the StatefulSet runs it:
//! 1. it declares what `wrangler.toml` declares (Durable Object bindings and classes, SQLite
//!    storage, the KV namespace, `[vars]`, the compatibility date) and the three secrets;
//! 2. it serves: ready with every binding, the verbs only behind the path token, the admin
//!    routes behind the bearer token, `/metrics` behind the scrape token;
//! 3. its state is on disk (the PersistentVolume's role): node facts, a colony's trail and
//!    the KV pod index (`BIND_INDEX`) survive a SIGTERM restart and a `kill -9`.
//!
//! HTTPS with a throwaway PKI (`scripts/kube/gen-certs`, openssl).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use aco_core::api::placements::PlacementReport;
use aco_core::colony::{Outcome, OutcomeLabel};
use aco_core::wire::ExtenderBindingResult;
use aco_testkit::api::{placed, WorkerApi, WorkerHttp};
use aco_testkit::kube::{wait_for, Pki};
use aco_testkit::repo_root;
use aco_testkit::state::class_sqlite_files;
use aco_testkit::workerd::{text_binding, WorkerdOptions, WorkerdProcess, CONFIG};
use serde::Deserialize;
use serde_json::{json, Value};

/// What `wrangler.toml` declares that the self-hosted config must declare too.
#[derive(Debug, Deserialize)]
struct Wrangler {
    main: String,
    compatibility_date: String,
    migrations: Vec<Migration>,
    durable_objects: DurableObjects,
    kv_namespaces: Vec<KvNamespace>,
    vars: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct Migration {
    #[serde(default)]
    new_sqlite_classes: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct DurableObjects {
    bindings: Vec<DurableObjectBinding>,
}

#[derive(Debug, Deserialize)]
struct DurableObjectBinding {
    name: String,
    class_name: String,
}

#[derive(Debug, Deserialize)]
struct KvNamespace {
    binding: String,
}

/// `wrangler.toml` (smol-toml, the parser the Miniflare harness reads it with).
fn wrangler_toml() -> Wrangler {
    let out = Command::new(std::env::var_os("NODE").unwrap_or_else(|| "node".into()))
        .current_dir(repo_root())
        .args([
            "--input-type=module",
            "-e",
            "import { parse } from 'smol-toml'; import { readFileSync } from 'node:fs';\
             process.stdout.write(JSON.stringify(parse(readFileSync('wrangler.toml', 'utf8'))));",
        ])
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn config_text() -> String {
    std::fs::read_to_string(repo_root().join(CONFIG)).unwrap()
}

#[test]
fn the_config_declares_what_wrangler_toml_declares() {
    let wrangler = wrangler_toml();
    let config = config_text();
    let has = |line: &str| {
        assert!(
            config.lines().any(|l| l.trim().starts_with(line)),
            "{CONFIG} lacks `{line}` (wrangler.toml declares it)"
        )
    };
    has(&format!(
        "compatibilityDate = \"{}\"",
        wrangler.compatibility_date
    ));
    assert_eq!(wrangler.main, "build/index.js");
    has("(name = \"index.js\", esModule = embed \"/build/index.js\")");
    let sqlite: Vec<&String> = wrangler
        .migrations
        .iter()
        .flat_map(|m| &m.new_sqlite_classes)
        .collect();
    let bindings = &wrangler.durable_objects.bindings;
    assert_eq!(bindings.len(), 4);
    for b in bindings {
        let (name, class) = (&b.name, &b.class_name);
        has(&format!(
            "(name = \"{name}\", durableObjectNamespace = \"{class}\")"
        ));
        assert!(sqlite.contains(&class), "{class} is SQLite-backed");
        has(&format!(
            "(className = \"{class}\", uniqueKey = \"aco-edge-extender-{class}\", enableSql = true)"
        ));
    }
    for kv in &wrangler.kv_namespaces {
        has(&format!("(name = \"{}\", kvNamespace = ", kv.binding));
    }
    for (key, value) in &wrangler.vars {
        assert_eq!(
            text_binding(&config, key).as_deref(),
            Some(value.as_str()),
            "[vars] {key}"
        );
    }
    // The secrets of docs/deploy.md "Deploy", from the environment (the Secret aco-worker-secrets).
    for secret in ["ADMIN_TOKEN", "METRICS_TOKEN", "EXTENDER_TOKENS"] {
        has(&format!(
            "(name = \"{secret}\", fromEnvironment = \"{secret}\")"
        ));
    }
}

/// A small CPU pod of `namespace`, its tenant chosen by label.
struct TestPod {
    namespace: String,
    name: String,
    uid: String,
    object: Value,
}

fn pod(namespace: &str, name: &str, tenant: &str) -> TestPod {
    TestPod {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: format!("uid-{name}"),
        object: json!({"metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"),
                        "labels": {"scheduling.aco/tenant-id": tenant}},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]}}),
    }
}

fn node(name: &str, cost: f64) -> Value {
    json!({"name": name, "labels": {"aco/cost-per-hour": cost.to_string()},
           "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
           "requested": {"cpu": "0", "memory": "0"}})
}

/// Prioritizes `pod` over `names` (remembering the decision), then binds it on the top node
/// with the bind verb, whose arguments carry no labels: the tenant comes from the KV pod index.
async fn prioritize(api: &WorkerApi, pod: &TestPod, names: &[&str]) -> String {
    let reply = api
        .prioritize_args(json!({"Pod": pod.object, "NodeNames": names}).to_string())
        .await;
    reply
        .iter()
        .find(|h| h.score == 10)
        .map(|h| h.host.clone())
        .unwrap_or_else(|| panic!("no node at 10: {reply:?}"))
}

async fn bind(api: &WorkerApi, pod: &TestPod, node: &str) {
    let args = aco_core::wire::ExtenderBindingArgs {
        pod_name: pod.name.clone(),
        pod_namespace: pod.namespace.clone(),
        pod_uid: pod.uid.clone(),
        node: aco_core::names::NodeName::parse(node).unwrap(),
    };
    let reply: ExtenderBindingResult = api
        .post_as(
            &api.verb_path("bind"),
            serde_json::to_string(&args).unwrap(),
        )
        .await;
    assert_eq!(reply.error, "", "{reply:?}");
}

/// Whether the KV namespace's object on disk holds `key` (read with the sqlite3 CLI beside the
/// running workerd: SQLite in WAL mode admits a reader).
fn kv_on_disk_has(state_dir: &Path, key: &str) -> bool {
    class_sqlite_files(state_dir, "POD_TENANTS")
        .iter()
        .any(|f| {
            Command::new("sqlite3")
                .arg(f)
                .arg(format!("SELECT count(*) FROM kv WHERE key = '{key}'"))
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "1")
        })
}

/// node → the stored trail of a tenant, and its confirmed placements.
type Trails = BTreeMap<String, (f64, f64, u64, Option<f64>)>;
async fn trail(api: &WorkerApi, tenant: &str) -> (Trails, u64) {
    (api.trails(tenant).await, api.deposits(tenant).await)
}

#[tokio::test]
async fn workerd_serves_the_bundle_with_the_shipped_config_and_keeps_its_state_on_disk() {
    let pki_dir = tempfile::tempdir().unwrap();
    let pki = Pki::generate(pki_dir.path());
    let mut workerd =
        WorkerdProcess::start(WorkerdOptions::new(pki.worker_tls()).var("BIND_INDEX", "true"))
            .await;
    let api = WorkerApi::at(&workerd.base_url, &workerd.verb_root(), &pki.ca_pem());
    assert!(
        workerd.verb_root().starts_with("/t/"),
        "path-token as shipped"
    );

    // Ready: the config is valid and every binding the Worker needs is there.
    let (status, body) = api.get_raw("/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"ready": true, "problems": []})
    );
    // The verbs only behind the path token, the admin routes only with the bearer token.
    let (status, _) = api.post_raw("/v1/filter", "{}".into()).await;
    assert_eq!(status, 401);
    let (status, _) = api.get_raw("/v1/nodes/n1").await;
    assert_eq!(status, 401);

    api.put_facts([node("n1", 0.5), node("n2", 4.0), node("n3", 9.0)])
        .await;
    let names = ["n1", "n2", "n3"];
    // Two pods of namespace "web" under the label tenant "ml": one bound now, one after the
    // restarts, where only the KV pod index on disk can say its tenant is "ml".
    let first = pod("web", "first", "ml");
    let second = pod("web", "second", "ml");
    let top = prioritize(&api, &first, &names).await;
    assert_eq!(top, "n1", "the cheapest node");
    let second_top = prioritize(&api, &second, &names).await;
    // The index and the decisions are written after the responses (waitUntil): wait for both
    // on disk before binding or restarting.
    wait_for("the pod index in KV", Duration::from_secs(20), || async {
        (kv_on_disk_has(workerd.state_dir(), "pod/uid-first")
            && kv_on_disk_has(workerd.state_dir(), "pod/uid-second"))
        .then_some(())
    })
    .await;
    wait_for(
        "both decisions committed",
        Duration::from_secs(20),
        || async {
            let t = api.pheromone_table("ml").await;
            (t.counters.decisions == 2 && !t.uncommitted).then_some(())
        },
    )
    .await;
    bind(&api, &first, &top).await;
    // The pod failed there: the reporter's outcome is the trail's deposit.
    let failed = PlacementReport {
        tenant: Some("ml".into()),
        outcome: Some(Outcome::Label(OutcomeLabel::Failed)),
        ..placed("uid-first", "web", &top)
    };
    let outcome = api.place_reports(&[failed]).await;
    assert_eq!(outcome.outcomes, 1, "{outcome:?}");
    let before = wait_for("the first deposit", Duration::from_secs(20), || async {
        let t = trail(&api, "ml").await;
        (t.1 == 1 && !t.0.is_empty()).then_some(t)
    })
    .await;
    assert!(before.0.contains_key("n1"), "{before:?}");
    assert_eq!(trail(&api, "web").await.1, 0, "nothing under the namespace");
    assert!(api.metrics().await.contains("aco_colony_decisions_total"));

    // SIGTERM (a rollout) and back on the same volume: facts, trail, index, decision all there.
    workerd.restart().await;
    assert!(api.node_facts("n3").await.is_some(), "facts survived");
    assert_eq!(trail(&api, "ml").await, before, "the trail survived");
    bind(&api, &second, &second_top).await;
    let after = wait_for("the second placement", Duration::from_secs(20), || async {
        let t = trail(&api, "ml").await;
        (t.1 == 2).then_some(t)
    })
    .await;
    assert_eq!(
        trail(&api, "web").await.1,
        0,
        "the tenant came from the KV pod index, on disk"
    );

    // kill -9: what a reply confirmed was committed.
    workerd.crash_and_restart().await;
    assert_eq!(trail(&api, "ml").await, after);
    assert!(
        api.node_facts("n1").await.is_some(),
        "facts survived a crash"
    );
    assert!(api.metrics().await.contains("aco_colony_decisions_total"));

    // One directory per Durable Object class on the volume, the KV namespace's included.
    let mut classes: Vec<String> = std::fs::read_dir(workerd.state_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    classes.sort();
    assert_eq!(
        classes,
        [
            "aco-edge-extender-Colony",
            "aco-edge-extender-Facts",
            "aco-edge-extender-POD_TENANTS",
            "aco-edge-extender-Registry",
            "aco-edge-extender-Telemetry"
        ]
    );
    let logs = workerd.logs();
    assert!(
        !logs.contains(aco_testkit::worker::BUDGET_EXCEEDED),
        "{logs}"
    );
}
