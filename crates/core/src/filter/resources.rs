//! Headroom rule: CPU, memory and GPU count requested by the pod must fit in the node's
//! allocatable minus what fresh facts say is already requested. Without facts (or with stale
//! ones) nothing is subtracted — kube-scheduler's own NodeResourcesFit has checked its view.
//! When allocatable itself is unknown the rule passes (fail open); the no-facts rule covers
//! names we know nothing about.

use super::{RejectCode, Rejection};
use crate::config::NodeKeys;
use crate::demand::PodDemand;
use crate::node_state::NodeState;

/// The checked resources (CPU, memory, then `GPU_RESOURCES`) the pod requests, with their
/// amounts (> 0), in the order the first shortfall is reported in: read once per pod, not once
/// per node judged.
pub(super) fn wanted<'a>(pod: &PodDemand, keys: &'a NodeKeys) -> Vec<(&'a str, i64)> {
    ["cpu", "memory"]
        .into_iter()
        .chain(keys.gpu_resources.iter().map(String::as_str))
        .map(|resource| (resource, pod.request.get(resource)))
        .filter(|(_, want)| *want > 0)
        .collect()
}

/// `wanted` is [`wanted`] of the pod.
pub(super) fn check(wanted: &[(&str, i64)], node: &NodeState) -> Result<(), Rejection> {
    let Some(allocatable) = &node.allocatable else {
        return Ok(());
    };
    for &(resource, want) in wanted {
        let total = allocatable.get(resource);
        let used = node.requested.as_ref().map_or(0, |r| r.get(resource));
        let free = total.saturating_sub(used);
        if want > free {
            let code = match resource {
                "cpu" => RejectCode::InsufficientCpu,
                "memory" => RejectCode::InsufficientMemory,
                _ => RejectCode::InsufficientGpu,
            };
            let unit = |v: i64| {
                if resource == "cpu" {
                    format!("{v}m")
                } else {
                    v.to_string()
                }
            };
            return Err(Rejection::resolvable(
                code,
                format!(
                    "insufficient {resource}: pod requests {}, node has {} free of {} allocatable",
                    unit(want),
                    unit(free.max(0)),
                    unit(total)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::config::Config;

    fn check(pod: &PodDemand, node: &NodeState, config: &Config) -> Result<(), Rejection> {
        super::check(&wanted(pod, &config.node_keys), node)
    }

    const NODE: &str = r#"{"metadata":{"name":"n","labels":{"aco/gpu-type":"T4"}},"status":{"allocatable":{"cpu":"4","memory":"8Gi","nvidia.com/gpu":"2"}}}"#;

    fn pod_asking(cpu: &str, mem: &str, gpu: &str) -> PodDemand {
        pod(&format!(
            r#"{{"spec":{{"containers":[{{"resources":{{"requests":{{"cpu":"{cpu}","memory":"{mem}","nvidia.com/gpu":"{gpu}"}}}}}}]}}}}"#
        ))
    }

    #[test]
    fn exact_fit_passes_one_more_fails_with_numbers_in_the_reason() {
        let c = Config::default();
        assert_eq!(check(&pod_asking("4", "8Gi", "2"), &node(NODE), &c), Ok(()));
        let r = check(&pod_asking("4001m", "1", "0"), &node(NODE), &c).unwrap_err();
        assert_eq!(
            (r.code, r.unresolvable),
            (RejectCode::InsufficientCpu, false)
        );
        assert!(
            r.reason.contains("4001m") && r.reason.contains("4000m"),
            "{}",
            r.reason
        );
        let r = check(&pod_asking("1", "9Gi", "0"), &node(NODE), &c).unwrap_err();
        assert_eq!(r.code, RejectCode::InsufficientMemory);
        let r = check(&pod_asking("1", "1Gi", "3"), &node(NODE), &c).unwrap_err();
        assert_eq!(r.code, RejectCode::InsufficientGpu);
    }

    #[test]
    fn fresh_requested_facts_are_subtracted() {
        let n = node_with_facts(
            NODE,
            r#"{"name":"n","requested":{"cpu":"3500m","nvidia.com/gpu":"2"}}"#,
        );
        let c = Config::default();
        assert_eq!(check(&pod_asking("500m", "1Gi", "0"), &n, &c), Ok(()));
        assert_eq!(
            check(&pod_asking("501m", "1Gi", "0"), &n, &c)
                .unwrap_err()
                .code,
            RejectCode::InsufficientCpu
        );
        assert_eq!(
            check(&pod_asking("1m", "1", "1"), &n, &c).unwrap_err().code,
            RejectCode::InsufficientGpu
        );
    }
}
