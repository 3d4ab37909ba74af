//! What η needs to know about the whole cluster, not one node: how scarce free GPUs are right
//! now, and what each spot pool has shown. Computed by whoever holds every node's facts (the
//! Worker from its isolate's copy, the simulator from its reporter's rounds) and passed in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::spot_risk::PoolHistory;
use crate::config::Config;
use crate::facts::NodeFacts;
use crate::node_state::NodeState;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOutlook {
    /// Allocated GPU capacity over the cluster's GPU capacity, 0–1 (`None`: no GPU facts).
    /// Stranded GPU capacity is priced by it: near nothing in an empty cluster, at the GPU's
    /// full hourly price in a full one.
    pub gpu_scarcity: Option<f64>,
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

impl ClusterOutlook {
    /// The GPU scarcity of a cluster from its nodes' `(allocated, capacity)` milli-GPU.
    pub fn scarcity_of(allocations: impl IntoIterator<Item = (f64, f64)>) -> Option<f64> {
        let (used, cap) = allocations
            .into_iter()
            .fold((0.0, 0.0), |(u, c), (du, dc)| (u + du, c + dc));
        (cap > 0.0).then(|| (used / cap).clamp(0.0, 1.0))
    }

    /// The outlook of the cluster whose every node's facts are `facts` (fresh measurements only).
    pub fn from_facts<'a>(
        facts: impl IntoIterator<Item = &'a NodeFacts>,
        pools: BTreeMap<String, PoolHistory>,
        now_ms: u64,
        config: &Config,
    ) -> Self {
        Self {
            gpu_scarcity: Self::scarcity_of(
                facts
                    .into_iter()
                    .filter_map(|f| gpu_allocation_of_facts(f, now_ms, config)),
            ),
            pools,
            node_slowdowns: BTreeMap::new(),
        }
    }

    /// The outlook of the cluster whose every node state is `states`.
    pub fn from_states<'a, 'n: 'a>(
        states: impl IntoIterator<Item = &'a NodeState<'n>>,
        pools: BTreeMap<String, PoolHistory>,
        config: &Config,
    ) -> Self {
        Self {
            gpu_scarcity: Self::scarcity_of(
                states.into_iter().filter_map(|s| gpu_allocation(s, config)),
            ),
            pools,
            node_slowdowns: BTreeMap::new(),
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
    }
}
