//! A [`Scheduler`] that decides nothing: it puts each pod where a real kube-scheduler bound it,
//! so that the engine measures real bindings with the simulator's cost and load model.

use std::collections::HashMap;

use rand::rngs::StdRng;

use crate::alloc::NodeAlloc;
use crate::cluster::{SimPod, World};
use crate::scheduler::{Scheduler, TenantTrails};
use crate::trace::Error;

pub struct Given {
    name: String,
    /// Pod index → node index.
    node_of: HashMap<usize, usize>,
    /// Pods bound to a node the engine found full at their arrival, by name.
    pub not_replayed: Vec<String>,
}

impl Given {
    /// `bindings`: pod (trace) name → node name; pods absent were not bound.
    pub fn new(name: &str, world: &World, bindings: &HashMap<String, String>) -> Given {
        let node_index: HashMap<&str, usize> = world
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.idx))
            .collect();
        let node_of = world
            .pods
            .iter()
            .filter_map(|p| {
                let node = bindings.get(&p.trace.name)?;
                Some((p.idx, *node_index.get(node.as_str())?))
            })
            .collect();
        Given {
            name: name.to_owned(),
            node_of,
            not_replayed: Vec::new(),
        }
    }
}

impl Scheduler for Given {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn report(
        &mut self,
        _: &World,
        _: &[aco_core::api::nodes::NodeReport],
        _: u64,
    ) -> Result<(), Error> {
        Ok(())
    }

    fn report_batch(
        &mut self,
        _: &World,
        _: &crate::facts_report::ReportBatch,
        _: u64,
    ) -> Result<(), Error> {
        Ok(())
    }

    fn schedule(
        &mut self,
        _: &World,
        _: &[NodeAlloc],
        pod: &SimPod,
        candidates: &[usize],
        _: u64,
        _: &mut StdRng,
    ) -> Result<Option<usize>, Error> {
        let Some(&node) = self.node_of.get(&pod.idx) else {
            return Ok(None);
        };
        if candidates.binary_search(&node).is_ok() {
            Ok(Some(node))
        } else {
            self.not_replayed.push(pod.trace.name.clone());
            Ok(None)
        }
    }

    fn placed(
        &mut self,
        _: &World,
        _: &[NodeAlloc],
        _: &SimPod,
        _: usize,
        _: u64,
    ) -> Result<(), Error> {
        Ok(())
    }

    fn pheromones(&mut self, _: &World) -> Result<TenantTrails, Error> {
        Ok(TenantTrails::default())
    }
}
