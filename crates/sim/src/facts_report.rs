//! What the simulated in-cluster reporter sends (`PUT /v1/nodes`, camelCase JSON), and its
//! conversion to the core's `NodeReport`.

use std::collections::BTreeMap;

use aco_core::facts::{NodeReport, UtilisationSample};
use aco_core::k8s::QuantityText;
use serde::Serialize;

/// One node's facts as `PUT /v1/nodes` carries them (camelCase JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FactReport {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocatable: Option<BTreeMap<String, String>>,
    pub requested: BTreeMap<String, String>,
    pub latency_us: f64,
    pub observed_at_ms: u64,
    pub utilisation: Vec<Sample>,
    /// Free milli-GPU per physical GPU (GPU nodes; what the reporter sends from the GPU-share
    /// device plugin's annotations), read by η's fragmentation factor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_free_milli: Option<Vec<u32>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    pub at_ms: u64,
    pub value: f64,
}

fn raw(list: &BTreeMap<String, String>) -> BTreeMap<String, QuantityText> {
    list.iter()
        .map(|(k, v)| (k.clone(), QuantityText(v.clone())))
        .collect()
}

impl FactReport {
    pub fn to_core(&self) -> NodeReport {
        NodeReport {
            name: self.name.clone(),
            labels: self.labels.clone(),
            allocatable: self.allocatable.as_ref().map(raw),
            requested: Some(raw(&self.requested)),
            latency_us: Some(self.latency_us),
            observed_at_ms: Some(self.observed_at_ms),
            utilisation: self
                .utilisation
                .iter()
                .map(|s| UtilisationSample {
                    at_ms: s.at_ms,
                    value: s.value,
                })
                .collect(),
            gpu_free_milli: self.gpu_free_milli.clone(),
        }
    }
}

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
    pub fn samples(&self, node: usize) -> impl Iterator<Item = Sample> + '_ {
        let k = self.sample_ms.len();
        self.sample_ms
            .iter()
            .zip(&self.util[node * k..(node + 1) * k])
            .map(|(at_ms, value)| Sample {
                at_ms: *at_ms,
                value: *value,
            })
    }

    /// The wire reports of this round, one per node in cluster order.
    pub fn to_wire(&self, world: &crate::cluster::World) -> Vec<FactReport> {
        world.nodes.iter().map(|n| self.wire(n)).collect()
    }

    pub fn wire(&self, n: &crate::cluster::SimNode) -> FactReport {
        FactReport {
            name: n.name.clone(),
            labels: self.first.then(|| n.labels.clone()),
            allocatable: self.first.then(|| n.allocatable.clone()),
            requested: self.alloc[n.idx].requested(),
            latency_us: n.latency_us,
            observed_at_ms: self.observed_at_ms,
            utilisation: self.samples(n.idx).collect(),
            gpu_free_milli: self.alloc[n.idx].gpu_free_milli(),
        }
    }
}
