//! The real `acoctl` binary against the built Worker on Miniflare (the test kit starts it): a
//! tenant's colony exported from one Worker and imported into a fresh one answers prioritize
//! exactly as the first; a file that does not match (another tenant or cluster, a changed byte)
//! is refused by name and changes nothing; an import repeated changes nothing; listings, trails
//! and the token rules.

use std::path::Path;
use std::process::{Command, Output};

use aco_core::api::pheromones::PheromoneTableReply;
use aco_testkit::api::{pod, Api, WorkerHttp};
use aco_testkit::openb::priced_nodes;
use aco_testkit::{StartOptions, ADMIN_TOKEN};
use serde_json::{json, Value};

/// `acoctl --url <worker> args…` with the admin token in `ACO_ADMIN_TOKEN`.
fn acoctl(api: &Api, args: &[&str]) -> Output {
    acoctl_with(api, args, Some(ADMIN_TOKEN))
}

fn acoctl_with(api: &Api, args: &[&str], token: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_acoctl"));
    cmd.arg("--url").arg(api.worker.url("")).args(args);
    cmd.env_remove("ACO_ADMIN_TOKEN")
        .env_remove("ACO_CLUSTER")
        .env_remove("ACO_WORKER_URL");
    if let Some(t) = token {
        cmd.env("ACO_ADMIN_TOKEN", t);
    }
    cmd.output().expect("running acoctl")
}

/// Standard output of a run that must succeed.
fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "acoctl failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// (exit code, standard error) of a run that must fail.
fn refused(out: Output) -> (i32, String) {
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tenant_pod(i: usize) -> Value {
    pod(
        &format!("p{i}"),
        "team-ns",
        json!({"scheduling.aco/tenant-id": "ml"}),
        json!({}),
        json!({"cpu": "1"}),
    )
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test]
async fn an_export_imported_into_a_fresh_worker_answers_prioritize_the_same_and_a_mismatch_changes_nothing(
) {
    // τ counts in the scores, so a colony that learned scores unlike a fresh one.
    let a = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let fresh = a.scores(&tenant_pod(0), &nodes).await;
    // The pods fail on the node the colony liked best: its trail falls.
    let failing = fresh
        .iter()
        .max_by_key(|(_, s)| **s)
        .map(|(n, _)| n.clone())
        .unwrap();
    for i in 1..=20 {
        a.scores(&tenant_pod(i), &nodes).await;
    }
    let placements: Vec<Value> = (1..=20)
        .map(|i| json!({"podUid": format!("uid-team-ns-p{i}"), "namespace": "team-ns", "name": format!("p{i}"), "tenant": "ml", "node": failing, "outcome": "failed"}))
        .collect();
    assert_eq!(a.place(json!(placements)).await["deposited"], 20);
    let probe = tenant_pod(100);
    let learned = a.scores(&probe, &nodes).await;
    assert_ne!(
        learned, fresh,
        "the colony learned something worth exporting"
    );

    // Listings and trails, as tables and as JSON.
    let tenants: Value = serde_json::from_str(&ok(acoctl(&a, &["-o", "json", "tenants"]))).unwrap();
    assert_eq!(tenants, json!({"cluster": "default", "tenants": ["ml"]}));
    let table = ok(acoctl(&a, &["trails", "ml"]));
    assert!(
        table.contains("NODE") && table.contains(&failing),
        "{table}"
    );
    let trails: PheromoneTableReply =
        serde_json::from_str(&ok(acoctl(&a, &["-o", "json", "trails", "ml"]))).unwrap();
    assert_eq!(trails.nodes[0].node, failing);
    assert!(trails.nodes[0].tau < 1.0, "{trails:?}");
    assert_eq!(trails.counters.deposits, 20);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ml.json");
    let summary = ok(acoctl(&a, &["export", "ml", "--file", path_str(&file)]));
    assert!(summary.contains("exported tenant ml"), "{summary}");

    // A fresh Worker: the import makes its colony answer as the exporting one.
    let b = Api::start(StartOptions::default());
    assert_eq!(b.scores(&tenant_pod(0), &nodes).await, fresh);
    let out = ok(acoctl(&b, &["import", "ml", "--file", path_str(&file)]));
    assert!(out.contains("imported"), "{out}");
    let version = b.pheromone_table("ml").await.version;
    // The same file again (a retry): one import.
    let again: Value = serde_json::from_str(&ok(acoctl(
        &b,
        &["-o", "json", "import", "ml", "--file", path_str(&file)],
    )))
    .unwrap();
    assert_eq!(again["changed"], false, "{again}");
    assert_eq!(b.pheromone_table("ml").await.version, version);
    assert_eq!(b.trails("ml").await, a.trails("ml").await);
    assert_eq!(b.scores(&probe, &nodes).await, learned);
    let version = b.pheromone_table("ml").await.version;

    // Refused by name, changing nothing: another tenant, another cluster, a changed byte.
    let (code, err) = refused(acoctl(&b, &["import", "web", "--file", path_str(&file)]));
    assert_eq!(code, 1);
    assert!(
        err.contains("HTTP 409") && err.contains("(field tenant)"),
        "{err}"
    );
    assert!(err.contains("[request id "), "{err}");
    let (_, err) = refused(acoctl(
        &b,
        &["--cluster", "eu", "import", "ml", "--file", path_str(&file)],
    ));
    assert!(err.contains("(field cluster)"), "{err}");
    assert!(b.trails("web").await.is_empty());
    // One number of the state changed, every other byte as exported.
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches(r#""deposits":20"#).count(), 1, "{text}");
    let tampered = dir.path().join("tampered.json");
    std::fs::write(
        &tampered,
        text.replace(r#""deposits":20"#, r#""deposits":21"#),
    )
    .unwrap();
    let (_, err) = refused(acoctl(&b, &["import", "ml", "--file", path_str(&tampered)]));
    assert!(err.contains("(field checksum)"), "{err}");
    assert_eq!(b.trails("ml").await, a.trails("ml").await);
    assert_eq!(b.pheromone_table("ml").await.version, version);
    // Under another name when told.
    ok(acoctl(
        &b,
        &["import", "web", "--allow-rename", "--file", path_str(&file)],
    ));
    assert_eq!(b.trails("web").await, a.trails("ml").await);

    // The clusters the Worker serves: the default, and `eu` (admitted by the refused import).
    let clusters: Value =
        serde_json::from_str(&ok(acoctl(&b, &["-o", "json", "clusters"]))).unwrap();
    assert_eq!(clusters, json!({"clusters": ["default", "eu"]}));
    let tenants = ok(acoctl(&b, &["tenants"]));
    assert_eq!(tenants, "TENANT\nml\nweb\n");

    // A reset needs --yes; then the colony starts over.
    assert_eq!(refused(acoctl(&b, &["reset", "web"])).0, 2);
    ok(acoctl(&b, &["reset", "web", "--yes"]));
    assert!(b.trails("web").await.is_empty());
}

#[tokio::test]
async fn the_token_comes_from_the_environment_or_a_file_and_a_wrong_one_is_refused() {
    let api = Api::start(StartOptions::default());
    let (code, err) = refused(acoctl_with(&api, &["tenants"], None));
    assert_eq!(code, 2);
    assert!(err.contains("ACO_ADMIN_TOKEN"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{ADMIN_TOKEN}\n")).unwrap();
    let out = ok(acoctl_with(
        &api,
        &["--token-file", path_str(&token), "tenants"],
        None,
    ));
    assert_eq!(out, "TENANT\n");
    let (code, err) = refused(acoctl_with(&api, &["tenants"], Some("not-the-token")));
    assert_eq!(code, 1);
    assert!(err.contains("HTTP 401"), "{err}");
}
