//! The heuristic desirability η(n) ∈ (0, 1] of a node for a pod:
//! `reliability × cost_efficiency × sla_headroom × spike_safety × fragmentation`, one factor per
//! file.
//!
//! The Worker turns each candidate's [`NodeState`] into [`NodeFeatures`] (plain numbers, cheap to
//! send to the tenant's Durable Object); the Durable Object adds the tenant's outcome history
//! (reliability) and computes η there.

mod cost;
mod fragmentation;
mod headroom;
mod reliability;
mod spike;

pub use cost::{cost_efficiency, marginal_cost_per_hour};
pub use fragmentation::{
    fragmentation, fragmentation_delta, fragmentation_factor, model_that_matters, share_deltas,
    sigmoid_score, typical_shapes, FragmentationMemo, PodGpus, PodShape, OPENB_DEFAULT_SHAPES,
};
pub use headroom::{headroom_after, is_hot, sla_headroom};
pub use reliability::{reliability, OutcomeStats};
pub use spike::spike_safety;

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::demand::{PodDemand, WorkloadClass};
use crate::node_state::NodeState;

/// What the heuristic needs to know about one candidate node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFeatures {
    pub node: String,
    /// Price per hour from the cost label; `None` when unlabelled (the configured default applies).
    pub cost_per_hour: Option<f64>,
    pub spot: bool,
    /// From fresh load facts only; `None` is neutral.
    pub predicted_utilisation: Option<f64>,
    pub spike_probability: Option<f64>,
    /// Share of the node's allocatable already requested by other pods (fresh facts; the
    /// largest share over CPU, memory and GPUs). `Some(0.0)` means the node is known idle.
    #[serde(default)]
    pub committed_share: Option<f64>,
    /// Share of the node's allocatable this pod would take (largest over the resources it
    /// requests). Only set by [`NodeFeatures::for_pod`].
    #[serde(default)]
    pub pod_share: Option<f64>,
    /// FGD's fragmentation gradient `F(before) − F(after)` in milli-GPU for this pod on this
    /// node (see `fragmentation.rs`); `None` without per-GPU facts (neutral).
    #[serde(default)]
    pub fragmentation_delta: Option<f64>,
}

impl NodeFeatures {
    pub fn from_state(node: &NodeState, config: &Config) -> Self {
        let cost_per_hour = node
            .labels
            .get(&config.cost_label)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|c| c.is_finite() && *c >= 0.0);
        NodeFeatures {
            node: node.name.clone(),
            cost_per_hour,
            spot: crate::spot::is_spot(&node.labels, config),
            predicted_utilisation: node.load.map(|l| l.predicted_utilisation),
            spike_probability: node.load.map(|l| l.spike_probability),
            committed_share: committed_share(node, config),
            pod_share: None,
            fragmentation_delta: None,
        }
    }

    /// Features of `node` for one pod: adds the pod's own share of the node, so that the cost
    /// term can price a pod on an already-busy node at its share (packing is what saves money
    /// when idle nodes scale down) and the headroom term can look at the node *after* placement.
    pub fn for_pod(node: &NodeState, pod: &PodDemand, config: &Config) -> Self {
        Self::for_pod_with_shapes(node, pod, config, &OPENB_DEFAULT_SHAPES)
    }

    /// [`NodeFeatures::for_pod`] against a given list of typical pod shapes (the simulator
    /// passes its trace's; the Worker uses [`OPENB_DEFAULT_SHAPES`]).
    pub fn for_pod_with_shapes(
        node: &NodeState,
        pod: &PodDemand,
        config: &Config,
        shapes: &[PodShape],
    ) -> Self {
        Self::for_pod_memo(node, pod, config, shapes, &mut FragmentationMemo::default())
    }

    /// [`NodeFeatures::for_pod_with_shapes`] for one of a decision's candidates, sharing `memo`
    /// (one per decision: the pod and the shapes must not change) across them.
    pub fn for_pod_memo(
        node: &NodeState,
        pod: &PodDemand,
        config: &Config,
        shapes: &[PodShape],
        memo: &mut FragmentationMemo,
    ) -> Self {
        let mut features = Self::from_state(node, config);
        features.pod_share = node.allocatable.as_ref().map(|alloc| {
            pod.request
                .0
                .iter()
                .filter(|(name, amount)| **amount > 0 && counted(name, config))
                .map(|(name, amount)| share(*amount, alloc.get(name)))
                .fold(0.0, f64::max)
        });
        features.fragmentation_delta = node.gpu_free_milli.as_ref().and_then(|free| {
            let alloc_cpu = node
                .allocatable
                .as_ref()
                .map_or(i64::MAX / 4, |a| a.get("cpu"));
            let used_cpu = node.requested.as_ref().map_or(0, |r| r.get("cpu"));
            let model = node.gpu_model(config);
            memo.delta(alloc_cpu - used_cpu, free, model, pod_gpus(pod), shapes)
        });
        features
    }
}

/// The pod's GPUs as FGD counts them: a `*-milli` GPU resource below 1000 is a share of one
/// GPU; other GPU resources count whole GPUs.
pub fn pod_gpus(pod: &PodDemand) -> PodGpus {
    let cpu_milli = pod.request.get("cpu");
    let whole: i64 = pod
        .gpus
        .iter()
        .filter(|(n, _)| !n.ends_with("-milli"))
        .map(|(_, a)| *a)
        .sum();
    let milli: i64 = pod
        .gpus
        .iter()
        .filter(|(n, _)| n.ends_with("-milli"))
        .map(|(_, a)| *a)
        .sum();
    let (num_gpu, gpu_milli) = if whole > 0 {
        (whole.clamp(0, u32::MAX as i64) as u32, 1000)
    } else if milli > 0 && milli < 1000 {
        (1, milli as u32)
    } else if milli >= 1000 {
        ((milli / 1000).clamp(0, u32::MAX as i64) as u32, 1000)
    } else {
        (0, 0)
    };
    PodGpus {
        cpu_milli,
        num_gpu,
        gpu_milli,
    }
}

/// Resources whose shares matter: CPU, memory and GPUs.
fn counted(name: &str, config: &Config) -> bool {
    name == "cpu" || name == "memory" || config.gpu_resources.iter().any(|g| g == name)
}

fn share(amount: i64, allocatable: i64) -> f64 {
    if allocatable <= 0 {
        1.0
    } else {
        (amount as f64 / allocatable as f64).clamp(0.0, 1.0)
    }
}

fn committed_share(node: &NodeState, config: &Config) -> Option<f64> {
    let (alloc, requested) = (node.allocatable.as_ref()?, node.requested.as_ref()?);
    Some(
        requested
            .0
            .iter()
            .filter(|(name, amount)| **amount > 0 && counted(name, config))
            .map(|(name, amount)| share(*amount, alloc.get(name)))
            .fold(0.0, f64::max),
    )
}

/// η's factors for one node, as [`eta`] multiplies them: what an explanation shows. The
/// fragmentation factor is `None` without per-GPU facts (it is then neutral, 1.0). Also the
/// `factors` of an explanation's reply.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EtaFactors {
    pub reliability: f64,
    pub cost_efficiency: f64,
    pub sla_headroom: f64,
    pub spike_safety: f64,
    pub fragmentation: Option<f64>,
}

impl EtaFactors {
    /// The product in [`eta`]'s order; an absent fragmentation factor multiplies by 1.0, which
    /// changes no bit of the result.
    pub fn product(&self) -> f64 {
        self.reliability
            * self.cost_efficiency
            * self.sla_headroom
            * self.spike_safety
            * self.fragmentation.unwrap_or(1.0)
    }

    /// η: the product floored at `eta_floor` (every feasible node keeps a chance) and capped at 1.
    pub fn eta(&self, config: &Config) -> f64 {
        let product = self.product();
        if product.is_finite() {
            product.clamp(config.eta_floor, 1.0)
        } else {
            config.eta_floor
        }
    }
}

/// Every factor of η for one node (see [`EtaFactors`]); [`eta`] is exactly `.eta(config)` of it.
pub fn eta_factors(
    features: &NodeFeatures,
    workload: WorkloadClass,
    stats: Option<&OutcomeStats>,
    config: &Config,
) -> EtaFactors {
    // A factor left out of `ETA_FACTORS` is exactly 1.0 (fragmentation: absent), so the
    // product and every explanation read as if that factor did not exist.
    let on = config.eta_factors;
    let pick = |enabled: bool, factor: &dyn Fn() -> f64| if enabled { factor() } else { 1.0 };
    EtaFactors {
        reliability: pick(on.reliability, &|| {
            reliability(stats, features.spot, workload, config)
        }),
        cost_efficiency: pick(on.cost, &|| cost_efficiency(features, config)),
        sla_headroom: pick(on.headroom, &|| sla_headroom(features, workload, config)),
        spike_safety: pick(on.spike, &|| {
            spike_safety(features.spike_probability, config)
        }),
        fragmentation: features
            .fragmentation_delta
            .filter(|_| on.fragmentation)
            .map(|_| fragmentation_factor(features)),
    }
}

/// η for one node: the product of the factors, floored at `eta_floor` so that every feasible
/// node keeps a non-zero chance (exploration never dies) and capped at 1.
pub fn eta(
    features: &NodeFeatures,
    workload: WorkloadClass,
    stats: Option<&OutcomeStats>,
    config: &Config,
) -> f64 {
    eta_factors(features, workload, stats, config).eta(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(
        cost: Option<f64>,
        spot: bool,
        util: Option<f64>,
        spike: Option<f64>,
    ) -> NodeFeatures {
        NodeFeatures {
            node: "n".into(),
            cost_per_hour: cost,
            spot,
            predicted_utilisation: util,
            spike_probability: spike,
            committed_share: None,
            pod_share: None,
            fragmentation_delta: None,
        }
    }

    #[test]
    fn cheaper_busier_spottier_and_spikier_nodes_get_lower_eta() {
        let c = Config::default();
        let base = eta(
            &features(Some(1.0), false, Some(0.3), Some(0.0)),
            WorkloadClass::LatencyCritical,
            None,
            &c,
        );
        assert!(
            eta(
                &features(Some(3.0), false, Some(0.3), Some(0.0)),
                WorkloadClass::LatencyCritical,
                None,
                &c
            ) < base
        );
        assert!(
            eta(
                &features(Some(1.0), true, Some(0.3), Some(0.0)),
                WorkloadClass::LatencyCritical,
                None,
                &c
            ) < base
        );
        assert!(
            eta(
                &features(Some(1.0), false, Some(0.7), Some(0.0)),
                WorkloadClass::LatencyCritical,
                None,
                &c
            ) < base
        );
        assert!(
            eta(
                &features(Some(1.0), false, Some(0.3), Some(0.9)),
                WorkloadClass::LatencyCritical,
                None,
                &c
            ) < base
        );
    }

    /// The pre-breakdown η, kept here to prove the breakdown changed no score.
    fn eta_as_before(
        features: &NodeFeatures,
        workload: WorkloadClass,
        stats: Option<&OutcomeStats>,
        config: &Config,
    ) -> f64 {
        let product = reliability(stats, features.spot, workload, config)
            * cost_efficiency(features, config)
            * sla_headroom(features, workload, config)
            * spike_safety(features.spike_probability, config)
            * fragmentation_factor(features);
        if product.is_finite() {
            product.clamp(config.eta_floor, 1.0)
        } else {
            config.eta_floor
        }
    }

    #[test]
    fn the_factors_multiply_to_exactly_eta_with_and_without_fragmentation() {
        let c = Config::default();
        let bad = OutcomeStats {
            successes: 1.0,
            failures: 4.0,
        };
        let mut cases = Vec::new();
        for (cost, spot, util, spike) in [
            (Some(0.45), false, Some(0.3), Some(0.1)),
            (Some(3.2), true, Some(0.9), Some(0.9)),
            (None, false, None, None),
            (Some(0.0), true, Some(0.0), Some(1.0)),
        ] {
            for frag in [None, Some(-350.0), Some(0.0), Some(120.0)] {
                for pod in [None, Some(0.05), Some(0.95)] {
                    let mut f = features(cost, spot, util, spike);
                    f.fragmentation_delta = frag;
                    f.committed_share = util.map(|u| u / 2.0);
                    f.pod_share = pod;
                    cases.push(f);
                }
            }
        }
        for f in &cases {
            for w in [WorkloadClass::LatencyCritical, WorkloadClass::Batch] {
                for stats in [None, Some(&bad)] {
                    let factors = eta_factors(f, w, stats, &c);
                    assert_eq!(
                        factors.fragmentation.is_some(),
                        f.fragmentation_delta.is_some(),
                        "{f:?}"
                    );
                    let e = eta(f, w, stats, &c);
                    assert_eq!(
                        e.to_bits(),
                        eta_as_before(f, w, stats, &c).to_bits(),
                        "{f:?}"
                    );
                    assert_eq!(e.to_bits(), factors.eta(&c).to_bits());
                    // Unclamped, η is the product itself, bit for bit; clamped, it is the bound.
                    let p = factors.product();
                    if (c.eta_floor..=1.0).contains(&p) {
                        assert_eq!(e.to_bits(), p.to_bits(), "{f:?}");
                    } else {
                        assert!(e == c.eta_floor || e == 1.0, "{f:?}: {p} → {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_factor_left_out_of_eta_factors_is_exactly_one_and_the_others_unchanged() {
        let all = Config::default();
        let mut f = features(Some(3.2), true, Some(0.7), Some(0.6));
        f.fragmentation_delta = Some(-400.0);
        f.committed_share = Some(0.5);
        f.pod_share = Some(0.1);
        let w = WorkloadClass::LatencyCritical;
        let full = eta_factors(&f, w, None, &all);
        for name in crate::config::EtaFactorSet::NAMES {
            let c = Config {
                eta_factors: crate::config::EtaFactorSet::without(name).unwrap(),
                ..Config::default()
            };
            let g = eta_factors(&f, w, None, &c);
            let expect = |on: &str, v: f64| if on == name { 1.0 } else { v };
            assert_eq!(
                g.reliability,
                expect("reliability", full.reliability),
                "{name}"
            );
            assert_eq!(
                g.cost_efficiency,
                expect("cost", full.cost_efficiency),
                "{name}"
            );
            assert_eq!(
                g.sla_headroom,
                expect("headroom", full.sla_headroom),
                "{name}"
            );
            assert_eq!(g.spike_safety, expect("spike", full.spike_safety), "{name}");
            assert_eq!(
                g.fragmentation,
                if name == "fragmentation" {
                    None
                } else {
                    full.fragmentation
                },
                "{name}"
            );
            assert!(
                g.eta(&c) > full.eta(&all),
                "{name}: every factor of this node is below 1, so leaving one out raises η"
            );
        }
    }

    #[test]
    fn eta_stays_within_floor_and_one() {
        let c = Config::default();
        for cost in [None, Some(0.0), Some(1e9)] {
            for util in [None, Some(0.0), Some(1.0)] {
                let e = eta(
                    &features(cost, true, util, Some(1.0)),
                    WorkloadClass::LatencyCritical,
                    None,
                    &c,
                );
                assert!(e >= c.eta_floor && e <= 1.0, "{e}");
            }
        }
    }

    #[test]
    fn for_pod_measures_the_pods_share_and_the_committed_share() {
        let c = Config::default();
        let view: crate::k8s::NodeView = serde_json::from_str(
            r#"{"metadata":{"name":"n"},"status":{"allocatable":{"cpu":"8","memory":"32Gi","nvidia.com/gpu":"4"}}}"#,
        )
        .unwrap();
        let report: crate::facts::NodeReport =
            serde_json::from_str(r#"{"name":"n","requested":{"cpu":"2","memory":"16Gi"}}"#)
                .unwrap();
        let mut facts = crate::facts::NodeFacts::default();
        facts.apply(&report, 0, &c);
        let state = NodeState::assemble("n", Some(&view), Some(&facts), 0, &c, "n").unwrap();
        let pod: crate::k8s::PodView =
            serde_json::from_str(r#"{"spec":{"containers":[{"resources":{"requests":{"cpu":"1","nvidia.com/gpu":"1"}}}]}}"#).unwrap();
        let f = NodeFeatures::for_pod(&state, &PodDemand::from_pod(&pod, &c).unwrap(), &c);
        assert_eq!(f.committed_share, Some(0.5));
        assert_eq!(f.pod_share, Some(0.25));
        assert_eq!(NodeFeatures::from_state(&state, &c).pod_share, None);
    }

    #[test]
    fn features_read_cost_and_every_spot_label() {
        let c = Config::default();
        let state = |labels: &str| {
            let v: crate::k8s::NodeView = serde_json::from_str(&format!(
                r#"{{"metadata":{{"name":"n","labels":{labels}}}}}"#
            ))
            .unwrap();
            NodeState::assemble("n", Some(&v), None, 0, &c, "n").unwrap()
        };
        let f = NodeFeatures::from_state(
            &state(r#"{"aco/cost-per-hour":"0.45","aco/instance-type":"spot"}"#),
            &c,
        );
        assert_eq!((f.cost_per_hour, f.spot), (Some(0.45), true));
        for l in [
            r#"{"karpenter.sh/capacity-type":"spot"}"#,
            r#"{"eks.amazonaws.com/capacityType":"SPOT"}"#,
            r#"{"cloud.google.com/gke-spot":"true"}"#,
        ] {
            assert!(NodeFeatures::from_state(&state(l), &c).spot, "{l}");
        }
        let f = NodeFeatures::from_state(
            &state(r#"{"aco/cost-per-hour":"cheap","karpenter.sh/capacity-type":"on-demand"}"#),
            &c,
        );
        assert_eq!((f.cost_per_hour, f.spot), (None, false));
    }
}
