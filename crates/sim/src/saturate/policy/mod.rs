//! Scoring policies of the saturation protocol, one file each, as the ATC '23 authors'
//! simulator (`hkust-adsl/kubernetes-scheduler-simulator`) scores them: integer scores 0–100
//! (truncated as there), the highest wins, ties go to the run's seeded node order.
//!
//! Shared with the cost/QoS replay (`crate::policy`, which depends on this module and never the
//! other way) where the scoring is the same: the replay's first-fit, best-fit-atc and FGD score
//! with [`first_fit::score`], [`best_fit::score`] and [`fgd::state_verdict`]. Kept apart on purpose, because they reproduce the
//! authors' simulator where the replay reproduces kube-scheduler: the FGD policy itself (here a
//! share takes the first GPU of the best integer score and ties go to the seeded node order;
//! the replay's device plugin puts a share on its best-fit GPU and kube-scheduler's random
//! tie-break decides), random (here a seeded random score per candidate; the replay gives equal
//! scores to its random tie-break) and the colony (here no load, no outcomes, and the share's
//! GPU chosen by the gradient).

use aco_core::config::Config;
use aco_core::heuristic::{PodGpus, PodShape};

use super::node::SatNode;
use crate::cluster::{SimNode, SimPod};
use crate::trace::TracePod;

pub mod best_fit;
mod colony;
mod dot_product;
pub mod fgd;
pub mod first_fit;
mod gpu_clustering;
mod gpu_packing;
mod random;

pub use best_fit::BestFit;
pub use colony::SatColony;
pub use dot_product::DotProduct;
pub use fgd::Fgd;
pub use first_fit::FirstFit;
pub use gpu_clustering::GpuClustering;
pub use gpu_packing::GpuPacking;
pub use random::RandomScore;

/// The normalisation constants of the authors' simulator (`MaxSpecCpu`, `MaxSpecGpu`).
pub const MAX_SPEC_CPU: f64 = 128_000.0;
pub const MAX_SPEC_GPU: f64 = 8_000.0;
pub const MAX_NODE_SCORE: i64 = 100;

pub struct Ctx<'a> {
    pub nodes: &'a [SatNode],
    /// The extender's objects for the same nodes (labels, price) — the colony reads them.
    pub sim_nodes: &'a [SimNode],
    pub pod: &'a TracePod,
    pub sim_pod: &'a SimPod,
    pub shapes: &'a [PodShape],
    pub config: &'a Config,
    /// Decisions so far (the colony's clock).
    pub step: u64,
}

impl Ctx<'_> {
    pub fn pod_gpus(&self) -> PodGpus {
        pod_gpus(self.pod)
    }
}

pub fn pod_gpus(p: &TracePod) -> PodGpus {
    if p.num_gpu == 0 || p.gpu_milli == 0 {
        PodGpus {
            cpu_milli: p.cpu_milli,
            num_gpu: 0,
            gpu_milli: 0,
        }
    } else {
        PodGpus {
            cpu_milli: p.cpu_milli,
            num_gpu: p.num_gpu,
            gpu_milli: p.gpu_milli.min(1000),
        }
    }
}

/// A policy's verdict on one candidate: its score and, for a share, the GPU it would take
/// (`None`: the device plugin's best fit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub score: f64,
    pub gpu: Option<usize>,
}

impl Verdict {
    pub fn of(score: f64) -> Self {
        Self { score, gpu: None }
    }
}

pub trait SatPolicy: Send {
    fn name(&self) -> &'static str;
    fn score(&mut self, ctx: &Ctx, candidates: &[usize]) -> Vec<Verdict>;
    /// The pod was bound to `node` (after `score` on the same pod).
    fn placed(&mut self, _ctx: &Ctx, _node: usize) {}
}

pub const ALL: [&str; 8] = [
    "fgd",
    "best-fit",
    "dot-product",
    "gpu-packing",
    "gpu-clustering",
    "random",
    "first-fit",
    "colony",
];

pub fn by_name(name: &str, seed: u64) -> Option<Box<dyn SatPolicy>> {
    Some(match name {
        "fgd" => Box::new(Fgd::default()),
        "best-fit" => Box::new(BestFit),
        "dot-product" => Box::new(DotProduct),
        "gpu-packing" => Box::new(GpuPacking),
        "gpu-clustering" => Box::new(GpuClustering),
        "random" => Box::new(RandomScore::new(seed)),
        "first-fit" => Box::new(FirstFit),
        "colony" => Box::new(SatColony::new(seed, true)),
        "colony-nofrag" => Box::new(SatColony::new(seed, false)),
        "colony-raw" => Box::new(SatColony::raw(seed)),
        _ => return None,
    })
}
