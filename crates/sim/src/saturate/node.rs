//! One GPU node under the saturation protocol: what is left of CPU, memory and each physical
//! GPU, and which pod classes it hosts (GPU Clustering reads them).

use crate::trace::{TraceNode, TracePod};

/// Pod classes as GPU Clustering sees them: no GPU, a GPU share, or k whole GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PodClass {
    NoGpu,
    Share,
    Whole(u32),
}

impl PodClass {
    /// The milli-GPU a pod of this class holds once bound: its share, or k whole GPUs.
    pub fn allocated_milli(p: &TracePod) -> u32 {
        match Self::of(p) {
            Self::NoGpu => 0,
            Self::Share => p.gpu_milli,
            Self::Whole(k) => 1000 * k,
        }
    }

    pub fn of(p: &TracePod) -> Self {
        if p.num_gpu == 0 || p.gpu_milli == 0 {
            Self::NoGpu
        } else if p.is_gpu_share() {
            Self::Share
        } else {
            Self::Whole(p.num_gpu)
        }
    }
}

#[derive(Debug, Clone)]
pub struct SatNode {
    pub idx: usize,
    pub model: Option<String>,
    pub cpu_cap: i64,
    pub mem_cap: i64,
    pub cpu_left: i64,
    pub mem_left: i64,
    /// Free milli-GPU per physical GPU.
    pub gpu_free: Vec<u32>,
    /// Pod classes hosted (count per class) — GPU Clustering's affinity.
    pub classes: Vec<(PodClass, u32)>,
    pub pods: usize,
    /// Bumped on every change (memo key for per-node caches).
    pub version: u64,
}

impl SatNode {
    pub fn new(idx: usize, n: &TraceNode) -> Self {
        Self {
            idx,
            model: n.model.clone(),
            cpu_cap: n.cpu_milli,
            mem_cap: n.memory_mib,
            cpu_left: n.cpu_milli,
            mem_left: n.memory_mib,
            gpu_free: vec![1000; n.gpus as usize],
            classes: Vec::new(),
            pods: 0,
            version: 0,
        }
    }

    pub fn gpu_left(&self) -> u32 {
        self.gpu_free.iter().sum()
    }

    pub fn gpu_cap(&self) -> u32 {
        1000 * self.gpu_free.len() as u32
    }

    pub fn fully_free_gpus(&self) -> usize {
        self.gpu_free.iter().filter(|g| **g == 1000).count()
    }

    /// kube-scheduler's fit plus the GPU-share device plugin: CPU, memory, GPU model, and GPUs
    /// (a share needs one GPU with room; k whole GPUs need k fully free GPUs).
    pub fn fits(&self, p: &TracePod) -> bool {
        if self.cpu_left < p.cpu_milli || self.mem_left < p.memory_mib {
            return false;
        }
        if let Some(spec) = &p.gpu_spec {
            if p.num_gpu > 0
                && !self
                    .model
                    .as_ref()
                    .is_some_and(|m| spec.iter().any(|s| s == m))
            {
                return false;
            }
        }
        match PodClass::of(p) {
            PodClass::NoGpu => true,
            PodClass::Share => self.gpu_free.iter().any(|g| *g >= p.gpu_milli),
            PodClass::Whole(k) => self.fully_free_gpus() >= k as usize,
        }
    }

    /// The GPU a share takes when the policy does not choose: best fit among GPUs with room
    /// (least free, lowest index on ties) — the device plugin's default.
    pub fn best_fit_gpu(&self, milli: u32) -> Option<usize> {
        (0..self.gpu_free.len())
            .filter(|i| self.gpu_free[*i] >= milli)
            .min_by_key(|i| (self.gpu_free[*i], *i))
    }

    /// Binds the pod; `share_gpu` is the GPU a share goes to (whole GPUs: the first free ones).
    pub fn place(&mut self, p: &TracePod, share_gpu: Option<usize>) -> u32 {
        self.cpu_left -= p.cpu_milli;
        self.mem_left -= p.memory_mib;
        self.pods += 1;
        self.version += 1;
        let class = PodClass::of(p);
        match self.classes.iter_mut().find(|(c, _)| *c == class) {
            Some((_, n)) => *n += 1,
            None => self.classes.push((class, 1)),
        }
        match class {
            PodClass::NoGpu => 0,
            PodClass::Share => {
                let g = share_gpu
                    .filter(|g| self.gpu_free[*g] >= p.gpu_milli)
                    .or_else(|| self.best_fit_gpu(p.gpu_milli))
                    .expect("share fits");
                self.gpu_free[g] -= p.gpu_milli;
                p.gpu_milli
            }
            PodClass::Whole(k) => {
                let mut left = k;
                for g in self.gpu_free.iter_mut() {
                    if left > 0 && *g == 1000 {
                        *g = 0;
                        left -= 1;
                    }
                }
                1000 * k
            }
        }
    }
}
