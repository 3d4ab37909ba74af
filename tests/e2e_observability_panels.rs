//! The shipped observability files (`k8s/observability/`) against a real control plane (etcd,
//! kube-apiserver, kube-scheduler through the Worker over HTTPS), the real `aco-reporter` and a
//! real Prometheus scraping both the Worker's and the reporter's `/metrics`, with the alert rules
//! loaded. A small workload makes every panel have data: pods of two tenants scheduled and
//! placed, a GPU pod that some nodes reject (wrong model, no GPU), facts going stale
//! (`FACTS_TTL_MS` of a second), a node deleted (its facts forgotten), a tenant whose first
//! placement commits fail (`TEST_FAULT_PLACEMENTS`: colony errors, 503s, reporter retries,
//! duplicates), one outside `TENANTS` (its placement refused for good), and a latency-critical
//! pod bound by no extender (the reporter in shadow mode reports it to `POST /v1/shadow`: the
//! shadow panels' series). Then every panel's every query (`$cluster`/`$tenant` → `.*`,
//! `$__rate_interval` → `1m`) must parse and return at least one series, and so must each
//! variable's metric; the test fails naming the panel otherwise. Every alert rule must evaluate
//! without error. Run with `scripts/e2e`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use aco_testkit::api::{WorkerApi, WorkerHttp};
use aco_testkit::kube::fixtures::*;
use aco_testkit::kube::reporter::Reporter;
use aco_testkit::kube::{wait_for, ControlPlane, SchedulerConfig};
use aco_testkit::nodes::name_of;
use aco_testkit::observability::*;
use aco_testkit::openb::{openb_cpu_nodes, pick_gpu_nodes};
use aco_testkit::pods::{edit_pod, edit_spec};
use aco_testkit::prometheus::{ApiError, Prometheus, Rule, Rules, ScrapeJob, Targets};
use aco_testkit::WorkerProcess;

const BIND_TIMEOUT: Duration = Duration::from_secs(90);
/// How long Prometheus may take, after the workload, until every panel has data.
const DATA_TIMEOUT: Duration = Duration::from_secs(120);
const NS: &str = "obs";
/// Its first two placement commits fail (`TEST_FAULT_PLACEMENTS`).
const FAULTY: &str = "faulty";
/// Not in `TENANTS`: scored by η alone, its placements refused.
const OUTSIDER: &str = "outsider";

fn tenant_pod(name: &str, tenant: &str, opts: PodOpts) -> Value {
    edit_pod(pod(NS, name, opts), |p| {
        p.metadata
            .labels
            .get_or_insert_default()
            .insert("scheduling.aco/tenant-id".into(), tenant.into());
    })
}

/// Polls every unsatisfied query until each returns a series; a query Prometheus refuses
/// fails at once. Returns the queries still empty at the deadline.
async fn wait_all_have_series(
    prometheus: &Prometheus,
    queries: &[(String, String)],
    timeout: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    let mut waiting: BTreeMap<&str, &str> = queries
        .iter()
        .map(|(what, q)| (what.as_str(), q.as_str()))
        .collect();
    loop {
        let mut done = Vec::new();
        for (what, q) in &waiting {
            match prometheus.query(q).await {
                Ok(series) if !series.is_empty() => done.push(*what),
                Ok(_) | Err(ApiError::Unavailable(_)) => {}
                Err(e @ ApiError::Refused { .. }) => {
                    panic!("{what}: Prometheus refused the query {q}: {e}")
                }
            }
        }
        for what in done {
            waiting.remove(what);
        }
        if waiting.is_empty() || Instant::now() > deadline {
            return waiting
                .iter()
                .map(|(what, q)| format!("{what}: {q}"))
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
async fn every_dashboard_panel_has_data_from_a_real_prometheus_scraping_the_worker_and_the_reporter(
) {
    let cp = ControlPlane::start().await;
    let state = tempfile::Builder::new()
        .prefix("aco-e2e-obs-")
        .tempdir()
        .unwrap();
    let worker = WorkerProcess::start(
        worker_options(&cp, state.path())
            // Facts older than a second are stale: the reporter's full refresh is a minute.
            .var("FACTS_TTL_MS", "1000")
            .var("TEST_FAULT_PLACEMENTS", format!("{FAULTY}:2"))
            .var("TENANTS", format!("team-a,{FAULTY}")),
    );
    let api = WorkerApi::new(&worker, &cp.pki.ca_pem());
    let mut reporter = Reporter::start(
        &cp,
        &api.base,
        "reporter",
        &[
            "--no-node-metrics",
            "--full-refresh",
            "60s",
            "--shadow-scheduler-names",
            "default-scheduler",
            // A pod Running and Ready this long is a success: an outcome, the trail's
            // deposit, so that the pheromone panel has a series.
            "--healthy-after",
            "5s",
        ],
        false,
    );
    // The CPU node runs its pods (a fake kubelet): the only node whose pods reach an end.
    let _kwok = cp.start_kwok().await;
    let rules_dir = tempfile::tempdir().unwrap();
    let rules = write_rules_file(rules_dir.path());
    let prometheus = Prometheus::start_with_rules(
        &[
            ScrapeJob::worker("aco-worker", &api.base).ca_file(&cp.pki.path("ca.crt")),
            ScrapeJob::new(
                "aco-reporter",
                &format!("http://127.0.0.1:{}", reporter.ops),
            ),
        ],
        &[rules],
    );

    // Nodes: two V100s, two T4s, a CPU-only node, and one that leaves the cluster.
    let mut nodes: Vec<Value> = pick_gpu_nodes(&["V100M16", "V100M16", "T4", "T4"])
        .into_iter()
        .enumerate()
        .map(|(i, n)| label_node(n, 1.0 + i as f64 * 0.5, 200, false))
        .collect();
    let cpu = openb_cpu_nodes();
    nodes.push(kwok_node(label_node(cpu[0].clone(), 0.5, 300, false)));
    let doomed = label_node(cpu[1].clone(), 0.4, 300, false);
    for n in nodes.iter().chain([&doomed]) {
        cp.kube.create_node(n).await;
    }
    for n in nodes.iter().chain([&doomed]) {
        let name = name_of(n);
        let api = &api;
        wait_for(
            &format!("the reporter's facts for {name}"),
            Duration::from_secs(60),
            || {
                let name = name.clone();
                async move {
                    api.try_node_facts(&name)
                        .await
                        .filter(|f| f.requested.is_some())
                }
            },
        )
        .await;
    }
    let doomed = name_of(&doomed);
    cp.kube
        .delete(&format!("/api/v1/nodes/{doomed}"))
        .await
        .unwrap();
    wait_for(
        &format!("the Worker to forget {doomed}"),
        Duration::from_secs(60),
        || {
            let api = &api;
            let doomed = doomed.clone();
            async move { api.try_node_facts(&doomed).await.is_none().then_some(()) }
        },
    )
    .await;

    // Pods through kube-scheduler and the Worker (node objects mode), both verbs
    // (`k8s/scheduler-config-filter.yaml`): the dashboard's filter panels need the filter.
    let scheduler = cp
        .start_scheduler(
            "scheduler",
            &SchedulerConfig {
                file: aco_testkit::kube::scheduler_config::SHIPPED_FILTER,
                ..SchedulerConfig::worker(api.url_prefix(), cp.pki.ca_pem(), false)
            },
        )
        .await;
    cp.kube.create_namespace(NS).await;
    let mut pods: Vec<Value> = (0..4)
        .map(|i| tenant_pod(&format!("a-{i}"), "team-a", PodOpts::default()))
        .collect();
    // T4 nodes are rejected for their model, the CPU node for having no GPU.
    pods.push(tenant_pod(
        "a-gpu",
        "team-a",
        PodOpts {
            gpus: 1,
            annotations: vec![("scheduling.aco/gpu-models", "V100M16".into())],
            ..Default::default()
        },
    ));
    pods.extend((0..2).map(|i| tenant_pod(&format!("f-{i}"), FAULTY, PodOpts::default())));
    pods.push(tenant_pod("o-0", OUTSIDER, PodOpts::default()));
    let names = create_pods(&cp.kube, &pods).await;
    let placed = cp.kube.wait_all_bound(NS, &names, BIND_TIMEOUT).await;
    eprintln!(
        "placements: {:?}",
        names.iter().zip(&placed).collect::<Vec<_>>()
    );
    // Every pod bound through the extender deposits once, the faulty tenant's after retries.
    api.wait_deposits("team-a", 5, Duration::from_secs(60))
        .await;
    api.wait_deposits(FAULTY, 2, Duration::from_secs(60)).await;

    // Shadow mode: a latency-critical pod bound without the extender (directly, so it keeps
    // the default schedulerName); the reporter reports it to /v1/shadow, where it is scored.
    let shadow = tenant_pod(
        "s-0",
        "team-a",
        PodOpts {
            labels: vec![("aco/workload-type", "latency-critical".into())],
            ..Default::default()
        },
    );
    let shadow = edit_spec(shadow, |spec| {
        spec.scheduler_name = None;
        spec.node_name = Some(name_of(&nodes[4]));
    });
    cp.kube.create_pod(&shadow).await;
    wait_for(
        "the shadow summary to count the pod",
        Duration::from_secs(60),
        || async {
            let s = api.shadow_summary("team-a").await?;
            (s.pods + s.not_feasible >= 1).then_some(())
        },
    )
    .await;
    assert_eq!(
        api.deposits("team-a").await,
        5,
        "a shadow pod deposits nothing"
    );
    reporter.server.assert_running();

    // Every panel's every query, and every variable's metric, return series.
    let d = dashboard();
    let mut queries: Vec<(String, String)> = panel_queries(&d)
        .into_iter()
        .map(|(title, ref_id, expr)| {
            (
                format!("panel {title:?} query {ref_id}"),
                substitute(&expr, &d),
            )
        })
        .collect();
    for var in d.templating.list.iter().filter(|v| v.kind == "query") {
        let selector = variable_selector(var.definition.as_deref().expect("a definition")).unwrap();
        queries.push((format!("variable {}", var.name), substitute(&selector, &d)));
    }
    let empty = wait_all_have_series(&prometheus, &queries, DATA_TIMEOUT).await;
    let targets = prometheus.api::<Targets>("targets", &[]).await;
    assert!(
        empty.is_empty(),
        "these dashboard queries returned no series within {DATA_TIMEOUT:?}:\n  {}\nscrape targets: {targets:?}\nPrometheus log:\n{}",
        empty.join("\n  "),
        prometheus.log()
    );
    let targets = targets.expect("Prometheus's scrape targets").active_targets;
    let health: Vec<(&str, &str)> = targets
        .iter()
        .map(|t| (t.labels.job.as_str(), t.health.as_str()))
        .collect();
    assert_eq!(health.len(), 2, "{targets:?}");
    assert!(health.iter().all(|(_, h)| *h == "up"), "{targets:?}");

    // Every alert rule evaluates against these metrics without an error.
    let rules = wait_for(
        "every alert rule evaluated",
        Duration::from_secs(60),
        || async {
            let groups = prometheus.api::<Rules>("rules", &[]).await.ok()?.groups;
            let rules: Vec<Rule> = groups.into_iter().flat_map(|g| g.rules).collect();
            (!rules.is_empty() && rules.iter().all(|r| r.health != "unknown")).then_some(rules)
        },
    )
    .await;
    assert_eq!(
        rules.len(),
        alerts().len(),
        "rules loaded: {}",
        json!(rules)
    );
    for r in &rules {
        assert_eq!(
            r.health, "ok",
            "alert {} does not evaluate: {}",
            r.name, r.last_error
        );
    }
    drop(scheduler);
}
