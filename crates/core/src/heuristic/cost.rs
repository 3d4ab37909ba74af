use super::NodeFeatures;
use crate::config::Config;

/// Cost efficiency `1 / (1 + cost/ref)` (the seed's form) of the pod's *marginal* cost: the
/// node's price when the node is idle (placing the pod keeps it running), or only the pod's
/// share of the price when other pods already keep the node busy. Idle nodes are assumed to
/// scale down, so packing onto busy nodes is what saves money. Unknown occupancy or share is
/// priced in full; unlabelled nodes at `default_cost_per_hour`, so a missing label never makes
/// a node look free.
pub fn cost_efficiency(features: &NodeFeatures, config: &Config) -> f64 {
    1.0 / (1.0 + marginal_cost_per_hour(features, config) / config.cost_reference)
}

/// The pod's marginal cost in $/h on this node, as [`cost_efficiency`] prices it (shadow mode
/// reports the same figure, `crate::shadow`).
pub fn marginal_cost_per_hour(features: &NodeFeatures, config: &Config) -> f64 {
    let price = features
        .cost_per_hour
        .unwrap_or(config.default_cost_per_hour)
        .max(0.0);
    match (features.committed_share, features.pod_share) {
        (Some(committed), Some(pod)) if committed > 0.0 => price * pod,
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
            spot: false,
            predicted_utilisation: None,
            spike_probability: None,
            committed_share: committed,
            pod_share: pod,
            fragmentation_delta: None,
        }
    }

    #[test]
    fn halves_at_the_reference_and_decreases_with_price() {
        let c = Config::default();
        assert_eq!(cost_efficiency(&f(Some(0.0), None, None), &c), 1.0);
        assert_eq!(
            cost_efficiency(&f(Some(c.cost_reference), None, None), &c),
            0.5
        );
        assert!(
            cost_efficiency(&f(Some(0.45), None, None), &c)
                > cost_efficiency(&f(Some(3.2), None, None), &c)
        );
        assert_eq!(
            cost_efficiency(&f(None, None, None), &c),
            cost_efficiency(&f(Some(c.default_cost_per_hour), None, None), &c)
        );
    }

    #[test]
    fn a_busy_node_costs_only_the_pods_share() {
        let c = Config::default();
        let busy_expensive = cost_efficiency(&f(Some(3.2), Some(0.5), Some(0.05)), &c);
        let idle_cheap = cost_efficiency(&f(Some(0.45), Some(0.0), Some(0.05)), &c);
        assert!(busy_expensive > idle_cheap);
        assert_eq!(
            cost_efficiency(&f(Some(3.2), None, Some(0.05)), &c),
            cost_efficiency(&f(Some(3.2), None, None), &c)
        );
    }
}
