//! What placing the pod on the node is expected to cost the cluster per hour, term by term, so
//! that the balance between packing, fragmentation and risk is a fact about dollars and not a
//! tuning of weights. The first four terms are what the facts say (η); the last two are what the
//! tenant's outcomes taught (the trail τ, `colony/pheromone.rs`).
//!
//! | term | $/h |
//! |---|---|
//! | `resources` | the pod's marginal share of the node's bill (`cost.rs`): the full price of an idle node it would keep running, its share of a busy one |
//! | `strandedGpu` | usable GPU capacity the placement takes from typical pods, its own GPUs included — FGD's gradient turned into a cost: `(pod GPU milli − ΔF)/1000 × the cluster's $/GPU-h × s/(1−s)` at GPU scarcity `s` |
//! | `qosRisk` | expected SLA breaches of latency-critical pods on the node, its own and its neighbours', × `SLA_VIOLATION_COST`, per `EXPECTED_STAY_HOURS` |
//! | `reclamationRisk` | P(the spot node is reclaimed during the stay) × the loss (a breach for a latency-critical pod, half the run's resources otherwise), per stay |
//! | `failureRisk` | learned: the node's failure probability above the prior (its faded outcomes) × the same loss, per stay |
//! | `slowdown` | learned: (the node's learned slowdown for the tenant − 1) × `resources` (a slower node holds the pod longer; learned from the run times the reporter sends, `OutcomeStats::slowdown`) |
//!
//! `η = exp(−facts / COST_REFERENCE)` (floored at `ETA_FLOOR`) and `τ = exp(−learned /
//! COST_REFERENCE)`: monotone in their dollars, so the ranking under η alone is the ranking by
//! the facts' $/h, and `τ^α·η^β` with `α = β` is the ranking by the whole expected $/h: a learned
//! dollar weighs what a seen one does.

use serde::{Deserialize, Serialize};

use super::{marginal_cost_per_hour, reliability, spot_risk, NodeFeatures, OutcomeStats};
use crate::config::{CostModel, EtaBounds, LoadModel};
use crate::demand::WorkloadClass;

/// Each term of the expected cost of one placement, in $/h (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostTerms {
    pub resources: f64,
    /// `None` without per-GPU facts for the node (the term is then absent, not free).
    pub stranded_gpu: Option<f64>,
    pub qos_risk: f64,
    pub reclamation_risk: f64,
    pub failure_risk: f64,
    pub slowdown: f64,
}

impl CostTerms {
    /// What the facts say the placement costs, $/h: η's dollars.
    pub fn facts_total(&self) -> f64 {
        self.resources + self.stranded_gpu.unwrap_or(0.0) + self.qos_risk + self.reclamation_risk
    }

    /// What the tenant's outcomes taught the placement costs beyond that, $/h: the trail's
    /// dollars (negative where the node ran the tenant's pods faster than usual).
    pub fn learned_total(&self) -> f64 {
        self.failure_risk + self.slowdown
    }

    /// The expected $/h of the placement: the facts' terms, then the learned ones, summed in
    /// this order (the ranking at `ALPHA = BETA` is by exactly this number).
    pub fn total(&self) -> f64 {
        self.resources
            + self.stranded_gpu.unwrap_or(0.0)
            + self.qos_risk
            + self.reclamation_risk
            + self.failure_risk
            + self.slowdown
    }

    /// η = `exp(−facts / COST_REFERENCE)`, within `[ETA_FLOOR, 1]` (a non-finite total is the
    /// floor).
    pub fn eta(&self, cost: &CostModel, bounds: &EtaBounds) -> f64 {
        let total = self.facts_total();
        if !total.is_finite() {
            return bounds.eta_floor;
        }
        (-total.max(0.0) / cost.cost_reference)
            .exp()
            .clamp(bounds.eta_floor, 1.0)
    }

    /// τ = `exp(−learned / COST_REFERENCE)`: 1 where nothing was learned, below 1 where the
    /// node failed or slowed the tenant's pods, above 1 where it ran them faster; a non-finite
    /// learned cost is `ETA_FLOOR`.
    pub fn tau(&self, cost: &CostModel, bounds: &EtaBounds) -> f64 {
        let learned = self.learned_total();
        if !learned.is_finite() {
            return bounds.eta_floor;
        }
        (-learned / cost.cost_reference).exp()
    }
}

/// The learned terms (`failureRisk`, `slowdown`) of a pod whose work lost on a failure costs
/// `loss` $ and whose share of the node's bill is `resources` $/h, from the node's faded
/// outcomes `stats`: what the trail of a node is worth to one pod.
pub fn learned_terms(
    stats: Option<&OutcomeStats>,
    resources: f64,
    loss: f64,
    cost: &CostModel,
) -> (f64, f64) {
    let on = cost.eta_factors;
    let stay = cost.expected_stay_hours.max(1e-6);
    let failure_risk = if on.reliability {
        let prior = reliability(None, cost);
        (prior - reliability(stats, cost)).max(0.0) * loss / stay
    } else {
        0.0
    };
    let slowdown = if on.performance {
        stats
            .and_then(OutcomeStats::slowdown)
            .map_or(0.0, |s| (s - 1.0) * resources)
    } else {
        0.0
    };
    (failure_risk, slowdown)
}

/// The probability that a latency-critical pod on a node loaded to `load` (fraction of
/// capacity) sees its SLA broken during its stay: 0 below the SLA threshold
/// (`1 − LATENCY_CRITICAL_MIN_HEADROOM`) minus `SPIKE_BAND`, 1 above it plus the band, linear
/// between.
pub fn breach_probability(load: f64, model: &LoadModel) -> f64 {
    let threshold = 1.0 - model.latency_critical_min_headroom;
    let band = model.spike_band.max(1e-9);
    ((load - (threshold - band)) / (2.0 * band)).clamp(0.0, 1.0)
}

/// Every term of the expected cost of placing the pod described by `features` (see
/// [`NodeFeatures::for_pod`]) on its node; `stats` is the node's trail for the tenant (its faded
/// outcomes: reliability and learned slowdown), read only by the learned terms.
/// A term whose factor is left out of `ETA_FACTORS` is 0 (`strandedGpu`: absent).
pub fn cost_terms(
    features: &NodeFeatures,
    workload: WorkloadClass,
    stats: Option<&OutcomeStats>,
    cost: &CostModel,
    load: &LoadModel,
) -> CostTerms {
    let on = cost.eta_factors;
    let stay = cost.expected_stay_hours.max(1e-6);
    let resources = if on.cost {
        marginal_cost_per_hour(features, cost)
    } else {
        0.0
    };
    // What a breach or a lost node costs this pod: an SLA violation if it is latency-critical,
    // else the work lost, on average half the stay's resources.
    let loss = if workload.is_latency_critical() {
        cost.sla_violation_cost
    } else {
        marginal_cost_per_hour(features, cost) * stay / 2.0
    };
    let (failure_risk, slowdown) = learned_terms(stats, resources, loss, cost);
    CostTerms {
        resources,
        stranded_gpu: features
            .fragmentation_delta
            .filter(|_| on.fragmentation)
            .map(|delta| stranded_gpu(features, delta, cost)),
        qos_risk: qos_risk(features, workload, cost, load) / stay,
        reclamation_risk: if on.reliability && features.spot {
            let rate = features.reclaim_rate_per_hour.unwrap_or(0.0);
            spot_risk::reclaim_probability(rate, stay) * loss / stay
        } else {
            0.0
        },
        failure_risk,
        slowdown,
    }
}

/// `(pod GPU milli − ΔF)/1000 × $/GPU-h × scarcity premium`. `pod − ΔF` is the usable idle GPU
/// capacity (idle milli minus FGD's fragments) the placement removes — never negative, since a
/// pod can make no more capacity usable than it takes. The GPU-hour is the cluster's
/// ([`ClusterOutlook::gpu_hour_price`](super::ClusterOutlook::gpu_hour_price)), so that
/// between two nodes the one FGD prefers is always the cheaper to strand on (with each node's
/// own price, a cheap-GPU node that fragments more beat a dear one that fragments less); the
/// node's own price over its GPUs only when the cluster's is unknown.
fn stranded_gpu(features: &NodeFeatures, delta: f64, cost: &CostModel) -> f64 {
    let gpus = features.gpus.unwrap_or(0);
    if gpus == 0 {
        return 0.0;
    }
    let gpu_hour = features.gpu_hour_price.unwrap_or_else(|| {
        features
            .cost_per_hour
            .unwrap_or(cost.default_cost_per_hour)
            .max(0.0)
            / f64::from(gpus)
    });
    let lost_milli = (features.pod_gpu_milli - delta).max(0.0);
    lost_milli / 1000.0 * gpu_hour.max(0.0) * scarcity_premium(features.gpu_scarcity)
}

/// The highest scarcity [`scarcity_premium`] prices (a cluster 99% allocated: 99 GPU-hours per
/// stranded GPU-hour), so that a full cluster's premium stays finite.
pub const MAX_PRICED_SCARCITY: f64 = 0.99;

/// What a stranded GPU-hour costs the cluster per GPU-hour, at GPU scarcity `s` (allocated over
/// capacity): `s / (1 − s)`, the congestion price of capacity — the expected demand queued per
/// unit of capacity taken out of service at utilisation `s` (M/M/1). Near nothing in an empty
/// cluster (0.1 at 10%), a GPU-hour at half full, and dominant in a full one (19 at 95%), as the
/// issue asks; capped at [`MAX_PRICED_SCARCITY`]. A premium linear in `s` left the idle-node
/// charge in charge of a full cluster: 94.58% GPU allocation against FGD's 95.43% (v5).
pub fn scarcity_premium(scarcity: f64) -> f64 {
    if scarcity.is_nan() {
        return 0.0;
    }
    let s = scarcity.clamp(0.0, MAX_PRICED_SCARCITY);
    s / (1.0 - s)
}

/// Expected breaches × `SLA_VIOLATION_COST` over the stay (divided by the stay by the caller):
/// the pod's own if it is latency-critical, plus the rise it causes for each latency-critical
/// neighbour. Needs the node's measured load: without load facts the risk is unknown and left
/// out (fail open), as everywhere else.
fn qos_risk(
    features: &NodeFeatures,
    workload: WorkloadClass,
    cost: &CostModel,
    load: &LoadModel,
) -> f64 {
    let on = cost.eta_factors;
    let Some(utilisation) = features.predicted_utilisation.filter(|_| on.headroom) else {
        return 0.0;
    };
    let committed = features.committed_share.unwrap_or(0.0);
    let pod = features.pod_share.unwrap_or(0.0);
    // Measured load plus the pod's expected use of what it requests; without a measured usage
    // ratio, requests count as load.
    let before = utilisation.max(committed);
    let after = before + pod;
    let spike = if on.spike {
        features.spike_probability.unwrap_or(0.0).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let p_before = breach_probability(before, load).max(spike);
    let p_after = breach_probability(after, load).max(spike);
    let own = if workload.is_latency_critical() {
        p_after
    } else {
        0.0
    };
    // Unknown neighbours: a busy node is assumed to host one latency-critical pod.
    let neighbours = features
        .latency_critical_pods
        .map_or(if committed > 0.0 { 1.0 } else { 0.0 }, f64::from);
    cost.sla_violation_cost * (own + neighbours * (p_after - p_before).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn f() -> NodeFeatures<'static> {
        NodeFeatures {
            node: "n".into(),
            cost_per_hour: Some(4.0),
            gpus: Some(4),
            ..NodeFeatures::default()
        }
    }

    #[test]
    fn an_idle_node_costs_what_opening_it_costs_and_a_busy_one_the_pods_share() {
        let c = Config::default();
        let idle = NodeFeatures {
            committed_share: Some(0.0),
            pod_share: Some(0.25),
            ..f()
        };
        let busy = NodeFeatures {
            committed_share: Some(0.5),
            ..idle.clone()
        };
        let b = WorkloadClass::Batch;
        let opened = 4.0 * (0.25 + 0.75 * c.cost.open_node_idle_fraction);
        assert_eq!(
            cost_terms(&idle, b, None, &c.cost, &c.load).resources,
            opened
        );
        assert_eq!(cost_terms(&busy, b, None, &c.cost, &c.load).resources, 1.0);
        assert!(
            cost_terms(&busy, b, None, &c.cost, &c.load).eta(&c.cost, &c.eta)
                > cost_terms(&idle, b, None, &c.cost, &c.load).eta(&c.cost, &c.eta)
        );
        assert_eq!(
            cost_terms(&busy, b, None, &c.cost, &c.load).eta(&c.cost, &c.eta),
            (-1.0f64).exp()
        );
    }

    #[test]
    fn stranded_gpus_cost_by_scarcity_and_rank_as_fgd() {
        let c = Config::default();
        let with = |delta: f64, scarcity: f64| NodeFeatures {
            fragmentation_delta: Some(delta),
            pod_gpu_milli: 500.0,
            gpu_scarcity: scarcity,
            ..f()
        };
        let b = WorkloadClass::Batch;
        // Empty cluster: stranding costs nothing.
        assert_eq!(
            cost_terms(&with(-300.0, 0.0), b, None, &c.cost, &c.load).stranded_gpu,
            Some(0.0)
        );
        // Half full: (500 + 300)/1000 GPU at the node's $1/GPU-h, premium 1.
        let half = cost_terms(&with(-300.0, 0.5), b, None, &c.cost, &c.load)
            .stranded_gpu
            .unwrap();
        assert!((half - 0.8).abs() < 1e-12, "{half}");
        // Full cluster: the premium is capped at 99 GPU-hours per stranded GPU-hour.
        let full = cost_terms(&with(-300.0, 1.0), b, None, &c.cost, &c.load)
            .stranded_gpu
            .unwrap();
        assert!((full - 0.8 * 99.0).abs() < 1e-9, "{full}");
        // A larger gradient (FGD's better node) is the cheaper placement, never below zero.
        let better = cost_terms(&with(200.0, 1.0), b, None, &c.cost, &c.load)
            .stranded_gpu
            .unwrap();
        assert!(better < full);
        assert_eq!(
            cost_terms(&with(900.0, 1.0), b, None, &c.cost, &c.load).stranded_gpu,
            Some(0.0)
        );
        assert_eq!(
            cost_terms(&f(), b, None, &c.cost, &c.load).stranded_gpu,
            None
        );
    }

    #[test]
    fn the_scarcity_premium_is_the_congestion_price_and_stays_finite() {
        assert_eq!(scarcity_premium(0.0), 0.0);
        assert!((scarcity_premium(0.1) - 1.0 / 9.0).abs() < 1e-12);
        assert_eq!(scarcity_premium(0.5), 1.0);
        assert!((scarcity_premium(0.95) - 19.0).abs() < 1e-9);
        assert!((scarcity_premium(1.0) - 99.0).abs() < 1e-9);
        // Unknown scarcity is an empty cluster's (fail open, as everywhere in η).
        assert_eq!(scarcity_premium(f64::NAN), 0.0);
        // Monotone: a fuller cluster never prices stranding lower.
        let steps: Vec<f64> = (0..=100)
            .map(|i| scarcity_premium(f64::from(i) / 100.0))
            .collect();
        assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
    }

    #[test]
    fn stranding_is_priced_at_the_clusters_gpu_hour_so_fgds_node_is_the_cheaper() {
        let c = Config::default();
        let b = WorkloadClass::Batch;
        // A cheap-GPU node that fragments more and a dear one that fragments less.
        let node = |cost: f64, delta: f64, cluster: Option<f64>| NodeFeatures {
            cost_per_hour: Some(cost),
            fragmentation_delta: Some(delta),
            pod_gpu_milli: 1000.0,
            gpu_scarcity: 0.8,
            gpu_hour_price: cluster,
            ..f()
        };
        let stranded = |n: &NodeFeatures| {
            cost_terms(n, b, None, &c.cost, &c.load)
                .stranded_gpu
                .unwrap()
        };
        let (cheap, dear) = ((2.0, -600.0), (16.0, 0.0));
        // With each node's own price the fragmenting cheap node looks cheaper to strand on …
        assert!(stranded(&node(cheap.0, cheap.1, None)) < stranded(&node(dear.0, dear.1, None)));
        // … with the cluster's price the node FGD prefers (larger ΔF) is.
        let (a, d) = (
            stranded(&node(cheap.0, cheap.1, Some(2.0))),
            stranded(&node(dear.0, dear.1, Some(2.0))),
        );
        assert!(d < a, "{d} < {a}");
        assert!((a - 1.6 * 2.0 * 4.0).abs() < 1e-9, "{a}");
    }

    #[test]
    fn breach_risk_needs_measured_load_and_charges_neighbours_the_rise() {
        let c = Config::default();
        let lc = WorkloadClass::LatencyCritical;
        let loaded = |u: Option<f64>, n: Option<u32>| NodeFeatures {
            predicted_utilisation: u,
            committed_share: Some(0.6),
            pod_share: Some(0.2),
            latency_critical_pods: n,
            ..f()
        };
        // No measurement: unknown, left out.
        assert_eq!(
            cost_terms(&loaded(None, None), lc, None, &c.cost, &c.load).qos_risk,
            0.0
        );
        // Load 0.6 → 0.8 after: half way through the band, P = 0.5 for the pod itself.
        let own = cost_terms(&loaded(Some(0.3), Some(0)), lc, None, &c.cost, &c.load).qos_risk;
        assert!((own - 0.5 * c.cost.sla_violation_cost / c.cost.expected_stay_hours).abs() < 1e-9);
        // A batch pod pays only for the rise it causes its latency-critical neighbours.
        let b = WorkloadClass::Batch;
        assert_eq!(
            cost_terms(&loaded(Some(0.3), Some(0)), b, None, &c.cost, &c.load).qos_risk,
            0.0
        );
        let two = cost_terms(&loaded(Some(0.3), Some(2)), b, None, &c.cost, &c.load).qos_risk;
        assert!((two - 2.0 * own).abs() < 1e-9, "{two} vs {own}");
        // Below the band, nothing.
        let quiet = NodeFeatures {
            committed_share: Some(0.1),
            ..loaded(Some(0.1), Some(3))
        };
        assert_eq!(cost_terms(&quiet, lc, None, &c.cost, &c.load).qos_risk, 0.0);
    }

    #[test]
    fn spot_risk_grows_with_the_pools_rate_and_matters_most_for_latency_critical_pods() {
        let c = Config::default();
        let spot = |monthly: f64| NodeFeatures {
            spot: true,
            reclaim_rate_per_hour: Some(crate::node_labels::hourly_rate(monthly)),
            ..f()
        };
        let lc = WorkloadClass::LatencyCritical;
        let low = cost_terms(&spot(0.025), lc, None, &c.cost, &c.load).reclamation_risk;
        let high = cost_terms(&spot(0.25), lc, None, &c.cost, &c.load).reclamation_risk;
        assert!(low > 0.0 && high > 5.0 * low, "{low} {high}");
        let batch =
            cost_terms(&spot(0.25), WorkloadClass::Batch, None, &c.cost, &c.load).reclamation_risk;
        assert!(batch < high / 10.0, "{batch}");
        assert_eq!(
            cost_terms(&f(), lc, None, &c.cost, &c.load).reclamation_risk,
            0.0
        );
    }

    #[test]
    fn failures_above_the_prior_cost_and_a_clean_history_is_free() {
        let c = Config::default();
        let lc = WorkloadClass::LatencyCritical;
        let bad = OutcomeStats {
            successes: 0.0,
            failures: 5.0,
            as_of_ms: 0,
            ..OutcomeStats::default()
        };
        let good = OutcomeStats {
            successes: 20.0,
            failures: 0.0,
            as_of_ms: 0,
            ..OutcomeStats::default()
        };
        assert_eq!(
            cost_terms(&f(), lc, None, &c.cost, &c.load).failure_risk,
            0.0
        );
        assert_eq!(
            cost_terms(&f(), lc, Some(&good), &c.cost, &c.load).failure_risk,
            0.0
        );
        assert!(cost_terms(&f(), lc, Some(&bad), &c.cost, &c.load).failure_risk > 0.0);
    }

    #[test]
    fn eta_is_monotone_in_the_total_and_bounded() {
        let c = Config::default();
        let mut last = 1.0;
        for total in [0.0, 0.1, 1.0, 5.0, 50.0] {
            let t = CostTerms {
                resources: total,
                ..CostTerms::default()
            };
            let e = t.eta(&c.cost, &c.eta);
            assert!(e <= last && e >= c.eta.eta_floor, "{total}: {e}");
            last = e;
        }
        let nan = CostTerms {
            resources: f64::NAN,
            ..CostTerms::default()
        };
        assert_eq!(nan.eta(&c.cost, &c.eta), c.eta.eta_floor);
    }
}
