//! Network-latency rule: a pod with a latency target (µs) fits only nodes whose latency is known
//! and within it. Pods without a target are unaffected. Latency cannot be fixed by preemption.
//!
//! The one-verb install asks kube-scheduler to apply the same rule as required node affinity
//! (`Lt` on the latency label, written at admission by the reporter): [`affinity_lt_bound`] is
//! that requirement's value, and the tests below hold the two to the same nodes.

use super::{RejectCode, Rejection};
use crate::demand::PodDemand;
use crate::node_state::NodeState;

pub(super) fn check(pod: &PodDemand, node: &NodeState) -> Result<(), Rejection> {
    let Some(target) = pod.latency_target_us else {
        return Ok(());
    };
    match node.latency_us {
        None => Err(Rejection::unresolvable(
            RejectCode::LatencyUnknown,
            format!(
                "node latency unknown (no fresh fact, no latency label); pod requires ≤ {target}µs"
            ),
        )),
        Some(latency) if latency > target => Err(Rejection::unresolvable(
            RejectCode::LatencyExceeded,
            format!("network latency {latency}µs exceeds the pod's target {target}µs"),
        )),
        Some(_) => Ok(()),
    }
}

/// The value of a NodeAffinity `Lt` requirement on a latency label that admits exactly the
/// nodes [`check`] admits for a target of `target_us` (> 0, as [`PodDemand`] reads it). A
/// latency label is a whole number of µs (`node_labels::latency_label_value`, as kube-scheduler
/// reads it for `Lt`), so `L ≤ target` ⟺ `L ≤ ⌊target⌋` ⟺ `L < ⌊target⌋ + 1`: kube-scheduler's
/// `Lt` is strict and compares integers, this rule is inclusive and the target may have a
/// fraction. A target beyond the largest label value (2^63 − 1 µs) is bounded by it, where only
/// a node labelled exactly 2^63 − 1 would differ.
pub fn affinity_lt_bound(target_us: f64) -> i64 {
    let whole = target_us.floor().max(0.0);
    if whole >= i64::MAX as f64 {
        i64::MAX
    } else {
        whole as i64 + 1
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    const POD: &str = r#"{"metadata":{"annotations":{"scheduling.aco/latency-target-us":"100"}}}"#;

    #[test]
    fn within_target_passes_and_the_boundary_is_inclusive() {
        for lat in ["40", "100"] {
            let n = node(&format!(
                r#"{{"metadata":{{"name":"n","labels":{{"aco/latency-us":"{lat}"}}}}}}"#
            ));
            assert_eq!(check(&pod(POD), &n), Ok(()));
        }
    }

    #[test]
    fn above_target_or_unknown_is_unresolvable() {
        let n = node(r#"{"metadata":{"name":"n","labels":{"nodeLatencyUs":"101"}}}"#);
        let r = check(&pod(POD), &n).unwrap_err();
        assert_eq!(
            (r.code, r.unresolvable),
            (RejectCode::LatencyExceeded, true)
        );
        let r = check(&pod(POD), &node(r#"{"metadata":{"name":"n"}}"#)).unwrap_err();
        assert_eq!(r.code, RejectCode::LatencyUnknown);
    }

    #[test]
    fn fresh_fact_overrides_label() {
        let n = node_with_facts(
            r#"{"metadata":{"name":"n","labels":{"aco/latency-us":"500"}}}"#,
            r#"{"name":"n","latencyUs":50}"#,
        );
        assert_eq!(check(&pod(POD), &n), Ok(()));
    }

    /// The rule and kube-scheduler's `Lt` on the label agree on every node, at the boundary
    /// (a node at exactly the target passes, one µs above does not) and with fractional targets.
    #[test]
    fn the_affinity_bound_admits_exactly_the_nodes_the_rule_admits() {
        for target in [
            "1", "0.5", "99.999", "100", "100.5", "101", "250", "1000000",
        ] {
            let p = pod(&format!(
                r#"{{"metadata":{{"annotations":{{"scheduling.aco/latency-target-us":"{target}"}}}}}}"#
            ));
            let bound = affinity_lt_bound(p.latency_target_us.unwrap());
            for latency in (0..=300).chain([999_999, 1_000_000, 1_000_001]) {
                let n = node(&format!(
                    r#"{{"metadata":{{"name":"n","labels":{{"aco/latency-us":"{latency}"}}}}}}"#
                ));
                assert_eq!(
                    check(&p, &n).is_ok(),
                    latency < bound,
                    "target {target}, node at {latency} µs, Lt {bound}"
                );
            }
        }
        assert_eq!(affinity_lt_bound(200.0), 201);
        assert_eq!(affinity_lt_bound(200.7), 201);
        assert_eq!(affinity_lt_bound(1e300), i64::MAX);
    }

    #[test]
    fn a_latency_label_kube_scheduler_cannot_compare_meets_no_target() {
        for value in ["50.5", "5e1", " 50"] {
            let n = node(&format!(
                r#"{{"metadata":{{"name":"n","labels":{{"aco/latency-us":"{value}"}}}}}}"#
            ));
            let r = check(&pod(POD), &n).unwrap_err();
            assert_eq!(r.code, RejectCode::LatencyUnknown, "{value:?}");
        }
    }

    #[test]
    fn pods_without_target_ignore_latency() {
        assert_eq!(
            check(&pod("{}"), &node(r#"{"metadata":{"name":"n"}}"#)),
            Ok(())
        );
    }
}
