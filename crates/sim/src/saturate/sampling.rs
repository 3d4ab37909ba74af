//! Which feasible nodes kube-scheduler shows a pod's scorers (the extender, score plugins).
//!
//! kube-scheduler v1.37 (`pkg/scheduler/schedule_one.go`, `findNodesThatPassFilters` and
//! `numFeasibleNodesToFind`) does not filter every node: it walks the node list from an index
//! that advances between pods and stops once it has found `numFeasibleNodesToFind` feasible
//! nodes — all of them below 100 nodes, else `percentageOfNodesToScore` % of the cluster (when
//! unset, `50 − N/125` %, at least 5 %), and never fewer than 100. The next pod starts where this
//! one stopped (`nextStartNodeIndex += processed`). Only those nodes are scored, so on OpenB's
//! 1,213 GPU nodes the shipped configuration shows a pod 497 of them (41 %).
//!
//! The walk here is sequential; kube-scheduler checks nodes in parallel chunks and may look at a
//! few more infeasible nodes before it stops, so its start index can run slightly ahead.

/// kube-scheduler's `minFeasibleNodesToFind`.
const MIN_FEASIBLE_NODES: usize = 100;
/// kube-scheduler's `minFeasibleNodesPercentageToFind`.
const MIN_PERCENTAGE: usize = 5;

/// How many nodes kube-scheduler filters for a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeSampling {
    /// Every feasible node is scored (what the simulator assumed before; kube-scheduler with
    /// `percentageOfNodesToScore: 100`).
    All,
    /// kube-scheduler's rule with `percentageOfNodesToScore` = this (0 = unset: adaptive).
    KubeScheduler { percentage: u32 },
}

impl NodeSampling {
    /// Parses `all`, `adaptive` (kube-scheduler's default) or a percentage 1–100.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "all" => Ok(Self::All),
            "adaptive" => Ok(Self::KubeScheduler { percentage: 0 }),
            n => match n.parse::<u32>() {
                Ok(p @ 1..=100) => Ok(Self::KubeScheduler { percentage: p }),
                _ => Err(format!(
                    "nodes to score: {n:?} is none of all, adaptive or a percentage 1-100"
                )),
            },
        }
    }

    /// kube-scheduler's `numFeasibleNodesToFind` for a cluster of `nodes`.
    pub fn nodes_to_find(self, nodes: usize) -> usize {
        let percentage = match self {
            Self::All => return nodes,
            Self::KubeScheduler { percentage } => percentage as usize,
        };
        if nodes < MIN_FEASIBLE_NODES {
            return nodes;
        }
        let percentage = match percentage {
            0 => (50usize.saturating_sub(nodes / 125)).max(MIN_PERCENTAGE),
            p => p,
        };
        (nodes * percentage / 100).max(MIN_FEASIBLE_NODES)
    }
}

/// The rotating walk over the node list, one per scheduler.
#[derive(Debug, Clone)]
pub struct NodeWalk {
    sampling: NodeSampling,
    next_start: usize,
}

impl NodeWalk {
    pub fn new(sampling: NodeSampling) -> Self {
        Self {
            sampling,
            next_start: 0,
        }
    }

    /// Fills `out` with the feasible nodes (indices into a list of `nodes`) this pod is shown,
    /// in walk order, and advances the start for the next pod.
    pub fn feasible(&mut self, nodes: usize, fits: impl Fn(usize) -> bool, out: &mut Vec<usize>) {
        out.clear();
        if nodes == 0 {
            return;
        }
        let wanted = self.sampling.nodes_to_find(nodes);
        let mut processed = 0;
        for i in 0..nodes {
            if out.len() == wanted {
                break;
            }
            let n = (self.next_start + i) % nodes;
            processed += 1;
            if fits(n) {
                out.push(n);
            }
        }
        self.next_start = (self.next_start + processed) % nodes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kube-scheduler's own table (`TestNumFeasibleNodesToFind`, schedule_one_test.go) for the
    /// unset and explicit percentages.
    #[test]
    fn nodes_to_find_as_kube_scheduler_counts_them() {
        let adaptive = NodeSampling::KubeScheduler { percentage: 0 };
        for (nodes, want) in [(10, 10), (1000, 420), (6000, 300), (1523, 578), (1213, 497)] {
            assert_eq!(adaptive.nodes_to_find(nodes), want, "{nodes} nodes");
        }
        let forty = NodeSampling::KubeScheduler { percentage: 40 };
        assert_eq!(forty.nodes_to_find(10), 10);
        assert_eq!(forty.nodes_to_find(1000), 400);
        assert_eq!(forty.nodes_to_find(200), 100, "never fewer than 100");
        assert_eq!(NodeSampling::All.nodes_to_find(6000), 6000);
        assert_eq!(
            NodeSampling::KubeScheduler { percentage: 100 }.nodes_to_find(6000),
            6000
        );
    }

    #[test]
    fn the_walk_stops_at_enough_feasible_nodes_and_the_next_pod_starts_after_it() {
        let mut walk = NodeWalk::new(NodeSampling::KubeScheduler { percentage: 0 });
        let mut out = Vec::new();
        // 1000 nodes, 420 to find; the odd ones fit: 840 processed, the next walk starts at 840.
        walk.feasible(1000, |n| n % 2 == 1, &mut out);
        assert_eq!(out.len(), 420);
        assert_eq!((out[0], *out.last().unwrap()), (1, 839));
        walk.feasible(1000, |n| n % 2 == 1, &mut out);
        assert_eq!(out[0], 841, "starts where the last walk stopped");
        assert_eq!(out.len(), 420, "wraps around the list");
        assert_eq!(*out.last().unwrap(), 679);
        // Fewer feasible nodes than wanted: all of them, after a whole lap.
        walk.feasible(1000, |n| n == 3, &mut out);
        assert_eq!(out, vec![3]);
        let mut all = NodeWalk::new(NodeSampling::All);
        all.feasible(1000, |n| n % 2 == 1, &mut out);
        assert_eq!(out.len(), 500);
    }

    #[test]
    fn parses_what_the_flag_takes() {
        assert_eq!(NodeSampling::parse("all"), Ok(NodeSampling::All));
        assert_eq!(
            NodeSampling::parse("adaptive"),
            Ok(NodeSampling::KubeScheduler { percentage: 0 })
        );
        assert_eq!(
            NodeSampling::parse("30"),
            Ok(NodeSampling::KubeScheduler { percentage: 30 })
        );
        for bad in ["0", "101", "most", ""] {
            assert!(NodeSampling::parse(bad).is_err(), "{bad}");
        }
    }
}
