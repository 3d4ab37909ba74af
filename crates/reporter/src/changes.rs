//! What to push: only nodes whose facts changed since the last push the Worker acknowledged,
//! every node on a periodic full refresh (so the Worker's measurements never age past its
//! `FACTS_TTL_MS`), and the names of nodes that left the cluster.

use std::collections::{BTreeMap, BTreeSet};

use aco_core::api::nodes::{NodeReport, NodesBatch};
use aco_core::k8s::RawResourceList;
use aco_core::names::NodeName;

/// The part of a report that is compared: everything but the observation time.
#[derive(Debug, Clone, PartialEq)]
struct Fingerprint {
    labels: Option<BTreeMap<String, String>>,
    allocatable: Option<RawResourceList>,
    requested: Option<RawResourceList>,
    latency_us: Option<u64>,
    newest_sample_ms: Option<u64>,
    gpu_free_milli: Option<Vec<u32>>,
}

impl Fingerprint {
    fn of(r: &NodeReport) -> Self {
        Fingerprint {
            labels: r.labels.clone(),
            allocatable: r.allocatable.clone(),
            requested: r.requested.clone(),
            latency_us: r.latency_us.map(f64::to_bits),
            newest_sample_ms: r.utilisation.iter().map(|s| s.at_ms).max(),
            gpu_free_milli: r.gpu_free_milli.clone(),
        }
    }
}

#[derive(Debug, Default)]
pub struct Acknowledged {
    by_node: BTreeMap<NodeName, Fingerprint>,
    last_full_ms: Option<u64>,
}

/// A push to make: the batch, and whether it is a full refresh.
#[derive(Debug, Clone, PartialEq)]
pub struct Push {
    pub batch: NodesBatch,
    pub full: bool,
}

impl Acknowledged {
    /// The push owed for the current `reports`, or `None` when nothing changed.
    pub fn diff(
        &self,
        reports: Vec<NodeReport>,
        now_ms: u64,
        full_refresh_ms: u64,
    ) -> Option<Push> {
        let full = self
            .last_full_ms
            .is_none_or(|t| now_ms.saturating_sub(t) >= full_refresh_ms);
        let present: BTreeSet<&str> = reports.iter().map(|r| r.name.as_str()).collect();
        let deleted: Vec<NodeName> = self
            .by_node
            .keys()
            .filter(|n| !present.contains(n.as_str()))
            .cloned()
            .collect();
        let nodes: Vec<NodeReport> = reports
            .into_iter()
            .filter(|r| full || self.by_node.get(&r.name) != Some(&Fingerprint::of(r)))
            .collect();
        (full || !nodes.is_empty() || !deleted.is_empty()).then_some(Push {
            batch: NodesBatch {
                nodes,
                deleted,
                reclaimed: Vec::new(),
            },
            full,
        })
    }

    /// The Worker stored `push`.
    pub fn acknowledge(&mut self, push: &Push, now_ms: u64) {
        for r in &push.batch.nodes {
            self.by_node.insert(r.name.clone(), Fingerprint::of(r));
        }
        for name in &push.batch.deleted {
            self.by_node.remove(name);
        }
        if push.full {
            self.last_full_ms = Some(now_ms);
        }
    }

    pub fn known_nodes(&self) -> usize {
        self.by_node.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aco_core::api::nodes::UtilisationSample;
    use aco_core::k8s::QuantityText;

    const FULL: u64 = 120_000;

    fn report(name: &str, cpu: &str, at: u64) -> NodeReport {
        NodeReport {
            name: NodeName::parse(name).unwrap(),
            labels: Some(BTreeMap::new()),
            allocatable: Some(BTreeMap::from([("cpu".into(), QuantityText("8".into()))])),
            requested: Some(BTreeMap::from([("cpu".into(), QuantityText(cpu.into()))])),
            latency_us: None,
            observed_at_ms: Some(at),
            utilisation: vec![],
            gpu_free_milli: None,
        }
    }

    #[test]
    fn first_push_is_full_then_only_changes() {
        let mut acked = Acknowledged::default();
        let push = acked
            .diff(vec![report("a", "1", 0), report("b", "1", 0)], 0, FULL)
            .unwrap();
        assert!(push.full);
        assert_eq!(push.batch.nodes.len(), 2);
        acked.acknowledge(&push, 0);

        // Same facts, later observation time: nothing to send.
        assert_eq!(
            acked.diff(
                vec![report("a", "1", 15_000), report("b", "1", 15_000)],
                15_000,
                FULL
            ),
            None
        );
        // b's requests changed.
        let push = acked
            .diff(
                vec![report("a", "1", 30_000), report("b", "2", 30_000)],
                30_000,
                FULL,
            )
            .unwrap();
        assert_eq!(
            push.batch
                .nodes
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>(),
            ["b"]
        );
        assert!(!push.full);
    }

    #[test]
    fn an_unacknowledged_push_is_owed_again() {
        let mut acked = Acknowledged::default();
        acked.acknowledge(&acked.diff(vec![report("a", "1", 0)], 0, FULL).unwrap(), 0);
        let first = acked
            .diff(vec![report("a", "2", 15_000)], 15_000, FULL)
            .unwrap();
        // (the Worker was down: not acknowledged)
        let again = acked
            .diff(vec![report("a", "2", 30_000)], 30_000, FULL)
            .unwrap();
        assert_eq!(
            first.batch.nodes[0].requested,
            again.batch.nodes[0].requested
        );
    }

    #[test]
    fn a_new_utilisation_sample_is_a_change() {
        let mut acked = Acknowledged::default();
        let mut r = report("a", "1", 0);
        r.utilisation = vec![UtilisationSample {
            at_ms: 100,
            value: 0.5,
        }];
        acked.acknowledge(&acked.diff(vec![r.clone()], 0, FULL).unwrap(), 0);
        assert_eq!(acked.diff(vec![r.clone()], 1_000, FULL), None);
        r.utilisation = vec![UtilisationSample {
            at_ms: 15_100,
            value: 0.5,
        }];
        assert!(acked.diff(vec![r], 16_000, FULL).is_some());
    }

    #[test]
    fn deleted_nodes_are_reported_until_acknowledged_and_full_refresh_resends_all() {
        let mut acked = Acknowledged::default();
        acked.acknowledge(
            &acked
                .diff(vec![report("a", "1", 0), report("b", "1", 0)], 0, FULL)
                .unwrap(),
            0,
        );
        let push = acked
            .diff(vec![report("a", "1", 5_000)], 5_000, FULL)
            .unwrap();
        assert_eq!(push.batch.deleted, ["b"]);
        assert!(push.batch.nodes.is_empty());
        acked.acknowledge(&push, 5_000);
        assert_eq!(acked.known_nodes(), 1);
        assert_eq!(acked.diff(vec![report("a", "1", 6_000)], 6_000, FULL), None);
        let refresh = acked
            .diff(vec![report("a", "1", FULL)], FULL, FULL)
            .unwrap();
        assert!(refresh.full);
        assert_eq!(refresh.batch.nodes.len(), 1);
    }
}
