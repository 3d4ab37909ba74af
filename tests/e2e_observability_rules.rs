//! The shipped alert rules (`k8s/observability/prometheus-rules.yaml`), checked against the real
//! tools: the PrometheusRule's `spec.groups`, written out as a plain rules file, pass
//! `promtool check rules`, and its alerts pass their unit tests (`rules-test.yaml`,
//! `promtool test rules`). Every alert has a severity, a summary, a description and a runbook
//! anchor that `docs/observability.md` has. No cluster: these run in `cargo test` (scripts/test).

use aco_testkit::observability::*;
use aco_testkit::repo_root;

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
