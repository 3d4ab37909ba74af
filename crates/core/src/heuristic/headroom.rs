use crate::config::Config;
use crate::demand::WorkloadClass;

/// SLA headroom `1 − predicted utilisation`. Latency-critical pods need at least
/// `latency_critical_min_headroom`; below it the factor is multiplied by
/// `latency_critical_headroom_penalty` (a soft rule: facts may be late, so it ranks rather than
/// forbids). No load facts → neutral 1.0 (fail open).
pub fn sla_headroom(predicted_utilisation: Option<f64>, workload: WorkloadClass, config: &Config) -> f64 {
    let Some(u) = predicted_utilisation else { return 1.0 };
    let headroom = (1.0 - u).clamp(0.0, 1.0);
    if workload.is_latency_critical() && headroom < config.latency_critical_min_headroom {
        headroom * config.latency_critical_headroom_penalty
    } else {
        headroom
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_critical_pods_are_steered_off_nodes_without_headroom() {
        let c = Config::default();
        assert_eq!(sla_headroom(None, WorkloadClass::LatencyCritical, &c), 1.0);
        assert!((sla_headroom(Some(0.3), WorkloadClass::Batch, &c) - 0.7).abs() < 1e-12);
        let batch = sla_headroom(Some(0.9), WorkloadClass::Batch, &c);
        let critical = sla_headroom(Some(0.9), WorkloadClass::LatencyCritical, &c);
        assert!(critical < batch * 0.1);
    }
}
