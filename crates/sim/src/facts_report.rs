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
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    pub at_ms: u64,
    pub value: f64,
}

fn raw(list: &BTreeMap<String, String>) -> BTreeMap<String, QuantityText> {
    list.iter().map(|(k, v)| (k.clone(), QuantityText(v.clone()))).collect()
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
            utilisation: self.utilisation.iter().map(|s| UtilisationSample { at_ms: s.at_ms, value: s.value }).collect(),
            gpu_free_milli: None,
        }
    }
}
