//! The shipped Grafana dashboard (`k8s/observability/grafana-dashboard.json`) is importable: uid,
//! schemaVersion, `__inputs`, the datasource, cluster and tenant variables, every panel on
//! `${datasource}`. No cluster: this runs in `cargo test` (scripts/test); the panels' queries
//! meet a real Prometheus in `e2e_observability_panels.rs`.

use aco_testkit::observability::*;
use serde_json::json;

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
