//! The heuristic desirability η(n) ∈ (0, 1] of a node for a pod, from the expected cost of the
//! placement in $/h (`placement_cost.rs`): `η = exp(−total / COST_REFERENCE)`. One file per
//! term's ingredients: `cost.rs` (the pod's marginal share of the bill), `fragmentation.rs`
//! (FGD's gradient), `headroom.rs` (load after placement), `reliability.rs` (the faded outcome
//! counts the trail holds, and what they teach: reliability and slowdown),
//! `spot_risk.rs` (interruption rates per spot pool), `outlook.rs` (what the cluster as a whole
//! says: GPU scarcity, pool histories).
//!
//! The Worker turns each candidate's [`NodeState`] into [`NodeFeatures`] (plain numbers, cheap to
//! send to the Colony Durable Object of the cluster × tenant); the colony prices them with η (the
//! facts' terms) and its trail τ (the learned terms, from the tenant's outcome history).

mod cost;
mod fragmentation;
mod headroom;
mod outlook;
mod placement_cost;
mod pod_footprint;
mod reliability;
pub mod spot_risk;

pub use cost::marginal_cost_per_hour;
pub use fragmentation::{
    fragmentation, fragmentation_delta, model_that_matters, share_deltas, sigmoid_score,
    typical_shapes, FragmentationMemo, PodGpus, PodShape, OPENB_DEFAULT_SHAPES,
};
pub use headroom::{headroom_after, is_hot};
pub use outlook::{gpu_allocation, gpu_allocation_of_facts, ClusterOutlook, GpuNodeAccount};
pub use placement_cost::{breach_probability, cost_terms, learned_terms, CostTerms};
pub use pod_footprint::PodFootprint;
pub use reliability::{reliability, OutcomeStats};

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::config::{Config, CostModel, LoadModel, NodeKeys, SpotRisk};
use crate::demand::{PodDemand, WorkloadClass};
use crate::node_state::NodeState;

/// What the heuristic needs to know about one candidate node. The name is borrowed where it can
/// be (from the request body or the facts): a decision over 5,000 candidates copies no name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFeatures<'a> {
    pub node: Cow<'a, str>,
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
    /// node (see `fragmentation.rs`); `None` without per-GPU facts (the term is absent).
    #[serde(default)]
    pub fragmentation_delta: Option<f64>,
    /// Physical GPUs of the node (its price per GPU-hour is the price over them).
    #[serde(default)]
    pub gpus: Option<u32>,
    /// The pod's GPU request in milli-GPU (a share, or 1000 per whole GPU).
    #[serde(default)]
    pub pod_gpu_milli: f64,
    /// The cluster's GPU scarcity when the pod is scored ([`ClusterOutlook::gpu_scarcity`]).
    #[serde(default)]
    pub gpu_scarcity: f64,
    /// The cluster's price of a GPU-hour ([`ClusterOutlook::gpu_hour_price`]); without it,
    /// the node's own price over its GPUs.
    #[serde(default)]
    pub gpu_hour_price: Option<f64>,
    /// A spot node's expected reclamations per hour (its pool's posterior rate).
    #[serde(default)]
    pub reclaim_rate_per_hour: Option<f64>,
    /// Latency-critical pods already on the node, when the facts say (else a busy node is
    /// assumed to host one).
    #[serde(default)]
    pub latency_critical_pods: Option<u32>,
}

impl<'a> NodeFeatures<'a> {
    pub fn from_state(node: &'a NodeState<'_>, node_keys: &NodeKeys, spot: &SpotRisk) -> Self {
        Self::from_state_in(node, node_keys, spot, &ClusterOutlook::default())
    }

    /// [`NodeFeatures::from_state`] with what the cluster says about GPUs and spot pools.
    pub fn from_state_in(
        node: &'a NodeState<'_>,
        node_keys: &NodeKeys,
        spot: &SpotRisk,
        outlook: &ClusterOutlook,
    ) -> Self {
        let profile = &node.profile;
        let reclaim_rate_per_hour = profile.spot_pool.as_ref().map(|pool| {
            let history = if outlook.pools.is_empty() {
                None
            } else {
                outlook.pools.get(&pool.name)
            };
            spot_risk::posterior_rate(pool.prior_rate_per_hour, history, spot)
        });
        NodeFeatures {
            node: Cow::Borrowed(&node.name),
            cost_per_hour: profile.cost_per_hour,
            spot: profile.spot,
            predicted_utilisation: node.load.map(|l| l.predicted_utilisation),
            spike_probability: node.load.map(|l| l.spike_probability),
            committed_share: node.committed_share,
            pod_share: None,
            fragmentation_delta: None,
            gpus: gpu_allocation(node, node_keys).map(|(_, cap)| (cap / 1000.0).round() as u32),
            pod_gpu_milli: 0.0,
            gpu_scarcity: outlook.gpu_scarcity.unwrap_or(0.0),
            gpu_hour_price: outlook.gpu_hour_price,
            reclaim_rate_per_hour,
            latency_critical_pods: None,
        }
    }

    /// Features of `node` for one pod: adds the pod's own share of the node, so that the cost
    /// term can price a pod on an already-busy node at its share (packing is what saves money
    /// when idle nodes scale down) and the headroom term can look at the node *after* placement.
    pub fn for_pod(
        node: &'a NodeState<'_>,
        pod: &PodDemand,
        node_keys: &NodeKeys,
        spot: &SpotRisk,
    ) -> Self {
        Self::for_pod_memo(
            node,
            pod,
            node_keys,
            spot,
            &ClusterOutlook::default(),
            &OPENB_DEFAULT_SHAPES,
            &mut FragmentationMemo::default(),
        )
    }

    /// [`NodeFeatures::for_pod`] for one of a decision's candidates in a cluster described by
    /// `outlook`, against the typical pod `shapes` (the simulator passes its trace's; the Worker
    /// uses [`OPENB_DEFAULT_SHAPES`]), sharing `memo` (one per decision: the pod and the shapes
    /// must not change) across the candidates.
    pub fn for_pod_memo(
        node: &'a NodeState<'_>,
        pod: &PodDemand,
        node_keys: &NodeKeys,
        spot: &SpotRisk,
        outlook: &ClusterOutlook,
        shapes: &[PodShape],
        memo: &mut FragmentationMemo,
    ) -> Self {
        let pod = PodFootprint::of(pod, node_keys);
        Self::for_pod_with(node, &pod, node_keys, spot, outlook, shapes, memo)
    }

    /// [`NodeFeatures::for_pod_memo`] with the pod read once for all the candidates
    /// ([`PodFootprint::of`]).
    pub fn for_pod_with(
        node: &'a NodeState<'_>,
        pod: &PodFootprint,
        node_keys: &NodeKeys,
        spot: &SpotRisk,
        outlook: &ClusterOutlook,
        shapes: &[PodShape],
        memo: &mut FragmentationMemo,
    ) -> Self {
        let mut features = Self::from_state_in(node, node_keys, spot, outlook);
        features.pod_share = node.allocatable.as_ref().map(|alloc| pod.share_of(alloc));
        let gpus = pod.gpus;
        features.pod_gpu_milli = f64::from(gpus.num_gpu) * f64::from(gpus.gpu_milli);
        features.fragmentation_delta = node.gpu_free_milli.as_ref().and_then(|free| {
            let alloc_cpu = node
                .allocatable
                .as_ref()
                .map_or(i64::MAX / 4, |a| a.get("cpu"));
            let used_cpu = node.requested.as_ref().map_or(0, |r| r.get("cpu"));
            let model = node.gpu_model();
            memo.delta(alloc_cpu - used_cpu, free, model, gpus, shapes)
        });
        features
    }

    /// The same features under another borrow of the name: the Worker's verbs judge a candidate
    /// through a short borrow of it, and keep its features as long as the request body.
    pub fn renamed<'b>(&self, node: Cow<'b, str>) -> NodeFeatures<'b> {
        NodeFeatures {
            node,
            cost_per_hour: self.cost_per_hour,
            spot: self.spot,
            predicted_utilisation: self.predicted_utilisation,
            spike_probability: self.spike_probability,
            committed_share: self.committed_share,
            pod_share: self.pod_share,
            fragmentation_delta: self.fragmentation_delta,
            gpus: self.gpus,
            pod_gpu_milli: self.pod_gpu_milli,
            gpu_scarcity: self.gpu_scarcity,
            gpu_hour_price: self.gpu_hour_price,
            reclaim_rate_per_hour: self.reclaim_rate_per_hour,
            latency_critical_pods: self.latency_critical_pods,
        }
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

/// Every term of the placement's expected cost (see [`CostTerms`]), the learned ones from the
/// node's trail `stats`; [`eta`] is exactly `.eta(&config.cost, &config.eta)` of it. The explanations' view.
pub fn eta_terms(
    features: &NodeFeatures,
    workload: WorkloadClass,
    stats: Option<&OutcomeStats>,
    cost: &CostModel,
    load: &LoadModel,
) -> CostTerms {
    cost_terms(features, workload, stats, cost, load)
}

/// η for one node: `exp(−the facts' expected $/h / COST_REFERENCE)`, floored at `eta_floor` so
/// that every feasible node keeps a non-zero chance (exploration never dies) and capped at 1.
/// Nothing learned enters it: that is the trail's.
/// Takes the whole Config: it reads three groups (prices, the load model and η's bounds).
pub fn eta(features: &NodeFeatures, workload: WorkloadClass, config: &Config) -> f64 {
    cost_terms(features, workload, None, &config.cost, &config.load).eta(&config.cost, &config.eta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(
        cost: Option<f64>,
        spot: bool,
        util: Option<f64>,
        spike: Option<f64>,
    ) -> NodeFeatures<'static> {
        NodeFeatures {
            node: "n".into(),
            cost_per_hour: cost,
            spot,
            predicted_utilisation: util,
            spike_probability: spike,
            committed_share: Some(0.3),
            pod_share: Some(0.1),
            reclaim_rate_per_hour: spot.then(|| crate::node_labels::hourly_rate(0.1)),
            ..NodeFeatures::default()
        }
    }

    #[test]
    fn pricier_spottier_busier_and_spikier_nodes_get_lower_eta_for_latency_critical_pods() {
        let c = Config::default();
        let lc = WorkloadClass::LatencyCritical;
        let base = eta(&features(Some(1.0), false, Some(0.3), Some(0.0)), lc, &c);
        for worse in [
            features(Some(3.0), false, Some(0.3), Some(0.0)),
            features(Some(1.0), true, Some(0.3), Some(0.0)),
            features(Some(1.0), false, Some(0.75), Some(0.0)),
            features(Some(1.0), false, Some(0.3), Some(0.9)),
        ] {
            assert!(eta(&worse, lc, &c) < base, "{worse:?}");
        }
    }

    #[test]
    fn eta_is_exactly_the_terms_eta_and_a_factor_left_out_zeroes_its_term() {
        let all = Config::default();
        let mut f = features(Some(3.2), true, Some(0.75), Some(0.6));
        f.fragmentation_delta = Some(-400.0);
        f.gpus = Some(8);
        f.pod_gpu_milli = 1000.0;
        f.gpu_scarcity = 0.9;
        let w = WorkloadClass::LatencyCritical;
        let bad = OutcomeStats {
            successes: 1.0,
            failures: 4.0,
            slowdown_sum: 2.4,
            slowdown_runs: 2.0,
            ..OutcomeStats::default()
        };
        let full = eta_terms(&f, w, Some(&bad), &all.cost, &all.load);
        assert_eq!(
            eta(&f, w, &all),
            full.eta(&all.cost, &all.eta),
            "η reads no outcome"
        );
        for (name, term) in [
            ("cost", full.resources),
            ("fragmentation", full.stranded_gpu.unwrap()),
            ("reliability", full.reclamation_risk + full.failure_risk),
            ("performance", full.slowdown),
        ] {
            assert!(
                term > 0.0,
                "{name}: every term of this node costs something"
            );
            let c = Config::default()
                .with(|c| c.cost.eta_factors = crate::config::EtaFactorSet::without(name).unwrap());
            let g = eta_terms(&f, w, Some(&bad), &c.cost, &c.load);
            assert!(g.total() < full.total(), "{name}");
            assert!(
                g.eta(&c.cost, &c.eta) >= full.eta(&all.cost, &all.eta),
                "{name}"
            );
        }
        let no_headroom = Config::default().with(|c| {
            c.cost.eta_factors = crate::config::EtaFactorSet::without("headroom").unwrap()
        });
        assert_eq!(
            eta_terms(&f, w, Some(&bad), &no_headroom.cost, &no_headroom.load).qos_risk,
            0.0
        );
    }

    #[test]
    fn eta_stays_within_floor_and_one() {
        let c = Config::default();
        for cost in [None, Some(0.0), Some(1e9)] {
            for util in [None, Some(0.0), Some(1.0)] {
                let e = eta(
                    &features(cost, true, util, Some(1.0)),
                    WorkloadClass::LatencyCritical,
                    &c,
                );
                assert!(e >= c.eta.eta_floor && e <= 1.0, "{e}");
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
        let report: crate::api::nodes::NodeReport =
            serde_json::from_str(r#"{"name":"n","requested":{"cpu":"2","memory":"16Gi"}}"#)
                .unwrap();
        let mut facts = crate::facts::NodeFacts::default();
        facts.apply(&report, 0, &c.load);
        let state = NodeState::assemble("n", Some(&view), Some(&facts), 0, &c, "n").unwrap();
        let pod: crate::k8s::PodView =
            serde_json::from_str(r#"{"spec":{"containers":[{"resources":{"requests":{"cpu":"1","nvidia.com/gpu":"1"}}}]}}"#).unwrap();
        let f = NodeFeatures::for_pod(
            &state,
            &PodDemand::from_pod(&pod, &c.pod_keys, &c.node_keys).unwrap(),
            &c.node_keys,
            &c.spot,
        );
        assert_eq!(f.committed_share, Some(0.5));
        assert_eq!(f.pod_share, Some(0.25));
        assert_eq!(
            NodeFeatures::from_state(&state, &c.node_keys, &c.spot).pod_share,
            None
        );
    }

    #[test]
    fn features_read_cost_and_every_spot_label() {
        let c = Config::default();
        let state = |labels: &str| {
            let v: crate::k8s::NodeView = serde_json::from_str(&format!(
                r#"{{"metadata":{{"name":"n","labels":{labels}}}}}"#
            ))
            .unwrap();
            NodeState::assemble("n", Some(&v), None, 0, &c, "n")
                .unwrap()
                .into_owned()
        };
        let spot = state(r#"{"aco/cost-per-hour":"0.45","aco/instance-type":"spot"}"#);
        let f = NodeFeatures::from_state(&spot, &c.node_keys, &c.spot);
        assert_eq!((f.cost_per_hour, f.spot), (Some(0.45), true));
        for l in [
            r#"{"karpenter.sh/capacity-type":"spot"}"#,
            r#"{"eks.amazonaws.com/capacityType":"SPOT"}"#,
            r#"{"cloud.google.com/gke-spot":"true"}"#,
        ] {
            assert!(
                NodeFeatures::from_state(&state(l), &c.node_keys, &c.spot).spot,
                "{l}"
            );
        }
        let unpriced =
            state(r#"{"aco/cost-per-hour":"cheap","karpenter.sh/capacity-type":"on-demand"}"#);
        let f = NodeFeatures::from_state(&unpriced, &c.node_keys, &c.spot);
        assert_eq!((f.cost_per_hour, f.spot), (None, false));
    }
}
