//! The shipped observability files (`k8s/observability/`), checked against the real tools.
//!
//! - The PrometheusRule's `spec.groups`, written out as a plain rules file, pass
//!   `promtool check rules`, and its alerts pass their unit tests (`rules-test.yaml`,
//!   `promtool test rules`). Every alert has a severity, a summary, a description and a
//!   runbook anchor that `docs/observability.md` has. These need no cluster and run in
//!   `cargo test` (scripts/test).
//! - The Grafana dashboard is importable (uid, schemaVersion, `__inputs`, the datasource,
//!   cluster and tenant variables, every panel on `${datasource}`).
//! - With the `e2e` feature (`scripts/e2e`): a real control plane (etcd, kube-apiserver,
//!   kube-scheduler through the Worker over HTTPS), the real `aco-reporter` and a real
//!   Prometheus scraping both the Worker's and the reporter's `/metrics`, with the alert rules
//!   loaded. A small workload makes every panel have data: pods of two tenants scheduled and
//!   placed, a GPU pod that some nodes reject (wrong model, no GPU), facts going stale
//!   (`FACTS_TTL_MS` of a second), a node deleted (its facts forgotten), a tenant whose first
//!   placement commits fail (`TEST_FAULT_PLACEMENTS`: colony errors, 503s, reporter retries,
//!   duplicates), one outside `TENANTS` (its placement refused for good), and a latency-critical
//!   pod bound by no extender (the reporter in shadow mode reports it to `POST /v1/shadow`:
//!   the shadow panels' series). Then every
//!   panel's every query (`$cluster`/`$tenant` → `.*`, `$__rate_interval` → `1m`) must parse
//!   and return at least one series, and so must each variable's metric; the test fails
//!   naming the panel otherwise. Every alert rule must evaluate without error.

use std::path::{Path, PathBuf};

use aco_testkit::repo_root;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const DASHBOARD: &str = "k8s/observability/grafana-dashboard.json";
const RULES: &str = "k8s/observability/prometheus-rules.yaml";
const RULES_TEST: &str = "k8s/observability/rules-test.yaml";
const DOCS: &str = "docs/observability.md";
/// The rules file name `rules-test.yaml` loads (beside it).
const RULES_FILE: &str = "aco-rules.yml";

// ---------------------------------------------------------------------------------------------
// alert rules

/// The Prometheus Operator's PrometheusRule, as much as the tests read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PrometheusRule {
    api_version: String,
    kind: String,
    spec: RuleSpec,
}

#[derive(Deserialize)]
struct RuleSpec {
    /// Kept as written: they become a plain rules file for promtool.
    groups: Vec<serde_yaml::Value>,
}

#[derive(Deserialize)]
struct RuleGroup {
    #[serde(default)]
    rules: Vec<RuleEntry>,
}

/// A recording rule (no `alert`) or an alert.
#[derive(Deserialize)]
struct RuleEntry {
    alert: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

struct Alert {
    name: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

fn prometheus_rule() -> PrometheusRule {
    let text = std::fs::read_to_string(repo_root().join(RULES)).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{RULES}: {e}"))
}

/// Writes the PrometheusRule's `spec.groups` as a plain rules file `dir/aco-rules.yml`.
fn write_rules_file(dir: &Path) -> PathBuf {
    let rule = prometheus_rule();
    assert_eq!(rule.api_version, "monitoring.coreos.com/v1", "{RULES}");
    assert_eq!(rule.kind, "PrometheusRule", "{RULES}");
    let groups = rule.spec.groups;
    assert!(!groups.is_empty(), "{RULES}: no spec.groups");
    let mut file = serde_yaml::Mapping::new();
    file.insert("groups".into(), groups.into());
    let path = dir.join(RULES_FILE);
    std::fs::write(&path, serde_yaml::to_string(&file).unwrap()).unwrap();
    path
}

/// Runs promtool in `dir`: (success, everything it printed).
fn promtool(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("promtool (Debian package prometheus; scripts/setup installs it)");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn alerts() -> Vec<Alert> {
    prometheus_rule()
        .spec
        .groups
        .into_iter()
        .map(|g| serde_yaml::from_value::<RuleGroup>(g).unwrap_or_else(|e| panic!("{RULES}: {e}")))
        .flat_map(|g| g.rules)
        .filter_map(|r| {
            Some(Alert {
                name: r.alert?,
                labels: r.labels,
                annotations: r.annotations,
            })
        })
        .collect()
}

#[test]
fn prometheus_rule_passes_promtool_check_rules() {
    let dir = tempfile::tempdir().unwrap();
    write_rules_file(dir.path());
    let (ok, out) = promtool(dir.path(), &["check", "rules", RULES_FILE]);
    assert!(ok, "promtool check rules on {RULES} (spec.groups):\n{out}");
    assert!(out.contains("SUCCESS"), "{out}");
}

#[test]
fn alerts_pass_their_promtool_unit_tests() {
    let dir = tempfile::tempdir().unwrap();
    write_rules_file(dir.path());
    std::fs::copy(
        repo_root().join(RULES_TEST),
        dir.path().join("rules-test.yaml"),
    )
    .unwrap();
    let (ok, out) = promtool(dir.path(), &["test", "rules", "rules-test.yaml"]);
    assert!(ok, "promtool test rules {RULES_TEST}:\n{out}");
    // Every alert is exercised by a firing case of the unit tests.
    let tests = std::fs::read_to_string(repo_root().join(RULES_TEST)).unwrap();
    for alert in alerts() {
        let name = &alert.name;
        assert!(
            tests.contains(&format!(
                "alertname: {name}\n        exp_alerts:\n          - "
            )),
            "{RULES_TEST} never expects {name} to fire"
        );
    }
}

#[test]
fn every_alert_has_a_severity_a_summary_and_a_runbook_section() {
    let docs = std::fs::read_to_string(repo_root().join(DOCS)).unwrap();
    let all = alerts();
    assert!(all.len() >= 4, "{RULES}: {} alerts", all.len());
    for want in [
        "AcoWorkerErrors",
        "AcoNodeFactsStale",
        "AcoReporterBehind",
        "AcoColonyUnreachable",
    ] {
        assert!(all.iter().any(|a| a.name == want), "{RULES} has no {want}");
    }
    for alert in all {
        let name = &alert.name;
        let severity = alert
            .labels
            .get("severity")
            .map(String::as_str)
            .unwrap_or_default();
        assert!(
            ["critical", "warning", "info"].contains(&severity),
            "{name}: severity {severity:?}"
        );
        for key in ["summary", "description", "runbook"] {
            assert!(
                alert
                    .annotations
                    .get(key)
                    .is_some_and(|s| !s.trim().is_empty()),
                "{name}: no {key} annotation"
            );
        }
        let anchor = format!("{DOCS}#{}", name.to_lowercase());
        assert_eq!(
            alert.annotations.get("runbook"),
            Some(&anchor),
            "{name}: runbook"
        );
        assert!(
            docs.contains(&format!("\n### {name}\n")),
            "{DOCS} has no section \"### {name}\""
        );
    }
}

// ---------------------------------------------------------------------------------------------
// dashboard

/// A Grafana dashboard as exported for import, as much as the tests read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Dashboard {
    uid: Option<String>,
    schema_version: Option<u64>,
    title: Option<String>,
    /// Absent (or null) in an importable dashboard.
    id: Option<Value>,
    #[serde(rename = "__inputs", default)]
    inputs: Vec<DashboardInput>,
    templating: Templating,
    #[serde(default)]
    panels: Vec<Panel>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DashboardInput {
    #[serde(rename = "type")]
    kind: String,
    plugin_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Templating {
    list: Vec<Variable>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Variable {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    /// A string or an object, by variable type.
    query: Option<Value>,
    all_value: Option<String>,
    datasource: Option<DataSourceRef>,
    definition: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct DataSourceRef {
    uid: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Panel {
    id: Option<u64>,
    title: Option<String>,
    grid_pos: Option<GridPos>,
    datasource: Option<DataSourceRef>,
    targets: Option<Vec<Target>>,
    /// A row's panels.
    #[serde(default)]
    panels: Vec<Panel>,
}

#[derive(Debug, Clone, Deserialize)]
struct GridPos {
    w: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Target {
    ref_id: Option<String>,
    expr: Option<String>,
    datasource: Option<DataSourceRef>,
}

fn uid_of(d: &Option<DataSourceRef>) -> Option<&str> {
    d.as_ref()?.uid.as_deref()
}

fn dashboard() -> Dashboard {
    let text = std::fs::read_to_string(repo_root().join(DASHBOARD)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{DASHBOARD}: {e}"))
}

/// Every panel that queries, rows' nested panels included.
fn query_panels(dashboard: &Dashboard) -> Vec<Panel> {
    fn walk(panels: &[Panel], out: &mut Vec<Panel>) {
        for p in panels {
            walk(&p.panels, out);
            if p.targets.is_some() {
                out.push(p.clone());
            }
        }
    }
    let mut out = Vec::new();
    walk(&dashboard.panels, &mut out);
    out
}

/// (panel title, refId, expr) of every query of the dashboard.
fn panel_queries(dashboard: &Dashboard) -> Vec<(String, String, String)> {
    query_panels(dashboard)
        .into_iter()
        .flat_map(|p| {
            let title = p.title.unwrap_or_else(|| "(untitled)".into());
            p.targets.unwrap_or_default().into_iter().map(move |t| {
                (
                    title.clone(),
                    t.ref_id.unwrap_or_else(|| "?".into()),
                    t.expr.unwrap_or_default(),
                )
            })
        })
        .collect()
}

/// The query Grafana would send with every variable on "All" (`.*`): PromQL.
fn substitute(expr: &str, dashboard: &Dashboard) -> String {
    let mut out = expr
        .replace("$__rate_interval", "1m")
        .replace("$__interval", "1m")
        .replace("$__range", "1h");
    for var in &dashboard.templating.list {
        if var.kind == "query" {
            let name = &var.name;
            out = out
                .replace(&format!("${{{name}}}"), ".*")
                .replace(&format!("${name}"), ".*");
        }
    }
    out
}

/// The series selector of a `label_values(<selector>, <label>)` variable query.
fn variable_selector(query: &str) -> Option<String> {
    let inner = query
        .trim()
        .strip_prefix("label_values(")?
        .strip_suffix(')')?;
    let (selector, label) = inner.rsplit_once(',')?;
    (!label.trim().is_empty()).then(|| selector.trim().to_owned())
}

#[test]
fn dashboard_is_importable_with_datasource_cluster_and_tenant_variables() {
    let d = dashboard();
    assert!(
        d.uid
            .as_deref()
            .is_some_and(|u| !u.is_empty() && u.len() <= 40),
        "uid: {:?}",
        d.uid
    );
    assert!(
        d.schema_version.is_some_and(|v| v >= 30),
        "schemaVersion: {:?}",
        d.schema_version
    );
    assert!(
        d.title.is_some() && d.id.is_none(),
        "an importable dashboard has a title and no id"
    );
    assert!(
        d.inputs
            .iter()
            .any(|i| i.kind == "datasource" && i.plugin_id.as_deref() == Some("prometheus")),
        "{:?}",
        d.inputs
    );
    let var = |name: &str| {
        d.templating
            .list
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("no variable {name}"))
    };
    assert_eq!(var("datasource").kind, "datasource");
    assert_eq!(var("datasource").query, Some(json!("prometheus")));
    for name in ["cluster", "tenant"] {
        let v = var(name);
        assert_eq!(v.kind, "query", "{name}");
        assert_eq!(
            v.all_value.as_deref(),
            Some(".*"),
            "{name}: All must match series without the label"
        );
        assert_eq!(uid_of(&v.datasource), Some("${datasource}"), "{name}");
        assert!(
            variable_selector(v.definition.as_deref().unwrap_or_default()).is_some(),
            "{name}: {:?}",
            v.definition
        );
    }
    let panels = query_panels(&d);
    assert!(panels.len() >= 10, "{} panels", panels.len());
    let mut ids = std::collections::BTreeSet::new();
    for p in &d.panels {
        let id = p.id.expect("panel id");
        assert!(ids.insert(id), "duplicate panel id {id}");
        assert!(
            p.grid_pos.as_ref().is_some_and(|g| g.w.is_some()),
            "{:?}: no gridPos",
            p.title
        );
    }
    for p in &panels {
        let title = p.title.as_deref().expect("a panel title");
        assert_eq!(uid_of(&p.datasource), Some("${datasource}"), "{title}");
        let targets = p.targets.as_deref().unwrap_or_default();
        assert!(!targets.is_empty(), "{title}: no targets");
        for t in targets {
            assert_eq!(uid_of(&t.datasource), Some("${datasource}"), "{title}");
            let expr = t.expr.as_deref().unwrap_or_default();
            assert!(!expr.trim().is_empty(), "{title}: empty expr");
            let q = substitute(expr, &d);
            assert!(!q.contains('$'), "{title}: an unknown variable left in {q}");
            assert!(
                expr.contains("cluster=~\"$cluster\""),
                "{title}: {expr} does not filter by $cluster"
            );
        }
    }
    // Shadow mode: savings, agreement and latency-critical pods on hot nodes, per tenant.
    let shadow: Vec<String> = panel_queries(&d)
        .into_iter()
        .filter(|(_, _, e)| e.contains("aco_shadow_"))
        .map(|(_, _, e)| e)
        .collect();
    for metric in [
        "aco_shadow_chosen_cost_dollars_per_hour_total",
        "aco_shadow_colony_cost_dollars_per_hour_total",
        "aco_shadow_agreements_total",
        "aco_shadow_pods_total",
        "aco_shadow_latency_critical_on_hot_nodes_total",
    ] {
        assert!(
            shadow
                .iter()
                .any(|e| e.contains(metric) && e.contains("tenant=~\"$tenant\"")),
            "no panel reads {metric} per $tenant"
        );
    }
    assert!(
        query_panels(&d)
            .iter()
            .any(|p| p.title.as_deref() == Some("Shadow savings")),
        "no \"Shadow savings\" panel"
    );
}

// ---------------------------------------------------------------------------------------------
// end to end: every panel has data from a real Prometheus

#[cfg(feature = "e2e")]
mod e2e {
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    use serde_json::{json, Value};

    use super::*;
    use aco_testkit::api::{WorkerApi, WorkerHttp};
    use aco_testkit::kube::fixtures::*;
    use aco_testkit::kube::reporter::Reporter;
    use aco_testkit::kube::{wait_for, ControlPlane, SchedulerConfig};
    use aco_testkit::nodes::name_of;
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
            let selector =
                variable_selector(var.definition.as_deref().expect("a definition")).unwrap();
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
            .map(|t| (t.labels["job"].as_str(), t.health.as_str()))
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
}
