//! A [`Scheduler`] that passes every call through unchanged and notes what the demo report
//! needs on the way: the marginal cost of each placement (the allocation is only visible at
//! that moment) and every tenant's pheromone table after each `every` placed pods. Reading
//! pheromones is read-only on the Worker and the native colony, so recording cannot change a
//! decision (`tests::recording_changes_no_placement`).

use std::collections::HashMap;

use rand::rngs::StdRng;

use crate::alloc::NodeAlloc;
use crate::cluster::{SimNode, SimPod, World};
use crate::engine::RunResult;
use crate::replay_record::{NodeInfo, Placed, PodRecord, ReplayRecord, TrailSample};
use crate::scheduler::{Scheduler, TenantTrails};
use crate::trace::Error;

pub struct Recording<'a> {
    inner: &'a mut dyn Scheduler,
    every: usize,
    /// Pod idx → 1-based position in arrival order.
    step_of: HashMap<usize, usize>,
    placed: usize,
    marginal: HashMap<usize, f64>,
    trails: Vec<TrailSample>,
}

impl<'a> Recording<'a> {
    /// Samples pheromones after every `every` placed pods (at least 1).
    pub fn new(inner: &'a mut dyn Scheduler, world: &World, every: usize) -> Self {
        let step_of = world
            .pods
            .iter()
            .enumerate()
            .map(|(i, p)| (p.idx, i + 1))
            .collect();
        Self {
            inner,
            every: every.max(1),
            step_of,
            placed: 0,
            marginal: HashMap::new(),
            trails: Vec::new(),
        }
    }

    /// The record of `result` (the run this scheduler took part in), with a last pheromone
    /// sample taken now unless one was just taken at the last step.
    pub fn finish(
        self,
        world: &World,
        result: &RunResult,
        title: String,
    ) -> Result<ReplayRecord, Error> {
        let Recording {
            inner,
            marginal,
            mut trails,
            ..
        } = self;
        // `placements` also lists pods placed again after an eviction: one step per pod, on the
        // node it ended on.
        let mut last_node: HashMap<&str, Option<&str>> = HashMap::new();
        for (pod, node) in &result.placements {
            last_node.insert(pod.as_str(), node.as_deref());
        }
        let steps = last_node.len();
        if trails.last().is_none_or(|s| s.step < steps) {
            trails.push(TrailSample {
                step: steps,
                tenants: inner.pheromones(world)?,
            });
        }
        let start_s = world.pods.first().map_or(0, |p| p.arrival_s());
        let by_name: HashMap<&str, &SimNode> =
            world.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        let pods = world
            .pods
            .iter()
            .filter_map(|pod| Some((pod, *last_node.get(pod.trace.name.as_str())?)))
            .enumerate()
            .map(|(i, (pod, node))| PodRecord {
                step: i + 1,
                hours: pod.arrival_s().saturating_sub(start_s) as f64 / 3600.0,
                tenant: pod.tenant.clone(),
                pod: pod.trace.name.clone(),
                placed: node.map(|name| {
                    let price = by_name.get(name).map_or(0.0, |n| n.price);
                    Placed {
                        node: name.to_string(),
                        price_per_h: price,
                        marginal_per_h: marginal.get(&pod.idx).copied().unwrap_or(price),
                    }
                }),
            })
            .collect();
        Ok(ReplayRecord {
            title,
            nodes: world
                .nodes
                .iter()
                .map(|n| NodeInfo {
                    name: n.name.clone(),
                    gpu_model: n.model.clone(),
                    price_per_h: n.price,
                })
                .collect(),
            tenants: world.tenants(),
            trails,
            pods,
        })
    }
}

/// The core's marginal cost (`heuristic/cost.rs`) from the exact allocation just after the
/// pod was bound: the whole price if it is the node's only pod, else the price times the pod's
/// largest share of the node's CPU, memory or GPUs.
pub fn marginal_cost_per_h(node: &SimNode, after: &NodeAlloc, pod: &SimPod) -> f64 {
    if after.pods.len() <= 1 {
        return node.price;
    }
    let share = |want: f64, have: f64| if have > 0.0 { want / have } else { 0.0 };
    let t = &pod.trace;
    let largest = share(t.cpu_milli as f64, node.cpu_milli as f64)
        .max(share(t.memory_mib as f64, node.memory_mib as f64))
        .max(share(t.gpu_units(), node.gpus as f64));
    node.price * largest.min(1.0)
}

impl Scheduler for Recording<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn report(
        &mut self,
        world: &World,
        reports: &[aco_core::api::nodes::NodeReport],
        now_ms: u64,
    ) -> Result<(), Error> {
        self.inner.report(world, reports, now_ms)
    }

    fn schedule(
        &mut self,
        world: &World,
        alloc: &[NodeAlloc],
        pod: &SimPod,
        candidates: &[usize],
        now_ms: u64,
        tie: &mut StdRng,
    ) -> Result<Option<usize>, Error> {
        self.inner
            .schedule(world, alloc, pod, candidates, now_ms, tie)
    }

    fn placed(
        &mut self,
        world: &World,
        alloc: &[NodeAlloc],
        pod: &SimPod,
        node: usize,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.inner.placed(world, alloc, pod, node, now_ms)?;
        self.marginal.insert(
            pod.idx,
            marginal_cost_per_h(&world.nodes[node], &alloc[node], pod),
        );
        self.placed += 1;
        if self.placed.is_multiple_of(self.every) {
            let step = self.step_of.get(&pod.idx).copied().unwrap_or(0);
            self.trails.push(TrailSample {
                step,
                tenants: self.inner.pheromones(world)?,
            });
        }
        Ok(())
    }

    fn outcome(
        &mut self,
        world: &World,
        pod: &SimPod,
        node: usize,
        outcome: aco_core::colony::Outcome,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.inner.outcome(world, pod, node, outcome, now_ms)
    }

    fn reclaimed(&mut self, world: &World, node: usize, now_ms: u64) -> Result<(), Error> {
        self.inner.reclaimed(world, node, now_ms)
    }

    fn pheromones(&mut self, world: &World) -> Result<TenantTrails, Error> {
        self.inner.pheromones(world)
    }

    fn tie_stats(&self) -> (usize, usize) {
        self.inner.tie_stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::WorldParams;
    use crate::engine::{run, SimParams};
    use crate::load::LoadModel;
    use crate::native::NativeScheduler;
    use crate::policy;
    use crate::predictor::PredictorKind;
    use crate::prices::PriceTable;

    fn sample_world() -> World {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let nodes = crate::trace::read_nodes(&root.join("data/openb-sample/nodes.csv")).unwrap();
        let pods = crate::trace::read_pods(&root.join("data/openb-sample/pods.csv"), 60).unwrap();
        let prices = PriceTable::load(&root.join("data/prices")).unwrap();
        World::build(&nodes, &pods, &prices, WorldParams::default())
    }

    fn colony(world: &World) -> NativeScheduler {
        NativeScheduler::new(
            policy::by_name("colony", 5).unwrap(),
            world.config.clone(),
            PredictorKind::Ema(0.5),
        )
    }

    #[test]
    fn recording_changes_no_placement_and_records_every_pod() {
        let world = sample_world();
        let params = SimParams {
            seed: 5,
            max_pods: Some(80),
            pheromone_samples: 1,
            ..SimParams::default()
        };
        let load = LoadModel {
            seed: 5,
            ..LoadModel::default()
        };
        let plain = run(&world, &load, &params, &mut colony(&world)).unwrap();

        let mut inner = colony(&world);
        let mut rec = Recording::new(&mut inner, &world, 7);
        let recorded = run(&world, &load, &params, &mut rec).unwrap();
        assert_eq!(plain.placements, recorded.placements);

        let record = rec.finish(&world, &recorded, "t".into()).unwrap();
        assert_eq!(record.pods.len(), 80);
        let placed = record.pods.iter().filter(|p| p.placed.is_some()).count();
        assert_eq!(placed, recorded.metrics.placed);
        // One sample per 7 placed pods, plus the final one (unless it fell on the last step).
        assert!(
            record.trails.len() == placed / 7 || record.trails.len() == placed / 7 + 1,
            "{}",
            record.trails.len()
        );
        assert_eq!(record.trails.last().unwrap().step, 80);
        assert!(record.trails.windows(2).all(|w| w[0].step < w[1].step));
        for p in record.pods.iter().filter_map(|p| p.placed.as_ref()) {
            assert!(
                p.marginal_per_h > 0.0 && p.marginal_per_h <= p.price_per_h + 1e-12,
                "{p:?}"
            );
        }
    }

    #[test]
    fn marginal_cost_is_the_full_price_alone_and_the_largest_share_when_shared() {
        let world = sample_world();
        let node = world.nodes.iter().find(|n| n.price > 0.0).unwrap();
        let pod = world
            .pods
            .iter()
            .find(|p| p.trace.num_gpu == 0 && p.trace.cpu_milli > 0)
            .unwrap();
        let mut alloc = NodeAlloc::new(node);
        alloc.pods.push(pod.idx);
        assert_eq!(marginal_cost_per_h(node, &alloc, pod), node.price);
        alloc.pods.push(usize::MAX);
        let expected = node.price
            * (pod.trace.cpu_milli as f64 / node.cpu_milli as f64)
                .max(pod.trace.memory_mib as f64 / node.memory_mib as f64)
                .min(1.0);
        assert!((marginal_cost_per_h(node, &alloc, pod) - expected).abs() < 1e-12);
    }
}
