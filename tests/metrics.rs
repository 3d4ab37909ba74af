//! `/metrics` of the built Worker in Miniflare: what the verbs, the filter's reasons, deposits
//! and pheromones report, `promtool check metrics` with several tenants (a failing colony
//! skipped), and a real Prometheus reading back a deposit counter.

use aco_testkit::api::{full_args, gpu_pod, pod, Api, WorkerHttp};
use aco_testkit::nodes::name_of;
use aco_testkit::openb::priced_nodes;
use aco_testkit::prometheus::{Prometheus, ScrapeJob};
use aco_testkit::state::{colony_sqlite_files, sqlite};
use aco_testkit::StartOptions;
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
    api.place(json!([{"podUid": "uid-metrics-team-m1", "namespace": "metrics-team", "node": name_of(&nodes[0])}])).await;
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

/// `promtool check metrics` on a scrape: (ok, promtool's complaints).
fn promtool_check(text: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; scripts/setup installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test]
async fn metrics_pass_promtool_with_several_tenants_and_a_failing_colony_is_skipped() {
    let mut api = Api::start(StartOptions::default());
    let nodes = priced_nodes();
    for tenant in ["prom-a", "prom-b", "prom-c"] {
        api.scores(
            &pod("m", tenant, json!({}), json!({}), json!({"cpu": "1"})),
            &nodes,
        )
        .await;
        api.place(json!([{"podUid": format!("uid-{tenant}-m"), "namespace": tenant, "node": name_of(&nodes[0])}])).await;
    }
    api.post_raw("/v1/filter", "{bad".into()).await;
    let text = api
        .metrics_containing("aco_colony_deposits_total{tenant=\"prom-c\"} 1")
        .await;
    let (ok, complaints) = promtool_check(&text);
    assert!(
        ok && complaints.trim().is_empty(),
        "promtool check metrics:\n{complaints}\n{text}"
    );
    for family in [
        "aco_colony_deposits_total",
        "aco_pheromone",
        "aco_requests_total",
    ] {
        assert_eq!(
            text.matches(&format!("# TYPE {family} ")).count(),
            1,
            "{family}:\n{text}"
        );
    }

    // Corrupt one colony: the scrape still answers 200, without it, and counts it.
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
    let text = api
        .metrics_containing("aco_metrics_colonies{result=\"failed\"} 1")
        .await;
    assert!(!text.contains("tenant=\"prom-b\""), "{text}");
    assert!(
        text.contains("aco_colony_deposits_total{tenant=\"prom-a\"} 1"),
        "{text}"
    );
    let (ok, complaints) = promtool_check(&text);
    assert!(
        ok && complaints.trim().is_empty(),
        "promtool check metrics:\n{complaints}\n{text}"
    );
    api.metrics_containing("aco_metrics_colony_errors_total 1")
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
    api.place(json!([
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
            assert_eq!(sample["metric"]["job"], "aco");
            assert_eq!(sample["value"][1], "2", "{sample}");
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
    let targets = prometheus.api("targets", &[]).await.unwrap();
    assert_eq!(targets["activeTargets"][0]["health"], "up", "{targets}");
}
