//! A decision's explanation as plain text (`acoctl explain`, `aco-sim explain`): one line per
//! remembered candidate, best first, then the filter's rejections and the notes. Pure text from
//! [`DecisionExplanation`], the reply of `GET …/decisions/{podUid}`.

use std::fmt::Write;

use super::DecisionExplanation;

fn num(v: Option<f64>, width: usize) -> String {
    match v {
        Some(v) => format!("{v:>width$.4}"),
        None => format!("{:>width$}", "–"),
    }
}

/// The explanation as a plain-text table: one line per remembered candidate, best first, then
/// the filter's rejections and the notes.
pub fn render(e: &DecisionExplanation) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pod {} (tenant {}, {:?}): {} candidates scored, {} remembered; explored: {}",
        e.pod_uid,
        e.tenant,
        e.workload,
        e.candidate_count,
        e.candidates.len(),
        e.explored.as_deref().unwrap_or("none")
    );
    let _ = writeln!(
        out,
        "answered: {}; bound: {}",
        e.answered_node.as_deref().unwrap_or("none at 10"),
        match (&e.bound_node, e.confirmed_ms) {
            (Some(node), Some(at)) => format!("{node} (confirmed at {at} ms)"),
            _ => "not confirmed yet".to_string(),
        }
    );
    let width = e
        .candidates
        .iter()
        .map(|c| c.node.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "  {:<width$} score       τ        η   $/h = resources + strandedGpu + qosRisk + reclaim + failure + slowdown",
        "node"
    );
    for c in &e.candidates {
        let t = c.cost_per_hour;
        let _ = writeln!(
            out,
            "  {:<width$} {:>5} {} {} {} = {} + {} + {} + {} + {} + {}",
            c.node,
            c.score.map_or("–".to_string(), |s| s.to_string()),
            num(c.tau, 7),
            num(Some(c.eta), 8),
            num(c.total_per_hour, 5),
            num(t.map(|t| t.resources), 9),
            num(t.and_then(|t| t.stranded_gpu), 11),
            num(t.map(|t| t.qos_risk), 7),
            num(t.map(|t| t.reclamation_risk), 7),
            num(t.map(|t| t.failure_risk), 7),
            num(t.map(|t| t.slowdown), 8),
        );
    }
    match &e.filter_reasons {
        None => {
            let _ = writeln!(
                out,
                "filter: not seen by the isolate that scored the pod (filterReasons: null)"
            );
        }
        Some(f) => {
            let by: Vec<String> = f
                .by_reason
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            let _ = writeln!(
                out,
                "filter: {} passed, {} rejected{}",
                f.passed,
                f.rejected,
                if by.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", by.join(", "))
                }
            );
            for n in &f.nodes {
                let _ = writeln!(
                    out,
                    "  {} [{}{}] {}",
                    n.node,
                    n.code,
                    if n.unresolvable { ", unresolvable" } else { "" },
                    n.reason
                );
            }
        }
    }
    for n in &e.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony::TenantColony;
    use crate::config::Config;
    use crate::demand::WorkloadClass;
    use crate::heuristic::NodeFeatures;
    use rand::{rngs::SmallRng, SeedableRng};

    #[test]
    fn renders_every_candidate_and_the_missing_filter() {
        let node = |n: &'static str, cost: f64| NodeFeatures {
            node: n.into(),
            cost_per_hour: Some(cost),
            predicted_utilisation: Some(0.2),
            ..NodeFeatures::default()
        };
        let mut rng = SmallRng::seed_from_u64(1);
        let p = TenantColony::default().score(
            &[node("cheap", 0.4), node("dear", 3.2)],
            WorkloadClass::Batch,
            "ns/pod",
            0,
            &Config::default(),
            &mut rng,
        );
        let text = render(&p.decision.explain("uid-1", "t"));
        assert!(
            text.contains("pod uid-1 (tenant t, Batch): 2 candidates"),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with("cheap") && l.contains(" 10 ")),
            "{text}"
        );
        assert!(text.contains("filterReasons: null"), "{text}");
        assert!(
            text.contains("answered: cheap; bound: not confirmed yet"),
            "{text}"
        );
    }
}
