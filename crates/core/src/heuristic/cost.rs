use super::NodeFeatures;
use crate::config::Config;

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
pub fn marginal_cost_per_hour(features: &NodeFeatures, config: &Config) -> f64 {
    let price = features
        .cost_per_hour
        .unwrap_or(config.default_cost_per_hour)
        .max(0.0);
    match (features.committed_share, features.pod_share) {
        (Some(committed), Some(pod)) if committed > 0.0 => price * pod,
        // An idle node: the pod's share, and the part of the rest expected to stay unused.
        (Some(_), Some(pod)) => price * (pod + (1.0 - pod) * config.open_node_idle_fraction),
        _ => price,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(cost: Option<f64>, committed: Option<f64>, pod: Option<f64>) -> NodeFeatures {
        NodeFeatures {
            node: "n".into(),
            cost_per_hour: cost,
            committed_share: committed,
            pod_share: pod,
            ..NodeFeatures::default()
        }
    }

    #[test]
    fn idle_nodes_cost_their_price_busy_ones_the_pods_share() {
        let c = Config::default();
        assert_eq!(marginal_cost_per_hour(&f(Some(0.0), None, None), &c), 0.0);
        // 0.2 of the node, plus the idle fraction of the other 0.8.
        let opened = marginal_cost_per_hour(&f(Some(4.0), Some(0.0), Some(0.2)), &c);
        assert!((opened - 4.0 * (0.2 + 0.8 * c.open_node_idle_fraction)).abs() < 1e-12);
        let full = Config {
            open_node_idle_fraction: 1.0,
            ..Config::default()
        };
        assert_eq!(
            marginal_cost_per_hour(&f(Some(4.0), Some(0.0), Some(0.2)), &full),
            4.0
        );
        assert!(
            (marginal_cost_per_hour(&f(Some(3.2), Some(0.5), Some(0.05)), &c) - 0.16).abs() < 1e-12
        );
        assert_eq!(
            marginal_cost_per_hour(&f(Some(3.2), None, Some(0.05)), &c),
            3.2
        );
        assert_eq!(
            marginal_cost_per_hour(&f(None, None, None), &c),
            c.default_cost_per_hour
        );
    }
}
