//! A cluster's node facts as a long-lived reader keeps them (the Worker's isolate): every record
//! in the Facts object's shards, each shard shared (`Rc`) so that a new version of the copy
//! shares the shards it did not change with the version requests may still be reading, and each
//! record's labels read once, when it arrives ([`ReadFacts`]), not by every verb over every
//! candidate.

use std::borrow::Cow;
use std::rc::Rc;

use super::FactsView;
use crate::config::{NodeKeys, SpotRisk};
use crate::facts::{FactsLookup, KeptFacts, NodeFacts, ReadFacts};
use crate::facts_shards::{shard_of, SHARDS};
use crate::node_labels::LabelReading;

/// One cluster's node facts, as of one version of a reader's copy.
#[derive(Debug, Clone)]
pub struct ClusterFacts {
    shards: Vec<Rc<KeptFacts>>,
}

impl Default for ClusterFacts {
    fn default() -> Self {
        Self {
            shards: vec![Rc::default(); SHARDS],
        }
    }
}

impl ClusterFacts {
    /// Every record, shard by shard.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeFacts> {
        self.shards
            .iter()
            .flat_map(|shard| shard.values().map(|r| &r.facts))
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.shards.iter().all(|s| s.is_empty())
    }

    /// Shard `id` replaced by `nodes` (as the Facts object serves it), each record's labels read
    /// under `config`. An id beyond the shards is ignored (another sharding's).
    pub fn replace_shard(
        &mut self,
        id: usize,
        nodes: Vec<NodeFacts>,
        node_keys: &NodeKeys,
        spot: &SpotRisk,
    ) {
        if let Some(slot) = self.shards.get_mut(id) {
            *slot = Rc::new(
                nodes
                    .into_iter()
                    .map(|f| (f.name.clone(), ReadFacts::read(f, node_keys, spot)))
                    .collect(),
            );
        }
    }

    /// Every record's labels read again under `config`.
    pub fn read_again(&mut self, node_keys: &NodeKeys, spot: &SpotRisk) {
        for shard in &mut self.shards {
            for record in Rc::make_mut(shard).values_mut() {
                record.read_again(node_keys, spot);
            }
        }
    }
}

/// The readings are those of the config the records were read under ([`ClusterFacts::read_again`]
/// when it changes).
impl FactsLookup for ClusterFacts {
    fn get(&self, name: &str) -> Option<&NodeFacts> {
        FactsLookup::get(&*self.shards[shard_of(name)], name)
    }

    fn get_read(
        &self,
        name: &str,
        node_keys: &NodeKeys,
        spot: &SpotRisk,
    ) -> Option<(&NodeFacts, Cow<'_, LabelReading>)> {
        FactsLookup::get_read(&*self.shards[shard_of(name)], name, node_keys, spot)
    }
}

impl FactsView for ClusterFacts {
    fn records(&self) -> impl Iterator<Item = &NodeFacts> {
        self.nodes()
    }
}
