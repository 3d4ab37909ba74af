//! GPU rule: a pod that requests a GPU resource needs a node that has a GPU-type label, offers
//! that resource at all, and — when the pod names allowed models — carries one of them.
//! (Whether enough GPUs are *free* is the resources rule's job: that one preemption can fix.)

use super::{RejectCode, Rejection};
use crate::config::NodeKeys;
use crate::demand::PodDemand;
use crate::node_state::NodeState;

pub(super) fn check(pod: &PodDemand, node: &NodeState, keys: &NodeKeys) -> Result<(), Rejection> {
    if !pod.wants_gpu() {
        return Ok(());
    }
    let Some(model) = node.gpu_model() else {
        return Err(Rejection::unresolvable(
            RejectCode::NoGpu,
            format!(
                "pod requests a GPU but node has no GPU-type label ({})",
                keys.gpu_type_labels.join(", ")
            ),
        ));
    };
    if let Some(allocatable) = &node.allocatable {
        for (resource, _) in &pod.gpus {
            if allocatable.get(resource) <= 0 {
                return Err(Rejection::unresolvable(
                    RejectCode::NoGpu,
                    format!("pod requests {resource} but node ({model}) offers none"),
                ));
            }
        }
    }
    if let Some(allowed) = &pod.allowed_gpu_models {
        if !allowed.iter().any(|m| m.eq_ignore_ascii_case(model)) {
            return Err(Rejection::unresolvable(
                RejectCode::GpuModel,
                format!(
                    "GPU model {model} is not among the allowed models {}",
                    allowed.join("|")
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

    const GPU_POD: &str = r#"{"metadata":{"annotations":{"scheduling.aco/gpu-models":"V100M16|V100M32"}},
        "spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}"#;

    fn gpu_node(label: &str, model: &str, gpus: &str) -> NodeState<'static> {
        node(&format!(
            r#"{{"metadata":{{"name":"g","labels":{{"{label}":"{model}"}}}},"status":{{"allocatable":{{"cpu":"8","nvidia.com/gpu":"{gpus}"}}}}}}"#
        ))
    }

    #[test]
    fn allowed_model_passes_under_any_configured_label_case_insensitively() {
        let c = Config::default();
        assert_eq!(
            check(
                &pod(GPU_POD),
                &gpu_node("aco/gpu-type", "V100M16", "2"),
                &c.node_keys
            ),
            Ok(())
        );
        assert_eq!(
            check(
                &pod(GPU_POD),
                &gpu_node("nvidia.com/gpu.product", "v100m32", "2"),
                &c.node_keys
            ),
            Ok(())
        );
        assert_eq!(
            check(
                &pod(GPU_POD),
                &gpu_node("alibabacloud.com/gpu-card-model", "V100M32", "2"),
                &c.node_keys
            ),
            Ok(())
        );
    }

    #[test]
    fn wrong_model_missing_label_and_missing_resource_are_unresolvable() {
        let c = Config::default();
        let r = check(
            &pod(GPU_POD),
            &gpu_node("aco/gpu-type", "T4", "2"),
            &c.node_keys,
        )
        .unwrap_err();
        assert_eq!((r.code, r.unresolvable), (RejectCode::GpuModel, true));
        assert!(r.reason.contains("T4") && r.reason.contains("V100M16|V100M32"));
        let r = check(
            &pod(GPU_POD),
            &gpu_node("unrelated", "T4", "2"),
            &c.node_keys,
        )
        .unwrap_err();
        assert_eq!(r.code, RejectCode::NoGpu);
        let r = check(
            &pod(GPU_POD),
            &gpu_node("aco/gpu-type", "V100M16", "0"),
            &c.node_keys,
        )
        .unwrap_err();
        assert_eq!(r.code, RejectCode::NoGpu);
    }

    #[test]
    fn pods_without_gpu_requests_ignore_the_rule() {
        let p = pod(r#"{"metadata":{"annotations":{"scheduling.aco/gpu-models":"A10"}}}"#);
        assert_eq!(
            check(
                &p,
                &gpu_node("aco/gpu-type", "T4", "1"),
                &Config::default().node_keys
            ),
            Ok(())
        );
    }
}
