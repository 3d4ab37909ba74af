//! The simulator's facts view (`aco_core::pipeline::FactsView`): every node's facts record by
//! node index (cluster order), as its reporter sent them, found by name for the pipeline. The
//! fast path keeps each GPU node's part of the cluster outlook between reports
//! ([`GpuAccounts`]); the reference path sums every node's each time, as the Worker does.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use aco_core::config::Config;
use aco_core::facts::{FactsLookup, NodeFacts};
use aco_core::heuristic::spot_risk::PoolHistory;
use aco_core::heuristic::ClusterOutlook;
use aco_core::pipeline::FactsView;

use crate::cluster::World;
use crate::gpu_accounts::GpuAccounts;

#[derive(Debug, Clone, Default)]
pub struct IndexedFacts {
    /// Per node (cluster order): its facts record, once reported.
    pub records: Vec<Option<NodeFacts>>,
    /// Node name → index.
    index: HashMap<String, usize>,
    /// The fast path's kept accounts (`None`: the reference path).
    accounts: Option<RefCell<GpuAccounts>>,
}

impl IndexedFacts {
    /// No facts yet for `world`'s nodes; `fast`: keep the outlook's accounts between reports.
    pub fn new(world: &World, fast: bool) -> Self {
        Self {
            records: vec![None; world.nodes.len()],
            index: world
                .nodes
                .iter()
                .map(|n| (n.name.clone(), n.idx))
                .collect(),
            accounts: fast.then(RefCell::default),
        }
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The values of `node`'s facts changed in what its outlook account reads.
    pub fn forget_account(&mut self, node: usize) {
        if let Some(a) = &self.accounts {
            a.borrow_mut().forget(node);
        }
    }
}

impl FactsLookup for IndexedFacts {
    fn get(&self, name: &str) -> Option<&NodeFacts> {
        self.records.get(*self.index.get(name)?)?.as_ref()
    }
}

impl FactsView for IndexedFacts {
    fn records(&self) -> impl Iterator<Item = &NodeFacts> {
        self.records.iter().flatten()
    }

    /// Takes the whole Config, as `ClusterOutlook::from_facts` does.
    fn outlook(
        &self,
        pools: BTreeMap<String, PoolHistory>,
        now_ms: u64,
        config: &Config,
    ) -> ClusterOutlook {
        match &self.accounts {
            Some(a) => a.borrow_mut().outlook(&self.records, pools, now_ms, config),
            None => {
                ClusterOutlook::from_facts(self.records.iter().flatten(), pools, now_ms, config)
            }
        }
    }
}
