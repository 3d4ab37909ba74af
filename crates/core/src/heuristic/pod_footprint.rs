//! What the features of η read of the pod being scored, read once per decision rather than once
//! per candidate: the pod's counted requests (its share of a node) and its GPUs as FGD counts
//! them.

use super::{pod_gpus, PodGpus};
use crate::config::NodeKeys;
use crate::demand::PodDemand;
use crate::k8s::ResourceAmounts;
use crate::node_state::{counted_name, share};

/// The pod's side of [`super::NodeFeatures::for_pod_with`]. It borrows the node keys, not the
/// pod: a verb reads it at its first candidate and keeps it for the others.
#[derive(Debug, Clone, PartialEq)]
pub struct PodFootprint<'c> {
    /// The pod's requests (> 0) of counted resources (CPU, memory, GPUs), in the request's order.
    counted: Vec<(&'c str, i64)>,
    pub gpus: PodGpus,
}

impl<'c> PodFootprint<'c> {
    pub fn of(pod: &PodDemand, node_keys: &'c NodeKeys) -> Self {
        Self {
            counted: pod
                .request
                .iter()
                .filter(|(_, amount)| *amount > 0)
                .filter_map(|(name, amount)| Some((counted_name(name, node_keys)?, amount)))
                .collect(),
            gpus: pod_gpus(pod),
        }
    }

    /// The largest share of `allocatable` the pod would take over its counted resources.
    pub fn share_of(&self, allocatable: &ResourceAmounts) -> f64 {
        self.counted
            .iter()
            .map(|(name, amount)| share(*amount, allocatable.get(name)))
            .fold(0.0, f64::max)
    }
}
