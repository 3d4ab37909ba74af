//! Hard constraints, one rule per file (as Kubernetes' `noderesources/` does). A rule either
//! passes a node or rejects it with a human-readable reason and a metric code.
//!
//! Rejections that preemption cannot fix (no GPU, wrong model, latency too high) are
//! *unresolvable*: kube-scheduler will not evict pods to make room on those nodes.

mod gpu;
mod latency;
mod resources;

pub use latency::affinity_lt_bound;

use crate::config::NodeKeys;
use crate::demand::PodDemand;
use crate::node_state::NodeState;

/// Why a node was rejected, as a low-cardinality metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RejectCode {
    NoFacts,
    NoGpu,
    GpuModel,
    LatencyUnknown,
    LatencyExceeded,
    InsufficientCpu,
    InsufficientMemory,
    InsufficientGpu,
    PodInvalid,
}

impl RejectCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoFacts => "no_facts",
            Self::NoGpu => "no_gpu",
            Self::GpuModel => "gpu_model",
            Self::LatencyUnknown => "latency_unknown",
            Self::LatencyExceeded => "latency_exceeded",
            Self::InsufficientCpu => "insufficient_cpu",
            Self::InsufficientMemory => "insufficient_memory",
            Self::InsufficientGpu => "insufficient_gpu",
            Self::PodInvalid => "pod_invalid",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub code: RejectCode,
    pub reason: String,
    /// True when evicting pods cannot make the node fit (→ `FailedAndUnresolvableNodes`).
    pub unresolvable: bool,
}

impl Rejection {
    fn resolvable(code: RejectCode, reason: String) -> Self {
        Self {
            code,
            reason,
            unresolvable: false,
        }
    }
    fn unresolvable(code: RejectCode, reason: String) -> Self {
        Self {
            code,
            reason,
            unresolvable: true,
        }
    }
}

/// Runs every rule on one node; the first rejection wins. Unresolvable rules run first so that
/// a node that cannot ever fit is reported as such even when it is also full.
pub fn check_node(pod: &PodDemand, node: &NodeState, keys: &NodeKeys) -> Result<(), Rejection> {
    check_node_for(pod, &WantedResources::of(pod, keys), node, keys)
}

/// The checked resources a pod requests (see `resources.rs`), read once for all the nodes it is
/// judged against: a verb or a decision judges every candidate of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedResources<'c>(Vec<(&'c str, i64)>);

impl<'c> WantedResources<'c> {
    pub fn of(pod: &PodDemand, keys: &'c NodeKeys) -> Self {
        Self(resources::wanted(pod, keys))
    }
}

/// [`check_node`], with `wanted` read of `pod` by [`WantedResources::of`].
pub fn check_node_for(
    pod: &PodDemand,
    wanted: &WantedResources,
    node: &NodeState,
    keys: &NodeKeys,
) -> Result<(), Rejection> {
    if node.unknown {
        return Err(Rejection::resolvable(
            RejectCode::NoFacts,
            "no node facts reported for this node (PUT /v1/nodes); cannot check constraints".into(),
        ));
    }
    gpu::check(pod, node, keys)?;
    latency::check(pod, node)?;
    resources::check(&wanted.0, node)
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::api::nodes::NodeReport;
    use crate::config::Config;
    use crate::demand::PodDemand;
    use crate::facts::NodeFacts;
    use crate::k8s::{NodeView, PodView};
    use crate::node_state::NodeState;

    pub fn pod(json: &str) -> PodDemand {
        let pod: PodView = serde_json::from_str(json).unwrap();
        PodDemand::from_pod(&pod, &Default::default(), &Default::default()).unwrap()
    }

    pub fn node(json: &str) -> NodeState<'static> {
        let view: NodeView = serde_json::from_str(json).unwrap();
        NodeState::assemble(
            &view.metadata.name.clone(),
            Some(&view),
            None,
            0,
            &Config::default(),
            "n",
        )
        .unwrap()
        .into_owned()
    }

    pub fn node_with_facts(json: &str, facts: &str) -> NodeState<'static> {
        let view: NodeView = serde_json::from_str(json).unwrap();
        let report: NodeReport = serde_json::from_str(facts).unwrap();
        let mut f = NodeFacts::default();
        f.apply(&report, 1_000, &Default::default());
        NodeState::assemble(
            &view.metadata.name.clone(),
            Some(&view),
            Some(&f),
            1_000,
            &Config::default(),
            "n",
        )
        .unwrap()
        .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::config::Config;

    #[test]
    fn unresolvable_rules_win_over_resource_shortfalls() {
        let p = pod(
            r#"{"spec":{"containers":[{"resources":{"requests":{"cpu":"64","nvidia.com/gpu":"1"}}}]}}"#,
        );
        let n = node(r#"{"metadata":{"name":"cpu-only"},"status":{"allocatable":{"cpu":"4"}}}"#);
        let r = check_node(&p, &n, &Config::default().node_keys).unwrap_err();
        assert_eq!(r.code, RejectCode::NoGpu);
        assert!(r.unresolvable);
    }

    #[test]
    fn a_name_without_facts_is_rejected_with_a_reason() {
        let p = pod(r#"{}"#);
        let n = NodeState::assemble("ghost", None, None, 0, &Config::default(), "n").unwrap();
        let r = check_node(&p, &n, &Config::default().node_keys).unwrap_err();
        assert_eq!(r.code, RejectCode::NoFacts);
        assert!(r.reason.contains("no node facts"));
    }

    #[test]
    fn plain_pod_passes_a_plain_node() {
        let p = pod(
            r#"{"spec":{"containers":[{"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}"#,
        );
        let n = node(
            r#"{"metadata":{"name":"n"},"status":{"allocatable":{"cpu":"4","memory":"8Gi"}}}"#,
        );
        assert_eq!(check_node(&p, &n, &Config::default().node_keys), Ok(()));
    }
}
