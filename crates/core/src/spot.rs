//! Whether a node is spot (preemptible) capacity, from its labels: one rule for η's spot penalty
//! (`heuristic::NodeFeatures`) and for the reporter, which names reclaimed spot nodes in
//! `PUT /v1/nodes` (`reclaimed`).

use std::collections::BTreeMap;

use crate::config::Config;

/// Spot when `INSTANCE_TYPE_LABEL` says `spot` or `preemptible`, or any of `SPOT_LABELS`
/// (`karpenter.sh/capacity-type=spot`, `eks.amazonaws.com/capacityType=SPOT`,
/// `cloud.google.com/gke-spot=true` by default) matches; values compared case-insensitively.
pub fn is_spot(labels: &BTreeMap<String, String>, config: &Config) -> bool {
    let instance_is_spot = labels
        .get(&config.instance_type_label)
        .is_some_and(|v| v.eq_ignore_ascii_case("spot") || v.eq_ignore_ascii_case("preemptible"));
    let cloud_spot = config.spot_labels.iter().any(|(k, v)| {
        labels
            .get(k)
            .is_some_and(|actual| actual.eq_ignore_ascii_case(v))
    });
    instance_is_spot || cloud_spot
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_default_spot_label_and_the_instance_type() {
        let c = Config::default();
        for spot in [
            labels(&[("aco/instance-type", "spot")]),
            labels(&[("aco/instance-type", "Preemptible")]),
            labels(&[("karpenter.sh/capacity-type", "spot")]),
            labels(&[("eks.amazonaws.com/capacityType", "SPOT")]),
            labels(&[("cloud.google.com/gke-spot", "true")]),
        ] {
            assert!(is_spot(&spot, &c), "{spot:?}");
        }
        for not in [
            labels(&[]),
            labels(&[("aco/instance-type", "on-demand")]),
            labels(&[("karpenter.sh/capacity-type", "on-demand")]),
            labels(&[("cloud.google.com/gke-spot", "false")]),
        ] {
            assert!(!is_spot(&not, &c), "{not:?}");
        }
    }
}
