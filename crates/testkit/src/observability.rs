//! The shipped observability files (`k8s/observability/`) as the tests read them: the
//! PrometheusRule (its alerts, written out as a plain rules file for promtool) and the Grafana
//! dashboard (its panels' queries with the variables substituted as Grafana's "All" would).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::repo_root;

pub const DASHBOARD: &str = "k8s/observability/grafana-dashboard.json";
pub const RULES: &str = "k8s/observability/prometheus-rules.yaml";
pub const RULES_TEST: &str = "k8s/observability/rules-test.yaml";
pub const DOCS: &str = "docs/observability.md";
/// The rules file name `rules-test.yaml` loads (beside it).
pub const RULES_FILE: &str = "aco-rules.yml";

// ---------------------------------------------------------------------------------------------
// alert rules

/// The Prometheus Operator's PrometheusRule, as much as the tests read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusRule {
    pub api_version: String,
    pub kind: String,
    pub spec: RuleSpec,
}

#[derive(Deserialize)]
pub struct RuleSpec {
    /// Kept as written: they become a plain rules file for promtool.
    pub groups: Vec<serde_yaml::Value>,
}

#[derive(Deserialize)]
pub struct RuleGroup {
    #[serde(default)]
    pub rules: Vec<RuleEntry>,
}

/// A recording rule (no `alert`) or an alert.
#[derive(Deserialize)]
pub struct RuleEntry {
    pub alert: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

pub struct Alert {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

pub fn prometheus_rule() -> PrometheusRule {
    let text = std::fs::read_to_string(repo_root().join(RULES)).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{RULES}: {e}"))
}

/// Writes the PrometheusRule's `spec.groups` as a plain rules file `dir/aco-rules.yml`.
pub fn write_rules_file(dir: &Path) -> PathBuf {
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
pub fn promtool(dir: &Path, args: &[&str]) -> (bool, String) {
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

pub fn alerts() -> Vec<Alert> {
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

// ---------------------------------------------------------------------------------------------
// dashboard

/// A Grafana dashboard as exported for import, as much as the tests read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dashboard {
    pub uid: Option<String>,
    pub schema_version: Option<u64>,
    pub title: Option<String>,
    /// Absent (or null) in an importable dashboard.
    pub id: Option<Value>,
    #[serde(rename = "__inputs", default)]
    pub inputs: Vec<DashboardInput>,
    pub templating: Templating,
    #[serde(default)]
    pub panels: Vec<Panel>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DashboardInput {
    #[serde(rename = "type")]
    pub kind: String,
    pub plugin_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Templating {
    pub list: Vec<Variable>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Variable {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// A string or an object, by variable type.
    pub query: Option<Value>,
    pub all_value: Option<String>,
    pub datasource: Option<DataSourceRef>,
    pub definition: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DataSourceRef {
    pub uid: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Panel {
    pub id: Option<u64>,
    pub title: Option<String>,
    pub grid_pos: Option<GridPos>,
    pub datasource: Option<DataSourceRef>,
    pub targets: Option<Vec<Target>>,
    /// A row's panels.
    #[serde(default)]
    pub panels: Vec<Panel>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GridPos {
    pub w: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    pub ref_id: Option<String>,
    pub expr: Option<String>,
    pub datasource: Option<DataSourceRef>,
}

pub fn uid_of(d: &Option<DataSourceRef>) -> Option<&str> {
    d.as_ref()?.uid.as_deref()
}

pub fn dashboard() -> Dashboard {
    let text = std::fs::read_to_string(repo_root().join(DASHBOARD)).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{DASHBOARD}: {e}"))
}

/// Every panel that queries, rows' nested panels included.
pub fn query_panels(dashboard: &Dashboard) -> Vec<Panel> {
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
pub fn panel_queries(dashboard: &Dashboard) -> Vec<(String, String, String)> {
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
pub fn substitute(expr: &str, dashboard: &Dashboard) -> String {
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
pub fn variable_selector(query: &str) -> Option<String> {
    let inner = query
        .trim()
        .strip_prefix("label_values(")?
        .strip_suffix(')')?;
    let (selector, label) = inner.rsplit_once(',')?;
    (!label.trim().is_empty()).then(|| selector.trim().to_owned())
}
