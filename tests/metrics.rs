//! `/metrics` of the built Worker in Miniflare: what the verbs, the filter's reasons, deposits
//! and pheromones report; the scrape token (a refused scrape touches no Durable Object, a
//! scrape is one request to one); `promtool check metrics` after invalid input and with a
//! corrupt colony; and a real Prometheus reading back a deposit counter.

use aco_testkit::api::{full_args, gpu_pod, pod, Api, WorkerHttp};
use aco_testkit::nodes::name_of;
use aco_testkit::openb::priced_nodes;
use aco_testkit::prometheus::{Prometheus, ScrapeJob, Targets};
use aco_testkit::state::{colony_sqlite_files, sqlite};
use aco_testkit::{StartOptions, ADMIN_TOKEN, METRICS_TOKEN};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn metrics_report_verbs_filter_reasons_deposits_and_pheromones() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    let (body, _) = full_args(&gpu_pod("g", Some("A10")), &nodes);
    api.post("/v1/filter", body).await;
    api.scores(
        &pod(
            "m1",
            "metrics-team",
            json!({}),
            json!({}),
            json!({"cpu": "1"}),
        ),
        &nodes,
    )
    .await;
    // A placement with its outcome: confirmed, and the failure deposited on the node's trail.
    api.place_summary(json!([{"podUid": "uid-metrics-team-m1", "namespace": "metrics-team", "node": name_of(&nodes[0]), "outcome": "failed"}])).await;
    let text = api
        .metrics_containing("aco_requests_total{verb=\"placements\",code=\"200\"} 1")
        .await;
    for needle in [
        "aco_requests_total{verb=\"filter\",code=\"200\"} 1",
        "aco_filter_nodes_rejected_total{reason=\"gpu_model\"}",
        "aco_request_duration_seconds_count{verb=\"prioritize\"} 1",
        "aco_colony_deposits_total{tenant=\"metrics-team\"} 1",
        &format!(
            "aco_pheromone{{tenant=\"metrics-team\",node=\"{}\"}}",
            name_of(&nodes[0])
        ),
        "# TYPE aco_request_duration_seconds histogram",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

/// Status, body and the binding operations (`x-aco-binding-ops`) of `GET /metrics` with this
/// `Authorization` header.
async fn scrape_with(api: &Api, authorization: Option<&str>) -> (u16, String, u64) {
    let mut req = api.http.get(api.worker.url("/metrics"));
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    let r = req.send().await.unwrap();
    let ops = r.headers()["x-aco-binding-ops"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap(), ops)
}

#[tokio::test]
async fn a_scrape_needs_the_metrics_token_and_a_refused_one_touches_no_durable_object() {
    let api = Api::start(StartOptions::default());
    api.scores(
        &pod(
            "m",
            "secret-team",
            json!({}),
            json!({}),
            json!({"cpu": "1"}),
        ),
        &priced_nodes(),
    )
    .await;
    for authorization in [
        None,
        Some("Bearer dev-admin-token".to_string()),
        Some(format!("Bearer {ADMIN_TOKEN}")),
        Some(format!("Basic {METRICS_TOKEN}")),
    ] {
        let (status, body, ops) = scrape_with(&api, authorization.as_deref()).await;
        assert_eq!((status, ops), (401, 0), "{authorization:?}: {body}");
        assert!(!body.contains("secret-team"), "{body}");
        let error = aco_testkit::api::error_body(&body);
        assert!(error.error.to_lowercase().contains("bearer"), "{body}");
    }
    // The scrape itself is one request to the Telemetry object.
    let (status, body, ops) = scrape_with(&api, Some(&format!("Bearer {METRICS_TOKEN}"))).await;
    assert_eq!((status, ops), (200, 1), "{body}");

    // A Worker whose scrape token is unset or guessable serves no scrape at all, and says why.
    for token in ["", "dev-admin-token", "metrics-metrics-metrics-metrics!"] {
        let api = Api::start(StartOptions::default().var("METRICS_TOKEN", token));
        let (status, body, ops) = scrape_with(&api, Some(&format!("Bearer {token}"))).await;
        assert_eq!((status, ops), (503, 0), "{token:?}: {body}");
        assert!(body.contains("METRICS_TOKEN"), "{body}");
        let ready = api.get_raw("/readyz").await;
        assert_eq!(ready.0, 503, "{}", ready.1);
        assert!(ready.1.contains("METRICS_TOKEN"), "{}", ready.1);
    }
}

#[tokio::test]
async fn metrics_pass_promtool_with_several_tenants_invalid_input_and_a_corrupt_colony() {
    let mut api = Api::start(StartOptions::default().var("TELEMETRY_FLUSH_MS", "0"));
    let nodes = priced_nodes();
    for tenant in ["prom-a", "prom-b", "prom-c"] {
        api.scores(
            &pod("m", tenant, json!({}), json!({}), json!({"cpu": "1"})),
            &nodes,
        )
        .await;
        api.place_summary(json!([{"podUid": format!("uid-{tenant}-m"), "namespace": tenant, "node": name_of(&nodes[0])}])).await;
    }
    // Bad input of every kind the counters see: a body that does not parse, and placements the
    // colony drops (the family every writer once wrote with its own HELP line).
    api.post_raw("/v1/filter", "{bad".into()).await;
    let long_node = "n".repeat(300);
    let (status, _) = api
        .admin(
            reqwest::Method::POST,
            "/v1/placements",
            Some(json!({"placements": [{"podUid": "u-x", "namespace": "prom-a", "node": long_node}]})),
        )
        .await;
    assert!(status.is_client_error() || status.is_success(), "{status}");
    // `metrics()` runs promtool on every scrape; these families are written once each.
    let text = api
        .metrics_containing("aco_colony_deposits_total{tenant=\"prom-c\"} 1")
        .await;
    for family in [
        "aco_colony_deposits_total",
        "aco_pheromone",
        "aco_requests_total",
        "aco_colony_items_dropped_total",
    ] {
        assert!(
            text.matches(&format!("# TYPE {family} ")).count() <= 1,
            "{family}:\n{text}"
        );
    }

    // Corrupt one colony: the scrape never asks a colony, so it answers as before; a request to
    // that tenant fails, and the failure is counted by reason.
    api.worker.while_stopped(|dir| {
        for file in colony_sqlite_files(dir) {
            let out = std::process::Command::new("sqlite3")
                .arg(&file)
                .arg("SELECT count(*) FROM snapshot WHERE body LIKE '%\"tenant\":\"prom-b\"%'")
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).trim() == "1" {
                sqlite(&file, "UPDATE snapshot SET body = '{oops'");
            }
        }
    });
    let text = api.metrics().await;
    assert!(
        text.contains("aco_colony_deposits_total{tenant=\"prom-b\"} 1"),
        "the last report stays: {text}"
    );
    let (status, _) = api
        .admin(
            reqwest::Method::POST,
            "/v1/placements",
            Some(json!({"placements": [{"podUid": "uid-prom-b-2", "namespace": "prom-b", "node": name_of(&nodes[0])}]})),
        )
        .await;
    assert_eq!(status, 503);
    api.metrics_containing("aco_colony_errors_total{reason=\"corrupt_state\"} 1")
        .await;
}

#[tokio::test]
async fn a_real_prometheus_scrapes_the_worker_and_reads_back_a_deposit_counter() {
    let api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    api.scores(
        &pod("p1", "scraped", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    )
    .await;
    api.scores(
        &pod("p2", "scraped", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    )
    .await;
    api.place_summary(json!([
        {"podUid": "uid-scraped-p1", "namespace": "scraped", "node": name_of(&nodes[0])},
        {"podUid": "uid-scraped-p2", "namespace": "scraped", "node": name_of(&nodes[1])}
    ]))
    .await;
    let prometheus = Prometheus::start(&[ScrapeJob::worker("aco", &api.worker.base_url)]);
    let query = "aco_colony_deposits_total{tenant=\"scraped\"}";
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(sample) = prometheus
            .query(query)
            .await
            .ok()
            .and_then(|series| series.into_iter().next())
        {
            assert_eq!(
                sample.metric.get("job").map(String::as_str),
                Some("aco"),
                "{sample:?}"
            );
            assert_eq!(sample.value.1, "2", "{sample:?}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Prometheus never returned {query}; its log:\n{}",
            prometheus.log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // The scrape target is healthy (every scrape parsed).
    let targets: Targets = prometheus.api("targets", &[]).await.unwrap();
    assert_eq!(targets.active_targets[0].health, "up", "{targets:?}");
}
