use super::NodeFeatures;
use crate::config::LoadModel;

/// The node's headroom after placing the pod, `1 − max(predicted, committed) − pod share`
/// clamped to 0–1: the load `placement_cost.rs` prices breaches at (with measured load).
pub fn headroom_after(features: &NodeFeatures) -> f64 {
    let base = match (features.predicted_utilisation, features.committed_share) {
        (Some(u), Some(c)) => u.max(c),
        (Some(u), None) => u,
        (None, Some(c)) => c,
        (None, None) => 0.0,
    };
    let after = base + features.pod_share.unwrap_or(0.0);
    (1.0 - after).clamp(0.0, 1.0)
}

/// A node too hot for a latency-critical pod: headroom after placement below
/// `LATENCY_CRITICAL_MIN_HEADROOM` (the SLA threshold of `breach_probability`).
pub fn is_hot(features: &NodeFeatures, load: &LoadModel) -> bool {
    headroom_after(features) < load.latency_critical_min_headroom
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn f(util: Option<f64>, committed: Option<f64>, pod: Option<f64>) -> NodeFeatures<'static> {
        NodeFeatures {
            node: "n".into(),
            predicted_utilisation: util,
            committed_share: committed,
            pod_share: pod,
            ..NodeFeatures::default()
        }
    }

    #[test]
    fn headroom_after_counts_the_busier_of_load_and_requests_plus_the_pod() {
        let c = Config::default();
        assert_eq!(headroom_after(&f(None, None, None)), 1.0);
        assert!((headroom_after(&f(Some(0.3), None, None)) - 0.7).abs() < 1e-12);
        assert!((headroom_after(&f(Some(0.1), Some(0.4), Some(0.2))) - 0.4).abs() < 1e-12);
        assert_eq!(headroom_after(&f(Some(1.0), None, Some(0.1))), 0.0);
        assert!(is_hot(&f(Some(0.0), Some(0.0), Some(0.9)), &c.load));
        assert!(!is_hot(&f(None, None, Some(0.25)), &c.load));
    }
}
