//! A churned segment as the Kubernetes objects a real kube-scheduler schedules: the saturation
//! replay's nodes and pods (`crate::saturate::kube_objects`: the simulator's labels, prices,
//! allocatable and device annotations) with the engine's limit of 110 pods per node, each pod
//! with its arrival and its departure in compressed trace time. A pod that leaves has
//! `restartPolicy: Never`; the harness stamps [`END_AT`] on it when it creates it (its departure
//! as a wall-clock time), and the kwok Stage that ends pods completes it (phase Succeeded) then:
//! at its departure whenever it was bound, as the engine has it leave.

use serde_json::{json, Value};

use super::Segment;
use crate::cluster::SimNode;
use crate::saturate::kube_objects::{self as ko};

/// Pod annotation: when kwok completes the pod (RFC 3339), stamped at its creation.
pub const END_AT: &str = "aco-churn/end-at";

/// The engine's pod limit per node (`NodeAlloc::fits`), kube-scheduler's default too.
pub const PODS_PER_NODE: u32 = 110;

/// One pod of the segment: its object and when to create it.
pub struct ChurnPod {
    pub object: Value,
    /// Wall seconds after the first arrival.
    pub at_s: f64,
    /// Wall seconds after the first arrival it leaves (its trace departure), if it does.
    pub end_s: Option<f64>,
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
                if p.trace.deletion_s.is_some() {
                    // It runs to its end, as a batch pod does.
                    object["spec"]["restartPolicy"] = json!("Never");
                }
                ChurnPod {
                    object,
                    at_s: (p.arrival_s() - start) as f64 / compression,
                    end_s: p
                        .trace
                        .deletion_s
                        .map(|d| d.saturating_sub(start) as f64 / compression),
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
    fn the_segments_pods_arrive_and_leave_at_their_compressed_trace_times() {
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
        let segment = Segment::load(super::super::SegmentSpec {
            nodes_csv: data.join("openb-sample/nodes.csv"),
            pods_csv: data.join("openb-sample/pods.csv"),
            prices_dir: data.join("prices"),
            seed: 1,
            pods: 40,
            report_interval_s: 60,
            node_metrics: false,
        })
        .unwrap();
        let nodes = segment.kube_nodes();
        assert_eq!(nodes.len(), segment.world.nodes.len());
        assert!(nodes
            .iter()
            .all(|n| n["status"]["allocatable"]["pods"] == "110"));
        let pods = segment.kube_pods("trace", "aco-scheduler", 1000.0);
        assert_eq!(pods.len(), 40);
        assert_eq!(pods[0].at_s, 0.0);
        assert!(pods.windows(2).all(|w| w[0].at_s <= w[1].at_s));
        for (p, sim) in pods.iter().zip(segment.pods()) {
            assert_eq!(p.trace_name, sim.trace.name);
            let d = sim.trace.deletion_s.expect("the sample's pods all end");
            assert!(p.object["metadata"]["annotations"].get(END_AT).is_none());
            assert_eq!(p.object["spec"]["restartPolicy"], "Never");
            let end = p.end_s.unwrap();
            assert!((end - p.at_s - (d - sim.trace.creation_s) as f64 / 1000.0).abs() < 1e-6);
        }
        assert!(
            segment.arrival_span_s() as f64 / 1000.0 - pods[39].at_s < 1e-9,
            "the last pod arrives at the span's end"
        );
    }
}
