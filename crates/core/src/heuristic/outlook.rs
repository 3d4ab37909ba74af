//! What η needs to know about the whole cluster, not one node: how scarce free GPUs are right
//! now, and what each spot pool has shown. Computed by whoever holds every node's facts (the
//! Worker from its isolate's copy, the simulator from its reporter's rounds) and passed in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::spot_risk::PoolHistory;
use crate::config::Config;
use crate::facts::NodeFacts;
use crate::node_labels::NodeProfile;
use crate::node_state::NodeState;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOutlook {
    /// Allocated GPU capacity over the cluster's GPU capacity, 0–1 (`None`: no GPU facts).
    /// Stranded GPU capacity is priced by it: near nothing in an empty cluster, at the GPU's
    /// full hourly price in a full one.
    pub gpu_scarcity: Option<f64>,
    /// What a GPU-hour costs in this cluster: the GPU nodes' prices over their GPUs (unlabelled
    /// nodes at `DEFAULT_COST_PER_HOUR`). Stranded capacity is priced at it wherever it is
    /// stranded: the GPU pods it turns away would pay the cluster's rate, not that node's
    /// (`None`: no GPU facts).
    #[serde(default)]
    pub gpu_hour_price: Option<f64>,
    /// Per spot pool (`spot_risk::pool_of`), its reclamations and observed node-hours.
    #[serde(default)]
    pub pools: BTreeMap<String, PoolHistory>,
    /// Per node, the run-time slowdown learned from every tenant's outcomes, where the holder of
    /// the outlook learns one (η's `slowdown` term reads it); empty otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_slowdowns: BTreeMap<String, f64>,
}

/// A node's GPU capacity and what of it is allocated, in milli-GPU: from the per-GPU free
/// shares when reported, else from the whole-GPU resources (`GPU_RESOURCES` without a `-milli`
/// suffix) of allocatable and requested. `None` for a node with no GPU.
pub fn gpu_allocation(state: &NodeState, config: &Config) -> Option<(f64, f64)> {
    allocation(
        state.gpu_free_milli.as_deref(),
        state.allocatable.as_ref().map(|a| &a.0),
        state.requested.as_ref().map(|r| &r.0),
        config,
    )
}

/// [`gpu_allocation`] from a node's facts record, its measurements taken only while fresh.
pub fn gpu_allocation_of_facts(
    facts: &NodeFacts,
    now_ms: u64,
    config: &Config,
) -> Option<(f64, f64)> {
    let ttl = config.facts_ttl_ms;
    allocation(
        facts
            .gpu_free_milli
            .as_ref()
            .and_then(|o| o.fresh(now_ms, ttl))
            .map(Vec::as_slice),
        facts.allocatable.as_ref(),
        facts.requested.as_ref().and_then(|o| o.fresh(now_ms, ttl)),
        config,
    )
}

fn allocation(
    free: Option<&[u32]>,
    allocatable: Option<&BTreeMap<String, i64>>,
    requested: Option<&BTreeMap<String, i64>>,
    config: &Config,
) -> Option<(f64, f64)> {
    if let Some(free) = free {
        if free.is_empty() {
            return None;
        }
        let cap = 1000.0 * free.len() as f64;
        let free: f64 = free.iter().map(|f| f64::from(*f).min(1000.0)).sum();
        return Some(((cap - free).max(0.0), cap));
    }
    let whole = |amounts: &BTreeMap<String, i64>| -> i64 {
        config
            .gpu_resources
            .iter()
            .filter(|r| !r.ends_with("-milli"))
            .map(|r| amounts.get(r).copied().unwrap_or(0))
            .max()
            .unwrap_or(0)
    };
    let cap = allocatable.map(whole).unwrap_or(0);
    if cap <= 0 {
        return None;
    }
    let used = requested.map(whole).unwrap_or(0);
    Some((1000.0 * used.clamp(0, cap) as f64, 1000.0 * cap as f64))
}

/// A GPU node's share of the cluster's GPU accounts: `(allocated, capacity)` milli-GPU and its
/// price per hour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuNodeAccount {
    pub allocated_milli: f64,
    pub capacity_milli: f64,
    pub cost_per_hour: f64,
}

impl GpuNodeAccount {
    fn of(
        allocation: Option<(f64, f64)>,
        cost_per_hour: Option<f64>,
        config: &Config,
    ) -> Option<Self> {
        allocation.map(|(allocated_milli, capacity_milli)| Self {
            allocated_milli,
            capacity_milli,
            cost_per_hour: cost_per_hour
                .unwrap_or(config.default_cost_per_hour)
                .max(0.0),
        })
    }
}

impl ClusterOutlook {
    /// The outlook's GPU figures (scarcity and the price of a GPU-hour) from every GPU node's
    /// account; no spot pools, no slowdowns.
    pub fn of_gpu_nodes(accounts: impl IntoIterator<Item = GpuNodeAccount>) -> Self {
        let (mut used, mut cap, mut price) = (0.0, 0.0, 0.0);
        for a in accounts {
            used += a.allocated_milli;
            cap += a.capacity_milli;
            price += a.cost_per_hour;
        }
        let has_gpus = cap > 0.0;
        Self {
            gpu_scarcity: has_gpus.then(|| (used / cap).clamp(0.0, 1.0)),
            gpu_hour_price: has_gpus.then(|| price / (cap / 1000.0)),
            pools: BTreeMap::new(),
            node_slowdowns: BTreeMap::new(),
        }
    }

    /// The outlook of the cluster whose every node's facts are `facts` (fresh measurements only).
    pub fn from_facts<'a>(
        facts: impl IntoIterator<Item = &'a NodeFacts>,
        pools: BTreeMap<String, PoolHistory>,
        now_ms: u64,
        config: &Config,
    ) -> Self {
        Self {
            pools,
            ..Self::of_gpu_nodes(facts.into_iter().filter_map(|f| {
                GpuNodeAccount::of(
                    gpu_allocation_of_facts(f, now_ms, config),
                    NodeProfile::of(&f.labels, config).cost_per_hour,
                    config,
                )
            }))
        }
    }

    /// The outlook of the cluster whose every node state is `states`.
    pub fn from_states<'a, 'n: 'a>(
        states: impl IntoIterator<Item = &'a NodeState<'n>>,
        pools: BTreeMap<String, PoolHistory>,
        config: &Config,
    ) -> Self {
        Self {
            pools,
            ..Self::of_gpu_nodes(states.into_iter().filter_map(|s| {
                GpuNodeAccount::of(gpu_allocation(s, config), s.profile.cost_per_hour, config)
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::ResourceAmounts;

    fn state(
        alloc: &[(&str, i64)],
        requested: &[(&str, i64)],
        free: Option<Vec<u32>>,
    ) -> NodeState<'static> {
        let amounts = |v: &[(&str, i64)]| {
            ResourceAmounts(v.iter().map(|(k, a)| (k.to_string(), *a)).collect())
        };
        NodeState {
            name: "n".into(),
            labels: Default::default(),
            allocatable: Some(amounts(alloc)),
            requested: Some(amounts(requested)),
            latency_us: None,
            load: None,
            gpu_free_milli: free,
            stale_facts: false,
            unknown: false,
            profile: Default::default(),
            committed_share: None,
        }
    }

    #[test]
    fn scarcity_counts_per_gpu_shares_where_known_and_whole_gpus_elsewhere() {
        let c = Config::default();
        let shares = state(&[("nvidia.com/gpu", 2)], &[], Some(vec![500, 1000]));
        assert_eq!(gpu_allocation(&shares, &c), Some((500.0, 2000.0)));
        let whole = state(&[("nvidia.com/gpu", 4)], &[("nvidia.com/gpu", 3)], None);
        assert_eq!(gpu_allocation(&whole, &c), Some((3000.0, 4000.0)));
        let cpu = state(&[("cpu", 8000)], &[("cpu", 1000)], None);
        assert_eq!(gpu_allocation(&cpu, &c), None);
        let o = ClusterOutlook::from_states([&shares, &whole, &cpu], BTreeMap::new(), &c);
        assert_eq!(o.gpu_scarcity, Some(3500.0 / 6000.0));
        let none = ClusterOutlook::from_states([&cpu], BTreeMap::new(), &c);
        assert_eq!(none.gpu_scarcity, None);
        assert_eq!(none.gpu_hour_price, None);
    }

    #[test]
    fn a_gpu_hour_costs_the_gpu_nodes_prices_over_their_gpus() {
        let c = Config::default();
        let priced = |price: &str, gpus: i64| {
            let mut s = state(&[("nvidia.com/gpu", gpus)], &[], None);
            let labels = [(c.cost_label.clone(), price.to_string())].into();
            s.profile = NodeProfile::of(&labels, &c);
            s
        };
        let (two, eight) = (priced("3.0", 2), priced("21.0", 8));
        // An unlabelled GPU node counts at DEFAULT_COST_PER_HOUR; a CPU node not at all.
        let unlabelled = state(&[("nvidia.com/gpu", 1)], &[], None);
        let cpu = state(&[("cpu", 8000)], &[], None);
        let o = ClusterOutlook::from_states([&two, &eight, &unlabelled, &cpu], BTreeMap::new(), &c);
        let expected = (3.0 + 21.0 + c.default_cost_per_hour) / 11.0;
        assert!(
            (o.gpu_hour_price.unwrap() - expected).abs() < 1e-12,
            "{o:?}"
        );
        assert_eq!(o.gpu_scarcity, Some(0.0));
    }
}
