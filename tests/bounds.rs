//! The key spaces no caller can grow beyond their bound (docs/limits.md), on the built Worker
//! in Miniflare with real Durable Objects: colonies beyond `MAX_COLONIES` and clusters beyond
//! `MAX_CLUSTERS` create nothing and are counted; `/metrics` shows every admitted colony for one
//! Durable Object request however many there are; telemetry keeps one bounded row per cluster
//! and survives a restart.

use aco_testkit::api::{full_args, pod, Api, WorkerHttp};
use aco_testkit::state::object_sqlite_files;
use aco_testkit::{StartOptions, ADMIN_TOKEN, METRICS_TOKEN};
use serde_json::{json, Value};

fn node(name: &str) -> Value {
    json!({
        "kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"aco/cost-per-hour": "0.5"}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                   "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
    })
}

fn cpu_pod(name: &str, tenant: &str) -> Value {
    pod(name, tenant, json!({}), json!({}), json!({"cpu": "1"}))
}

/// The `.sqlite` files of Durable Objects whose class name ends with `class`.
fn object_files(api: &Api, class: &str) -> Vec<std::path::PathBuf> {
    object_sqlite_files(api.worker.persist_dir(), class)
}

/// `name{labels} value` in a scrape.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn tenants_beyond_max_colonies_get_no_colony_and_are_counted_under_other() {
    let api = Api::start(StartOptions::default().var("MAX_COLONIES", "3"));
    let nodes = [node("n1"), node("n2")];
    for i in 0..6 {
        let (body, _) = full_args(&cpu_pod("p", &format!("team-{i}")), &nodes);
        let scores = api.prioritize_args(body).await;
        assert_eq!(scores.len(), 2, "{scores:?}");
    }
    // An overflow tenant's placement: no colony to confirm into, so an unknown pod, not an
    // error the reporter would retry.
    let summary = api
        .place_summary(json!([
            {"podUid": "uid-team-5-p", "namespace": "team-5", "node": "n1"},
            {"podUid": "uid-team-0-p", "namespace": "team-0", "node": "n1"}]))
        .await;
    assert_eq!(
        (summary.deposited, summary.unknown_pod),
        (1, 1),
        "{summary:?}"
    );
    // The admin routes name the tenant.
    let (status, body) = api
        .admin_refused(reqwest::Method::GET, "/v1/tenants/team-4/pheromones", None)
        .await;
    assert_eq!(status, 404, "{body:?}");
    assert_eq!(body.field.as_deref(), Some("tenant"), "{body:?}");

    let text = api
        .metrics_containing("aco_tenant_overflow_total{verb=\"placements\",tenant=\"other\"} 1")
        .await;
    assert_eq!(
        sample(
            &text,
            "aco_tenant_overflow_total{verb=\"prioritize\",tenant=\"other\"}"
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(sample(&text, "aco_colony_reports"), Some(3.0), "{text}");
    for i in 3..6 {
        assert!(
            !text.contains(&format!("tenant=\"team-{i}\"")),
            "an overflow tenant got a series:\n{text}"
        );
    }
    assert_eq!(
        object_files(&api, "Colony").len(),
        3,
        "one Colony object per admitted tenant"
    );
}

#[tokio::test]
async fn clusters_beyond_max_clusters_are_refused_before_any_object_or_label() {
    let api = Api::start(StartOptions::default().var("MAX_CLUSTERS", "2"));
    let put = |cluster: &str| {
        let req = api
            .http
            .put(api.worker.url(&format!("/c/{cluster}/v1/nodes")))
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({"nodes": [{"name": "n1"}]}));
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(put("a").await.0, 200);
    assert_eq!(put("b").await.0, 200);
    let (status, body) = put("c").await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body.contains("\"field\":\"cluster\"") && body.contains("MAX_CLUSTERS"),
        "{body}"
    );
    // The extender verbs of the refused cluster too; the admitted ones keep working.
    let (body, _) = full_args(&cpu_pod("p", "ml"), &[node("n1")]);
    assert_eq!(api.post_raw("/c/c/v1/filter", body.clone()).await.0, 404);
    assert_eq!(api.post_raw("/c/a/v1/filter", body).await.0, 200);
    assert_eq!(put("a").await.0, 200, "an admitted cluster stays admitted");
    assert_eq!(object_files(&api, "Facts").len(), 2);
    let text = api.metrics_containing("aco_clusters_refused_total 2").await;
    assert!(!text.contains("cluster=\"c\""), "{text}");
    assert!(text.contains("cluster=\"a\""), "{text}");
}

#[tokio::test]
async fn a_scrape_of_every_admitted_colony_is_one_durable_object_request_and_telemetry_rows_are_bounded(
) {
    // The default MAX_COLONIES, every one of them admitted and reporting.
    let tenants: usize = std::env::var("BOUNDS_TENANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    const CLUSTERS: usize = 12;
    // Counters and decisions leave the isolate right after each request, so that the scrape
    // below sees every colony's first decision.
    let mut api = Api::start(
        StartOptions::default()
            .var("TELEMETRY_FLUSH_MS", "0")
            .var("DECISION_FLUSH_MS", "0"),
    );
    let nodes = [node("n1")];
    // A few at a time: each first decision of a tenant creates its colony.
    for start in (0..tenants).step_by(20) {
        let sends = (start..tenants.min(start + 20)).map(|i| {
            let (body, _) = full_args(&cpu_pod("p", &format!("t{i:03}")), &nodes);
            let path = format!("/c/k{}/v1/prioritize", i % CLUSTERS);
            let api = &api;
            async move { api.post(&path, body).await }
        });
        futures::future::join_all(sends).await;
    }
    let needle = format!("aco_colony_reports {tenants}\n");
    let text = api.metrics_containing(&needle).await;
    // What one scrape cost the Worker: its binding operations, all Durable Object requests.
    let r = api
        .http
        .get(api.worker.url("/metrics"))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let ops: u64 = r.headers()["x-aco-binding-ops"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        ops <= 5,
        "a scrape of {tenants} colonies made {ops} binding operations"
    );
    eprintln!(
        "scrape of {tenants} colonies: {ops} Durable Object request(s), {} bytes, {} lines",
        text.len(),
        text.lines().count()
    );
    for i in [0, 199, 200, tenants - 1]
        .into_iter()
        .filter(|i| *i < tenants)
    {
        let series = format!(
            "aco_colony_decisions_total{{cluster=\"k{}\",tenant=\"t{i:03}\"}}",
            i % CLUSTERS
        );
        assert_eq!(sample(&text, &series), Some(1.0), "{series} in the scrape");
    }
    let prioritized = |text: &str| -> f64 {
        (0..CLUSTERS)
            .filter_map(|c| {
                sample(
                    text,
                    &format!(
                        "aco_requests_total{{cluster=\"k{c}\",verb=\"prioritize\",code=\"200\"}}"
                    ),
                )
            })
            .sum()
    };
    assert_eq!(
        prioritized(&text),
        tenants as f64,
        "prioritize requests in\n{}",
        text.lines()
            .filter(|l| l.starts_with("aco_requests_total"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // Restarted, the counters are where they were (nothing rolled back).
    api.worker.restart();
    let text = api.metrics_containing(&needle).await;
    assert_eq!(prioritized(&text), tenants as f64);

    // One row per cluster that counted something (the named ones and the unlabelled part),
    // each far below SQLite's 2 MB row limit.
    let rows = api.worker.while_stopped(|dir| {
        let files = object_sqlite_files(dir, "Telemetry");
        assert_eq!(files.len(), 1, "{files:?}");
        let out = std::process::Command::new("sqlite3")
            .arg(&files[0])
            .arg("SELECT cluster || ' ' || length(body) FROM parts")
            .output()
            .expect("sqlite3 (scripts/setup installs it)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let (cluster, bytes) = l.rsplit_once(' ').unwrap();
                (cluster.to_string(), bytes.parse::<u64>().unwrap())
            })
            .collect::<Vec<_>>()
    });
    assert_eq!(rows.len(), CLUSTERS + 1, "{rows:?}");
    let largest = rows.iter().map(|(_, n)| *n).max().unwrap();
    assert!(
        largest < 100_000,
        "a telemetry row of {largest} bytes: {rows:?}"
    );
    eprintln!(
        "telemetry rows: {} clusters, largest {largest} bytes",
        rows.len()
    );
}
