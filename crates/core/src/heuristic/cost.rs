use super::NodeFeatures;
use crate::config::CostModel;

/// The pod's *marginal* cost in $/h on this node. On a node other pods already keep busy: only
/// the pod's share of the price. On an idle node (placing the pod keeps it running; idle nodes
/// are assumed to scale down): the pod's share, plus the rest of the node times
/// `OPEN_NODE_IDLE_FRACTION`, the part of it expected to stay unused while the pod keeps the
/// node running — later pods pack onto busy nodes first, so a node opened with room is partly
/// paid for by them. `1` prices an idle node in full (the rule before v5), which sends every
/// pod that opens a node to the cheapest one that fits, however little room it leaves for
/// company. Unknown occupancy or share is priced in full; unlabelled nodes at `default_cost_per_hour`, so
/// a missing label never makes a node look free. The `resources` term of η's cost
/// (`placement_cost.rs`); shadow mode reports the same figure (`crate::shadow`).
pub fn marginal_cost_per_hour(features: &NodeFeatures, cost: &CostModel) -> f64 {
    let price = features
        .cost_per_hour
        .unwrap_or(cost.default_cost_per_hour)
        .max(0.0);
    match (features.committed_share, features.pod_share) {
        (Some(committed), Some(pod)) if committed > 0.0 => price * pod,
        // An idle node: the pod's share, and the part of the rest expected to stay unused.
        (Some(_), Some(pod)) => {
            let idle = cost.open_node_idle_fraction * idle_taper(features.gpu_scarcity);
            price * (pod + (1.0 - pod) * idle)
        }
        _ => price,
    }
}

/// How much of `OPEN_NODE_IDLE_FRACTION` an opened node is charged at GPU scarcity `s`:
/// `(1 − s)³`. The rest of an opened node stays idle only while the cluster has room elsewhere
/// for the pods that would fill it; as free GPUs run out every node is needed anyway, and
/// keeping pods off fresh nodes only strands GPUs (FGD's whole free nodes are what the large
/// pods need). The exponent is chosen on the shipped OpenB variants under the saturation
/// protocol (docs/history/simulation.md, v6; seed 42): 1 left the colony below FGD on the default trace
/// (94.96% against 95.43% at 130%), 2 on gpushare40 and multigpu20 (by 0.45 and 0.26 points); 3
/// is the smallest at or above FGD on all five.
pub fn idle_taper(scarcity: f64) -> f64 {
    if scarcity.is_nan() {
        return 1.0;
    }
    (1.0 - scarcity.clamp(0.0, 1.0)).powi(3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn f(cost: Option<f64>, committed: Option<f64>, pod: Option<f64>) -> NodeFeatures<'static> {
        NodeFeatures {
            node: "n".into(),
            cost_per_hour: cost,
            committed_share: committed,
            pod_share: pod,
            ..NodeFeatures::default()
        }
    }

    #[test]
    fn opening_a_node_is_charged_less_as_free_gpus_run_out() {
        let c = Config::default();
        let opened = |scarcity: f64| NodeFeatures {
            gpu_scarcity: scarcity,
            ..f(Some(4.0), Some(0.0), Some(0.2))
        };
        let at = |s: f64| marginal_cost_per_hour(&opened(s), &c.cost);
        assert!((at(0.0) - 4.0 * (0.2 + 0.8 * c.cost.open_node_idle_fraction)).abs() < 1e-12);
        assert!((at(0.5) - 4.0 * (0.2 + 0.8 * c.cost.open_node_idle_fraction / 8.0)).abs() < 1e-12);
        // A full cluster: only the pod's share, as on a busy node.
        assert!((at(1.0) - 0.8).abs() < 1e-12);
        assert!(at(0.2) > at(0.6) && at(0.6) > at(0.9));
        assert_eq!(idle_taper(f64::NAN), 1.0);
        // A busy node's share does not depend on scarcity.
        let busy = NodeFeatures {
            gpu_scarcity: 0.9,
            ..f(Some(4.0), Some(0.5), Some(0.2))
        };
        assert!((marginal_cost_per_hour(&busy, &c.cost) - 0.8).abs() < 1e-12);
    }

    #[test]
    fn idle_nodes_cost_their_price_busy_ones_the_pods_share() {
        let c = Config::default();
        assert_eq!(
            marginal_cost_per_hour(&f(Some(0.0), None, None), &c.cost),
            0.0
        );
        // 0.2 of the node, plus the idle fraction of the other 0.8.
        let opened = marginal_cost_per_hour(&f(Some(4.0), Some(0.0), Some(0.2)), &c.cost);
        assert!((opened - 4.0 * (0.2 + 0.8 * c.cost.open_node_idle_fraction)).abs() < 1e-12);
        let full = Config::default().with(|c| c.cost.open_node_idle_fraction = 1.0);
        assert_eq!(
            marginal_cost_per_hour(&f(Some(4.0), Some(0.0), Some(0.2)), &full.cost),
            4.0
        );
        assert!(
            (marginal_cost_per_hour(&f(Some(3.2), Some(0.5), Some(0.05)), &c.cost) - 0.16).abs()
                < 1e-12
        );
        assert_eq!(
            marginal_cost_per_hour(&f(Some(3.2), None, Some(0.05)), &c.cost),
            3.2
        );
        assert_eq!(
            marginal_cost_per_hour(&f(None, None, None), &c.cost),
            c.cost.default_cost_per_hour
        );
    }
}
