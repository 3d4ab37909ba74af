//! The exact allocation of one node as kube-scheduler's cache holds it: CPU, memory, pods and
//! used milli-GPU per physical GPU (a share sits on one GPU, whole GPUs are whole).

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::cluster::{SimNode, SimPod, GPU_MILLI_RESOURCE, GPU_RESOURCE};

/// The exact allocation of one node, as kube-scheduler's cache holds it.
#[derive(Debug, Clone, Default)]
pub struct NodeAlloc {
    pub cpu_used: i64,
    pub mem_used: i64,
    /// Used milli-GPU per physical GPU.
    pub gpu_used: Vec<u32>,
    pub pods: Vec<usize>,
}

impl NodeAlloc {
    pub fn new(node: &SimNode) -> Self {
        Self {
            gpu_used: vec![0; node.gpus as usize],
            ..Self::default()
        }
    }

    /// Free milli-GPU per physical GPU, as the reporter's `gpuFreeMilli` (None without GPUs).
    pub fn gpu_free_milli(&self) -> Option<Vec<u32>> {
        (!self.gpu_used.is_empty()).then(|| self.gpu_free_shares().collect())
    }

    /// The free milli-GPU of each physical GPU, in order.
    pub fn gpu_free_shares(&self) -> impl Iterator<Item = u32> + '_ {
        self.gpu_used.iter().map(|u| 1000u32.saturating_sub(*u))
    }

    /// [`NodeAlloc::gpu_free_milli`] written into `into` (emptied first), reusing its buffer: the
    /// reporter resends every GPU node's shares before almost every decision. False without GPUs.
    pub fn gpu_free_milli_into(&self, into: &mut Vec<u32>) -> bool {
        into.clear();
        into.extend(self.gpu_free_shares());
        !self.gpu_used.is_empty()
    }

    pub fn gpu_used_milli(&self) -> u32 {
        self.gpu_used.iter().sum()
    }

    /// GPUs to take for the pod: `(gpu index, milli)`; `None` when it does not fit.
    fn gpu_slots(&self, pod: &SimPod) -> Option<Vec<(usize, u32)>> {
        let t = &pod.trace;
        if t.num_gpu == 0 {
            return Some(Vec::new());
        }
        if t.is_gpu_share() {
            // Best fit among GPUs with room for the share (lowest index on ties).
            return self
                .gpu_used
                .iter()
                .enumerate()
                .filter(|(_, u)| 1000 - **u >= t.gpu_milli)
                .max_by_key(|(i, u)| (**u, Reverse(*i)))
                .map(|(i, _)| vec![(i, t.gpu_milli)]);
        }
        let free: Vec<usize> = self
            .gpu_used
            .iter()
            .enumerate()
            .filter(|(_, u)| **u == 0)
            .map(|(i, _)| i)
            .collect();
        (free.len() >= t.num_gpu as usize).then(|| {
            free[..t.num_gpu as usize]
                .iter()
                .map(|i| (*i, 1000))
                .collect()
        })
    }

    /// kube-scheduler's own fit check (NodeResourcesFit plus the GPU-share device plugin).
    pub fn fits(&self, node: &SimNode, pod: &SimPod) -> bool {
        let t = &pod.trace;
        self.pods.len() < 110
            && self.cpu_used + t.cpu_milli <= node.cpu_milli
            && self.mem_used + t.memory_mib <= node.memory_mib
            && self.gpus_fit(pod)
    }

    /// Whether the pod's GPUs fit, without building the slot list (the hot path of every decision).
    pub fn gpus_fit(&self, pod: &SimPod) -> bool {
        let t = &pod.trace;
        if t.num_gpu == 0 {
            true
        } else if t.is_gpu_share() {
            self.gpu_used.iter().any(|u| 1000 - *u >= t.gpu_milli)
        } else {
            self.gpu_used.iter().filter(|u| **u == 0).count() >= t.num_gpu as usize
        }
    }

    pub fn place(&mut self, pod: &SimPod) -> Vec<(usize, u32)> {
        let slots = self.gpu_slots(pod).expect("placed pods fit");
        for (i, m) in &slots {
            self.gpu_used[*i] += m;
        }
        self.cpu_used += pod.trace.cpu_milli;
        self.mem_used += pod.trace.memory_mib;
        self.pods.push(pod.idx);
        slots
    }

    pub fn remove(&mut self, pod: &SimPod, slots: &[(usize, u32)]) {
        for (i, m) in slots {
            self.gpu_used[*i] -= m;
        }
        self.cpu_used -= pod.trace.cpu_milli;
        self.mem_used -= pod.trace.memory_mib;
        self.pods.retain(|p| *p != pod.idx);
    }

    /// What the in-cluster reporter says is requested on the node: totals; a partly used GPU
    /// counts as a used whole GPU.
    pub fn requested(&self) -> BTreeMap<String, String> {
        let mut r = BTreeMap::new();
        if self.pods.is_empty() {
            return r;
        }
        r.insert("cpu".into(), format!("{}m", self.cpu_used));
        r.insert("memory".into(), format!("{}Mi", self.mem_used));
        r.insert("pods".into(), self.pods.len().to_string());
        if !self.gpu_used.is_empty() {
            r.insert(
                GPU_RESOURCE.into(),
                self.gpu_used.iter().filter(|u| **u > 0).count().to_string(),
            );
            r.insert(GPU_MILLI_RESOURCE.into(), self.gpu_used_milli().to_string());
        }
        r
    }
}
