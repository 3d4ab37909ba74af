//! A churned segment as the Kubernetes objects a real kube-scheduler schedules: the saturation
//! replay's nodes and pods (`crate::saturate::kube_objects`: the simulator's labels, prices,
//! allocatable and device annotations) with the engine's limit of 110 pods per node, and each
//! pod's trace run time, compressed, as [`RUN_FOR`]: the kwok Stage that ends pods completes it
//! (phase Succeeded) that long after it started running, as its departure.

use serde_json::{json, Value};

use super::Segment;
use crate::cluster::SimNode;
use crate::saturate::kube_objects::{self as ko};

/// Pod annotation: how long the pod runs before kwok completes it (a Go duration, e.g. `1500ms`).
pub const RUN_FOR: &str = "aco-churn/run-for";

/// The engine's pod limit per node (`NodeAlloc::fits`), kube-scheduler's default too.
pub const PODS_PER_NODE: u32 = 110;

/// One pod of the segment: its object and when to create it.
pub struct ChurnPod {
    pub object: Value,
    /// Wall seconds after the first arrival.
    pub at_s: f64,
    /// The trace's name of the pod (bindings are reported by it).
    pub trace_name: String,
}

pub fn node_object(n: &SimNode) -> Value {
    let mut v = ko::node_object(n);
    for key in ["allocatable", "capacity"] {
        v["status"][key]["pods"] = json!(PODS_PER_NODE.to_string());
    }
    v
}

/// The run time of a pod from `creation_s` to `deletion_s`, compressed `compression`-fold, as a
/// Go duration in whole milliseconds (at least 1).
pub fn run_for(creation_s: u64, deletion_s: u64, compression: f64) -> String {
    let ms = (deletion_s.saturating_sub(creation_s) as f64 * 1000.0 / compression).round();
    format!("{}ms", ms.max(1.0) as u64)
}

impl Segment {
    pub fn kube_nodes(&self) -> Vec<Value> {
        self.world.nodes.iter().map(node_object).collect()
    }

    /// The segment's pods in arrival order, trace time compressed `compression`-fold.
    pub fn kube_pods(&self, namespace: &str, scheduler: &str, compression: f64) -> Vec<ChurnPod> {
        let pods = self.pods();
        let start = pods.first().map_or(0, |p| p.arrival_s());
        pods.iter()
            .enumerate()
            .map(|(i, p)| {
                let mut object = ko::pod_object(p, i, pods.len(), namespace, scheduler);
                if let Some(d) = p.trace.deletion_s {
                    object["metadata"]["annotations"][RUN_FOR] =
                        json!(run_for(p.arrival_s(), d, compression));
                }
                ChurnPod {
                    object,
                    at_s: (p.arrival_s() - start) as f64 / compression,
                    trace_name: p.trace.name.clone(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_times_compress_to_whole_milliseconds_of_at_least_one() {
        assert_eq!(run_for(100, 40_100, 40_000.0), "1000ms");
        assert_eq!(run_for(0, 1_056, 40_000.0), "26ms");
        assert_eq!(run_for(5, 5, 40_000.0), "1ms");
        assert_eq!(run_for(9, 5, 1.0), "1ms");
    }
}
