//! What the simulated in-cluster reporter sends (`PUT /v1/nodes`): one round of it in the
//! simulator's own terms ([`ReportBatch`]), turned into the Worker's `NodeReport`s
//! (`aco_core::api::nodes`, the shape the reporter sends too).

use aco_core::api::nodes::{NodeReport, UtilisationSample};
use aco_core::k8s::QuantityText;
use aco_core::names::NodeName;

/// One round of the simulated reporter in the simulator's own terms: the allocation of every
/// node and its utilisation samples. [`ReportBatch::to_wire`] turns it into the `PUT /v1/nodes`
/// body; the native pipeline folds it directly (`NativeScheduler::report_batch`), skipping the
/// quantity strings it would only parse back — the same facts either way (tested in `native`).
pub struct ReportBatch<'a> {
    /// The first round also carries identity (labels, allocatable).
    pub first: bool,
    pub observed_at_ms: u64,
    /// Sample times, oldest first, the same for every node.
    pub sample_ms: Vec<u64>,
    /// `util[node * sample_ms.len() + i]`: node utilisation at `sample_ms[i]`.
    pub util: Vec<f64>,
    pub alloc: &'a [crate::alloc::NodeAlloc],
}

impl ReportBatch<'_> {
    pub fn samples(&self, node: usize) -> impl Iterator<Item = UtilisationSample> + '_ {
        let k = self.sample_ms.len();
        self.sample_ms
            .iter()
            .zip(&self.util[node * k..(node + 1) * k])
            .map(|(at_ms, value)| UtilisationSample {
                at_ms: *at_ms,
                value: *value,
            })
    }

    /// The wire reports of this round, one per node in cluster order.
    pub fn to_wire(&self, world: &crate::cluster::World) -> Vec<NodeReport> {
        world.nodes.iter().map(|n| self.wire(n)).collect()
    }

    pub fn wire(&self, n: &crate::cluster::SimNode) -> NodeReport {
        NodeReport {
            name: wire_name(&n.name),
            labels: self.first.then(|| n.labels.clone()),
            allocatable: self.first.then(|| quantity_text(&n.allocatable)),
            requested: Some(quantity_text(&self.alloc[n.idx].requested())),
            latency_us: Some(n.latency_us),
            observed_at_ms: Some(self.observed_at_ms),
            utilisation: self.samples(n.idx).collect(),
            gpu_free_milli: self.alloc[n.idx].gpu_free_milli(),
        }
    }
}

/// The simulator's quantities (Kubernetes text already) as the wire carries them.
pub fn quantity_text(
    list: &std::collections::BTreeMap<String, String>,
) -> aco_core::k8s::RawResourceList {
    list.iter()
        .map(|(k, v)| (k.clone(), QuantityText(v.clone())))
        .collect()
}

/// A node's name as a report carries it. The worlds' node names are the traces' (Kubernetes
/// names, as the Worker requires of every report); one that is not is a trace the simulator
/// cannot replay against the Worker either.
pub(crate) fn wire_name(name: &str) -> NodeName {
    NodeName::parse(name).unwrap_or_else(|e| panic!("trace node: {e}"))
}
