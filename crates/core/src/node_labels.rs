//! What a node's labels say to the heuristic and the filter, read once when its state is
//! assembled rather than once per pod scored: its price, its GPU model, whether it is spot
//! capacity, its spot pool and the pool's published interruption band.
//!
//! Bands: AWS's Spot Instance Advisor publishes, per instance type and region, the share of
//! capacity reclaimed over the trailing month in five bands (<5%, 5–10%, 10–15%, 15–20%, >20%).
//! Label values cannot hold `<`, `>` or `%`, so the band label (`SPOT_INTERRUPTION_BAND_LABEL`,
//! default `aco/spot-interruption-band`) carries `lt5`, `5-10`, `10-15`, `15-20`, `gt20`, or a
//! plain percent (`7.5`). A band stands for its midpoint (`gt20`: 25%), the values the
//! simulator's reclamation model draws from. An unlabelled spot node gets
//! `SPOT_DEFAULT_INTERRUPTION_PERCENT`.

use std::collections::BTreeMap;

use crate::config::{NodeKeys, SpotRisk};

/// Hours in the month of the Spot Advisor's bands.
pub const HOURS_PER_MONTH: f64 = 720.0;

/// The label-derived facts of one node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeProfile {
    /// Price per hour from the cost label; `None` when unlabelled or unreadable.
    pub cost_per_hour: Option<f64>,
    /// The first configured GPU-type label's value (`GPU_TYPE_LABELS`); `None` without one.
    pub gpu_model: Option<String>,
    pub spot: bool,
    /// For spot nodes: the pool (`SPOT_POOL_LABELS`' values joined by `/`) and the prior
    /// reclamation rate per node-hour from the band label (or the default).
    pub spot_pool: Option<SpotPool>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpotPool {
    pub name: String,
    pub prior_rate_per_hour: f64,
}

impl NodeProfile {
    pub fn of(labels: &BTreeMap<String, String>, keys: &NodeKeys, spot_risk: &SpotRisk) -> Self {
        let spot = is_spot(labels, keys);
        NodeProfile {
            cost_per_hour: cost_per_hour(labels, keys),
            gpu_model: gpu_model(labels, keys).map(str::to_string),
            spot,
            spot_pool: spot.then(|| SpotPool {
                name: pool_of(labels, spot_risk),
                prior_rate_per_hour: prior_rate(labels, spot_risk),
            }),
        }
    }
}

/// Everything the verbs read from a node's labels: its profile and its latency label. Read
/// once per facts record where the lookup keeps it beside the record
/// ([`crate::facts::FactsLookup::get_read`]): a verb over 5,000 candidates would otherwise
/// look up tens of label keys in each one's map, which was most of a names-mode call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelReading {
    pub profile: NodeProfile,
    /// Network latency in µs from the first `LATENCY_LABELS` key present that reads as one.
    pub latency_us: Option<f64>,
}

impl LabelReading {
    pub fn of(labels: &BTreeMap<String, String>, keys: &NodeKeys, spot_risk: &SpotRisk) -> Self {
        LabelReading {
            profile: NodeProfile::of(labels, keys, spot_risk),
            latency_us: latency_us(labels, keys),
        }
    }
}

/// The latency label (`LATENCY_LABELS`, first present key) in µs; `None` when absent or not a
/// whole number ([`latency_label_value`]).
pub fn latency_us(labels: &BTreeMap<String, String>, keys: &NodeKeys) -> Option<f64> {
    keys.latency_labels
        .iter()
        .find_map(|key| labels.get(key))
        .and_then(|v| latency_label_value(v))
}

/// A latency label's value in µs, read as kube-scheduler reads a label for NodeAffinity's
/// `Gt`/`Lt` (Go's `strconv.ParseInt(value, 10, 64)`): a whole number, nothing around it. The
/// one-verb install enforces latency targets with `Lt` on these labels (the reporter's admission
/// webhook), so a value kube-scheduler cannot compare (`250.5`, `1e3`, ` 250`) must not satisfy
/// a target here either: both then agree on every node. Negative values are refused (no label
/// value can start with `-`).
pub fn latency_label_value(value: &str) -> Option<f64> {
    value
        .parse::<i64>()
        .ok()
        .filter(|v| *v >= 0)
        .map(|v| v as f64)
}

/// The price per hour of the cost label (`COST_LABEL`); `None` when absent or unreadable.
pub fn cost_per_hour(labels: &BTreeMap<String, String>, keys: &NodeKeys) -> Option<f64> {
    labels
        .get(&keys.cost_label)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|c| c.is_finite() && *c >= 0.0)
}

/// The node's GPU model: the value of the first configured GPU-type label present.
pub fn gpu_model<'l>(labels: &'l BTreeMap<String, String>, keys: &NodeKeys) -> Option<&'l str> {
    keys.gpu_type_labels
        .iter()
        .find_map(|k| labels.get(k))
        .map(String::as_str)
}

/// Spot capacity: `INSTANCE_TYPE_LABEL` = `spot`/`preemptible`, or one of `SPOT_LABELS`
/// (values compared case-insensitively). One rule for η's spot terms and for the reporter, which
/// names reclaimed spot nodes in `PUT /v1/nodes` (`reclaimed`).
pub fn is_spot(labels: &BTreeMap<String, String>, keys: &NodeKeys) -> bool {
    let instance_is_spot = labels
        .get(&keys.instance_type_label)
        .is_some_and(|v| v.eq_ignore_ascii_case("spot") || v.eq_ignore_ascii_case("preemptible"));
    instance_is_spot
        || keys.spot_labels.iter().any(|(k, v)| {
            labels
                .get(k)
                .is_some_and(|actual| actual.eq_ignore_ascii_case(v))
        })
}

/// The pool of a node: the values of `SPOT_POOL_LABELS` joined by `/` (absent labels empty).
pub fn pool_of(labels: &BTreeMap<String, String>, spot_risk: &SpotRisk) -> String {
    let parts: Vec<&str> = spot_risk
        .spot_pool_labels
        .iter()
        .map(|k| labels.get(k).map_or("", String::as_str))
        .collect();
    parts.join("/")
}

/// The monthly interruption fraction a band label stands for, or `None` for a value that is
/// not a band (the label is then ignored and the default applies).
pub fn band_monthly_fraction(label: &str) -> Option<f64> {
    let percent = match label.trim() {
        "lt5" => 2.5,
        "5-10" => 7.5,
        "10-15" => 12.5,
        "15-20" => 17.5,
        "gt20" => 25.0,
        other => other
            .parse::<f64>()
            .ok()
            .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))?,
    };
    Some(percent / 100.0)
}

/// A monthly share of instances reclaimed, as a rate per node-hour (Poisson:
/// `1 − e^{−λ·720 h}` = the share).
pub fn hourly_rate(monthly_fraction: f64) -> f64 {
    let p = monthly_fraction.clamp(0.0, 0.999_999);
    -(1.0 - p).ln() / HOURS_PER_MONTH
}

/// The prior rate per node-hour of a spot node, from its band label or the default.
pub fn prior_rate(labels: &BTreeMap<String, String>, spot_risk: &SpotRisk) -> f64 {
    let monthly = labels
        .get(&spot_risk.spot_band_label)
        .and_then(|v| band_monthly_fraction(v))
        .unwrap_or(spot_risk.spot_default_interruption_percent / 100.0);
    hourly_rate(monthly)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

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
            assert!(is_spot(&spot, &c.node_keys), "{spot:?}");
        }
        for not in [
            labels(&[]),
            labels(&[("aco/instance-type", "on-demand")]),
            labels(&[("karpenter.sh/capacity-type", "on-demand")]),
            labels(&[("cloud.google.com/gke-spot", "false")]),
        ] {
            assert!(!is_spot(&not, &c.node_keys), "{not:?}");
        }
    }

    #[test]
    fn bands_read_as_their_midpoints_and_garbage_is_ignored() {
        let table = [
            ("lt5", Some(0.025)),
            ("5-10", Some(0.075)),
            ("10-15", Some(0.125)),
            ("15-20", Some(0.175)),
            ("gt20", Some(0.25)),
            ("7.5", Some(0.075)),
            (" 12 ", Some(0.12)),
            ("101", None),
            ("-1", None),
            ("often", None),
            ("NaN", None),
        ];
        for (label, want) in table {
            assert_eq!(band_monthly_fraction(label), want, "{label}");
        }
    }

    #[test]
    fn the_hourly_rate_reproduces_the_monthly_share() {
        for share in [0.025, 0.125, 0.25] {
            let rate = hourly_rate(share);
            let p = 1.0 - (-rate * HOURS_PER_MONTH).exp();
            assert!((p - share).abs() < 1e-12);
        }
        assert_eq!(hourly_rate(0.0), 0.0);
        assert!(hourly_rate(1.0).is_finite());
    }

    #[test]
    fn latency_labels_are_whole_microseconds_as_kube_scheduler_reads_them() {
        for (value, want) in [
            ("0", Some(0.0)),
            ("250", Some(250.0)),
            ("0250", Some(250.0)),
            ("+250", Some(250.0)),
            ("9223372036854775807", Some(i64::MAX as f64)),
            ("250.5", None),
            ("250.0", None),
            ("1e3", None),
            (" 250", None),
            ("250 ", None),
            ("-5", None),
            ("9223372036854775808", None),
            ("", None),
            ("fast", None),
        ] {
            assert_eq!(latency_label_value(value), want, "{value:?}");
        }
        let c = Config::default();
        // First present key wins, also when its value does not read.
        let l = labels(&[("aco/latency-us", "slow"), ("nodeLatencyUs", "100")]);
        assert_eq!(latency_us(&l, &c.node_keys), None);
        let l = labels(&[("nodeLatencyUs", "100")]);
        assert_eq!(latency_us(&l, &c.node_keys), Some(100.0));
    }

    #[test]
    fn profiles_read_price_spot_labels_pool_and_band() {
        let c = Config::default();
        let p = NodeProfile::of(
            &labels(&[
                ("aco/cost-per-hour", "0.45"),
                ("karpenter.sh/capacity-type", "spot"),
                ("node.kubernetes.io/instance-type", "g4dn.xlarge"),
                ("topology.kubernetes.io/zone", "eu-west-1a"),
                ("aco/spot-interruption-band", "15-20"),
            ]),
            &c.node_keys,
            &c.spot,
        );
        assert_eq!((p.cost_per_hour, p.spot), (Some(0.45), true));
        let pool = p.spot_pool.unwrap();
        assert_eq!(pool.name, "g4dn.xlarge/eu-west-1a");
        assert_eq!(pool.prior_rate_per_hour, hourly_rate(0.175));
        for l in [
            &[("aco/instance-type", "spot")][..],
            &[("eks.amazonaws.com/capacityType", "SPOT")],
            &[("cloud.google.com/gke-spot", "true")],
        ] {
            let p = NodeProfile::of(&labels(l), &c.node_keys, &c.spot);
            assert!(p.spot, "{l:?}");
            let rate = p.spot_pool.unwrap().prior_rate_per_hour;
            assert_eq!(
                rate,
                hourly_rate(c.spot.spot_default_interruption_percent / 100.0)
            );
        }
        let p = NodeProfile::of(
            &labels(&[
                ("aco/cost-per-hour", "cheap"),
                ("karpenter.sh/capacity-type", "on-demand"),
            ]),
            &c.node_keys,
            &c.spot,
        );
        assert_eq!(p, NodeProfile::default());
    }
}
