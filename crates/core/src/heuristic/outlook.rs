//! What η needs to know about the whole cluster, not one node: how scarce free GPUs are right
//! now, and what each spot pool has shown. Computed by whoever holds every node's facts (the
//! Worker from its isolate's copy, the simulator from its reporter's rounds) and passed in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::spot_risk::PoolHistory;
use crate::config::{Config, CostModel, FactsFreshness, NodeKeys};
use crate::facts::NodeFacts;
use crate::k8s::ResourceAmounts;
use crate::node_labels;
use crate::node_state::NodeState;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOutlook {
    /// How scarce usable GPUs are, 0–1 (`None`: no GPU facts): on the GPU nodes, the largest of
    /// the allocated shares of GPU, CPU and memory capacity — a free GPU is usable only with
    /// CPU and memory beside it, so a cluster whose GPU nodes are out of CPU is as full for a
    /// GPU pod as one out of GPUs. Stranded GPU capacity is priced by it (near nothing in an
    /// empty cluster, dominant in a full one) and the idle-node charge fades with it.
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
}

/// A node's GPU capacity and what of it is allocated, in milli-GPU: from the per-GPU free
/// shares when reported, else from the whole-GPU resources (`GPU_RESOURCES` without a `-milli`
/// suffix) of allocatable and requested. `None` for a node with no GPU.
pub fn gpu_allocation(state: &NodeState, node_keys: &NodeKeys) -> Option<(f64, f64)> {
    allocation(
        state.gpu_free_milli.as_deref(),
        state.allocatable.as_deref(),
        state.requested.as_deref(),
        node_keys,
    )
}

/// [`gpu_allocation`] from a node's facts record, its measurements taken only while fresh.
pub fn gpu_allocation_of_facts(
    facts: &NodeFacts,
    now_ms: u64,
    freshness: &FactsFreshness,
    node_keys: &NodeKeys,
) -> Option<(f64, f64)> {
    let ttl = freshness.facts_ttl_ms;
    allocation(
        facts
            .gpu_free_milli
            .as_ref()
            .and_then(|o| o.fresh(now_ms, ttl))
            .map(Vec::as_slice),
        facts.allocatable.as_ref(),
        facts.requested.as_ref().and_then(|o| o.fresh(now_ms, ttl)),
        node_keys,
    )
}

fn allocation(
    free: Option<&[u32]>,
    allocatable: Option<&ResourceAmounts>,
    requested: Option<&ResourceAmounts>,
    node_keys: &NodeKeys,
) -> Option<(f64, f64)> {
    if let Some(free) = free {
        if free.is_empty() {
            return None;
        }
        let cap = 1000.0 * free.len() as f64;
        let free: f64 = free.iter().map(|f| f64::from(*f).min(1000.0)).sum();
        return Some(((cap - free).max(0.0), cap));
    }
    let whole = |amounts: &ResourceAmounts| -> i64 {
        node_keys
            .gpu_resources
            .iter()
            .filter(|r| !r.ends_with("-milli"))
            .map(|r| amounts.get(r))
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

/// Prices are summed in units of 2^-48 $/h: exactly, so in any order (a $10^6/h node is 2^68 of
/// them, 10^4 such nodes far below i128's range).
const PRICE_SCALE: f64 = (1u64 << 48) as f64;

/// A GPU node's part of the cluster's GPU accounts: `(allocated, capacity)` of its GPUs
/// (milli-GPU), CPU (milli) and memory (any unit, the same for both), and its price per hour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuNodeAccount {
    pub gpu_milli: (f64, f64),
    pub cpu_milli: (f64, f64),
    pub memory: (f64, f64),
    pub cost_per_hour: f64,
}

impl GpuNodeAccount {
    /// The account of the node whose facts are `facts` (fresh measurements only); `None` for a
    /// node with no GPU. What [`ClusterOutlook::from_facts`] sums.
    pub fn of_facts(
        facts: &NodeFacts,
        now_ms: u64,
        freshness: &FactsFreshness,
        node_keys: &NodeKeys,
        cost: &CostModel,
    ) -> Option<Self> {
        Self::of(
            gpu_allocation_of_facts(facts, now_ms, freshness, node_keys),
            facts.allocatable.as_ref(),
            facts
                .requested
                .as_ref()
                .and_then(|o| o.fresh(now_ms, freshness.facts_ttl_ms)),
            node_labels::cost_per_hour(&facts.labels, node_keys),
            cost,
        )
    }

    fn of(
        gpu: Option<(f64, f64)>,
        allocatable: Option<&ResourceAmounts>,
        requested: Option<&ResourceAmounts>,
        cost_per_hour: Option<f64>,
        cost: &CostModel,
    ) -> Option<Self> {
        let pair = |name: &str| {
            let cap = allocatable.map_or(0, |a| a.get(name)).max(0);
            let used = requested.map_or(0, |r| r.get(name));
            (used.clamp(0, cap) as f64, cap as f64)
        };
        gpu.map(|gpu_milli| Self {
            gpu_milli,
            cpu_milli: pair("cpu"),
            memory: pair("memory"),
            cost_per_hour: cost_per_hour.unwrap_or(cost.default_cost_per_hour).max(0.0),
        })
    }
}

impl ClusterOutlook {
    /// The outlook's GPU figures (scarcity and the price of a GPU-hour) from every GPU node's
    /// account; no spot pools. The same whatever order the accounts come in (the Worker holds
    /// the facts by shard, the simulator in cluster order): the amounts are whole numbers, exact
    /// in any order below 2^53, and the prices are summed in fixed point.
    pub fn of_gpu_nodes(accounts: impl IntoIterator<Item = GpuNodeAccount>) -> Self {
        let (mut gpu, mut cpu, mut memory, mut price) = ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0), 0i128);
        let add = |sum: &mut (f64, f64), (used, cap): (f64, f64)| {
            sum.0 += used;
            sum.1 += cap;
        };
        for a in accounts {
            add(&mut gpu, a.gpu_milli);
            add(&mut cpu, a.cpu_milli);
            add(&mut memory, a.memory);
            price += (a.cost_per_hour * PRICE_SCALE).round() as i128;
        }
        let share = |(used, cap): (f64, f64)| if cap > 0.0 { used / cap } else { 0.0 };
        let has_gpus = gpu.1 > 0.0;
        Self {
            gpu_scarcity: has_gpus.then(|| {
                share(gpu)
                    .max(share(cpu))
                    .max(share(memory))
                    .clamp(0.0, 1.0)
            }),
            gpu_hour_price: has_gpus.then(|| price as f64 / PRICE_SCALE / (gpu.1 / 1000.0)),
            pools: BTreeMap::new(),
        }
    }

    /// The outlook of the cluster whose every node's facts are `facts` (fresh measurements only).
    /// Takes the whole Config, as its callers (the handlers) hold it: it reads three groups
    /// (facts freshness, node keys, prices).
    pub fn from_facts<'a>(
        facts: impl IntoIterator<Item = &'a NodeFacts>,
        pools: BTreeMap<String, PoolHistory>,
        now_ms: u64,
        config: &Config,
    ) -> Self {
        Self {
            pools,
            ..Self::of_gpu_nodes(facts.into_iter().filter_map(|f| {
                GpuNodeAccount::of_facts(f, now_ms, &config.facts, &config.node_keys, &config.cost)
            }))
        }
    }

    /// The outlook of the cluster whose every node state is `states`.
    pub fn from_states<'a, 'n: 'a>(
        states: impl IntoIterator<Item = &'a NodeState<'n>>,
        pools: BTreeMap<String, PoolHistory>,
        node_keys: &NodeKeys,
        cost: &CostModel,
    ) -> Self {
        Self {
            pools,
            ..Self::of_gpu_nodes(states.into_iter().filter_map(|s| {
                GpuNodeAccount::of(
                    gpu_allocation(s, node_keys),
                    s.allocatable.as_deref(),
                    s.requested.as_deref(),
                    s.profile.cost_per_hour,
                    cost,
                )
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    use crate::node_labels::NodeProfile;

    fn state(
        alloc: &[(&str, i64)],
        requested: &[(&str, i64)],
        free: Option<Vec<u32>>,
    ) -> NodeState<'static> {
        let amounts =
            |v: &[(&str, i64)]| v.iter().map(|(k, a)| (*k, *a)).collect::<ResourceAmounts>();
        NodeState {
            name: "n".into(),
            labels: Default::default(),
            allocatable: Some(Cow::Owned(amounts(alloc))),
            requested: Some(Cow::Owned(amounts(requested))),
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
        assert_eq!(gpu_allocation(&shares, &c.node_keys), Some((500.0, 2000.0)));
        let whole = state(&[("nvidia.com/gpu", 4)], &[("nvidia.com/gpu", 3)], None);
        assert_eq!(gpu_allocation(&whole, &c.node_keys), Some((3000.0, 4000.0)));
        let cpu = state(&[("cpu", 8000)], &[("cpu", 1000)], None);
        assert_eq!(gpu_allocation(&cpu, &c.node_keys), None);
        let o = ClusterOutlook::from_states(
            [&shares, &whole, &cpu],
            BTreeMap::new(),
            &c.node_keys,
            &c.cost,
        );
        assert_eq!(o.gpu_scarcity, Some(3500.0 / 6000.0));
        let none = ClusterOutlook::from_states([&cpu], BTreeMap::new(), &c.node_keys, &c.cost);
        assert_eq!(none.gpu_scarcity, None);
        assert_eq!(none.gpu_hour_price, None);
    }

    #[test]
    fn gpus_without_cpu_beside_them_are_as_scarce_as_allocated_ones() {
        let c = Config::default();
        // Half the GPUs free, but the GPU nodes' CPU 90% requested; a busy CPU node does not count.
        let gpu_node = state(
            &[("nvidia.com/gpu", 4), ("cpu", 10_000), ("memory", 100)],
            &[("nvidia.com/gpu", 2), ("cpu", 9_000), ("memory", 10)],
            None,
        );
        let cpu_node = state(&[("cpu", 10_000)], &[("cpu", 10_000)], None);
        let o = ClusterOutlook::from_states(
            [&gpu_node, &cpu_node],
            BTreeMap::new(),
            &c.node_keys,
            &c.cost,
        );
        assert!((o.gpu_scarcity.unwrap() - 0.9).abs() < 1e-12, "{o:?}");
        // Memory counts the same way; GPUs stay the measure when they are the scarcest.
        let memory_bound = state(
            &[("nvidia.com/gpu", 4), ("memory", 100)],
            &[("nvidia.com/gpu", 1), ("memory", 80)],
            None,
        );
        let o =
            ClusterOutlook::from_states([&memory_bound], BTreeMap::new(), &c.node_keys, &c.cost);
        assert!((o.gpu_scarcity.unwrap() - 0.8).abs() < 1e-12, "{o:?}");
        let gpu_bound = state(
            &[("nvidia.com/gpu", 4), ("cpu", 8000)],
            &[("nvidia.com/gpu", 3)],
            None,
        );
        let o = ClusterOutlook::from_states([&gpu_bound], BTreeMap::new(), &c.node_keys, &c.cost);
        assert_eq!(o.gpu_scarcity, Some(0.75));
    }

    #[test]
    fn a_gpu_hour_costs_the_gpu_nodes_prices_over_their_gpus() {
        let c = Config::default();
        let priced = |price: &str, gpus: i64| {
            let mut s = state(&[("nvidia.com/gpu", gpus)], &[], None);
            let labels = [(c.node_keys.cost_label.clone(), price.to_string())].into();
            s.profile = Cow::Owned(NodeProfile::of(&labels, &c.node_keys, &c.spot));
            s
        };
        let (two, eight) = (priced("3.0", 2), priced("21.0", 8));
        // An unlabelled GPU node counts at DEFAULT_COST_PER_HOUR; a CPU node not at all.
        let unlabelled = state(&[("nvidia.com/gpu", 1)], &[], None);
        let cpu = state(&[("cpu", 8000)], &[], None);
        let o = ClusterOutlook::from_states(
            [&two, &eight, &unlabelled, &cpu],
            BTreeMap::new(),
            &c.node_keys,
            &c.cost,
        );
        let expected = (3.0 + 21.0 + c.cost.default_cost_per_hour) / 11.0;
        assert!(
            (o.gpu_hour_price.unwrap() - expected).abs() < 1e-12,
            "{o:?}"
        );
        assert_eq!(o.gpu_scarcity, Some(0.0));
    }
}
