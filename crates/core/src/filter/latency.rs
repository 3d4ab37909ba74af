//! Network-latency rule: a pod with a latency target (µs) fits only nodes whose latency is known
//! and within it. Pods without a target are unaffected. Latency cannot be fixed by preemption.

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

    #[test]
    fn pods_without_target_ignore_latency() {
        assert_eq!(
            check(&pod("{}"), &node(r#"{"metadata":{"name":"n"}}"#)),
            Ok(())
        );
    }
}
