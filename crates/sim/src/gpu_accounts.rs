//! The cluster outlook's per-node GPU accounts, kept between reports (speed).
//!
//! The reporter resends every node's facts before almost every decision, which makes the outlook
//! stale each time; recomputing it read the CPU and memory amounts and the cost label of every
//! node by name. A node's account (`GpuNodeAccount::of_facts`) depends only on its facts' values
//! and on whether its `requested` and per-GPU facts are fresh, so it is kept until either
//! changes. The sum runs over the nodes in cluster order, as `ClusterOutlook::from_facts` does,
//! so the outlook is the same to the last bit (the debug build checks every one).

use aco_core::config::{Config, FactsFreshness};
use aco_core::facts::NodeFacts;
use aco_core::heuristic::spot_risk::PoolHistory;
use aco_core::heuristic::{ClusterOutlook, GpuNodeAccount};
use std::collections::BTreeMap;

/// Per node (cluster order): its account and the freshness it was computed with.
#[derive(Debug, Clone, Default)]
pub struct GpuAccounts {
    kept: Vec<Option<Kept>>,
}

#[derive(Debug, Clone, Copy)]
struct Kept {
    fresh: Freshness,
    account: Option<GpuNodeAccount>,
}

/// Whether the node's `requested` and per-GPU free facts are present and fresh.
type Freshness = (bool, bool);

fn freshness(f: &NodeFacts, now_ms: u64, facts: &FactsFreshness) -> Freshness {
    let ttl = facts.facts_ttl_ms;
    (
        f.requested
            .as_ref()
            .is_some_and(|o| o.fresh(now_ms, ttl).is_some()),
        f.gpu_free_milli
            .as_ref()
            .is_some_and(|o| o.fresh(now_ms, ttl).is_some()),
    )
}

impl GpuAccounts {
    /// The values of `node`'s facts changed (or its facts are gone): its account is recomputed.
    pub fn forget(&mut self, node: usize) {
        if let Some(k) = self.kept.get_mut(node) {
            *k = None;
        }
    }

    /// `ClusterOutlook::from_facts(facts.iter().flatten(), pools, now_ms, config)`.
    /// Takes the whole Config, as `ClusterOutlook::from_facts` does.
    pub fn outlook(
        &mut self,
        facts: &[Option<NodeFacts>],
        pools: BTreeMap<String, PoolHistory>,
        now_ms: u64,
        config: &Config,
    ) -> ClusterOutlook {
        self.kept.resize(facts.len(), None);
        for (kept, f) in self.kept.iter_mut().zip(facts) {
            let Some(f) = f else {
                *kept = None;
                continue;
            };
            let fresh = freshness(f, now_ms, &config.facts);
            if kept.is_none_or(|k| k.fresh != fresh) {
                *kept = Some(Kept {
                    fresh,
                    account: GpuNodeAccount::of_facts(
                        f,
                        now_ms,
                        &config.facts,
                        &config.node_keys,
                        &config.cost,
                    ),
                });
            }
        }
        let outlook = ClusterOutlook {
            pools,
            ..ClusterOutlook::of_gpu_nodes(self.kept.iter().flatten().filter_map(|k| k.account))
        };
        debug_assert_eq!(
            outlook,
            ClusterOutlook::from_facts(
                facts.iter().flatten(),
                outlook.pools.clone(),
                now_ms,
                config
            ),
            "kept GPU accounts differ from the facts'"
        );
        outlook
    }
}
