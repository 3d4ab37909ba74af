//! The colony under the saturation protocol: one `TenantColony` per tenant, scores `τ^α·η^β`
//! mapped to 0–10 exactly as the Worker's `/v1/prioritize`, deposits through `confirm` on the
//! node bound. There is no load model here (pods never leave, nothing is measured), so η's
//! inputs are what the reporter would send about allocation: price and spot labels, committed
//! share, the pod's share, and — with `fragmentation` on — FGD's gradient from the per-GPU free
//! shares (`gpuFreeMilli`) against the trace's typical shapes. A share takes the GPU with the
//! best gradient (what an FGD-aware device plugin would do), else the best-fit GPU.
//!
//! `colony-raw` is an ablation, not something the extender can do: it binds the argmax of the
//! unrounded `τ^α·η^β`, measuring what kube-scheduler's 0–10 extender scores cost.

use std::borrow::Cow;
use std::collections::BTreeMap;

use aco_core::colony::{relative_desirabilities, Decision, TenantColony};
use aco_core::heuristic::{eta_terms, ClusterOutlook, GpuNodeAccount, NodeFeatures};
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::fgd::{fgd_verdict, FgdMemo, ShareGpu};
use super::{Ctx, SatPolicy, Verdict};

pub struct SatColony {
    pub colonies: BTreeMap<String, TenantColony>,
    pending: Option<(String, Decision)>,
    rng: StdRng,
    fragmentation: bool,
    /// Score with the unrounded desirabilities (ablation of the 0–10 mapping).
    raw: bool,
    memo: FgdMemo,
}

impl SatColony {
    pub fn new(seed: u64, fragmentation: bool) -> Self {
        Self {
            colonies: BTreeMap::new(),
            pending: None,
            rng: StdRng::seed_from_u64(seed ^ 0xC010_4E11),
            fragmentation,
            raw: false,
            memo: FgdMemo::new(),
        }
    }

    pub fn raw(seed: u64) -> Self {
        Self {
            raw: true,
            ..Self::new(seed, true)
        }
    }
}

fn share(used: f64, cap: f64) -> f64 {
    if cap <= 0.0 {
        0.0
    } else {
        (used / cap).clamp(0.0, 1.0)
    }
}

impl SatPolicy for SatColony {
    fn name(&self) -> &'static str {
        if self.raw {
            "colony-raw"
        } else if self.fragmentation {
            "colony"
        } else {
            "colony-nofrag"
        }
    }
    fn score(&mut self, ctx: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        self.memo.clear();
        let p = ctx.pod_gpus();
        let pod_gpu = (p.num_gpu * p.gpu_milli) as f64;
        let mut gpus = Vec::with_capacity(candidates.len());
        // The cluster's GPU scarcity and price of a GPU-hour, as the Worker computes them from
        // every node's facts (allocated GPU, CPU and memory of the GPU nodes).
        let outlook = ClusterOutlook::of_gpu_nodes(ctx.nodes.iter().zip(ctx.sim_nodes).filter_map(
            |(n, s)| {
                let cap = f64::from(n.gpu_cap());
                (cap > 0.0).then(|| GpuNodeAccount {
                    gpu_milli: (cap - f64::from(n.gpu_left()), cap),
                    cpu_milli: ((n.cpu_cap - n.cpu_left) as f64, n.cpu_cap as f64),
                    memory: ((n.mem_cap - n.mem_left) as f64, n.mem_cap as f64),
                    cost_per_hour: s.price,
                })
            },
        ));
        let features: Vec<NodeFeatures> = candidates
            .iter()
            .map(|c| {
                let n = &ctx.nodes[*c];
                let s = &ctx.sim_nodes[*c];
                let (cpu_cap, mem_cap, gpu_cap) =
                    (n.cpu_cap as f64, n.mem_cap as f64, n.gpu_cap() as f64);
                let committed = share((n.cpu_cap - n.cpu_left) as f64, cpu_cap)
                    .max(share((n.mem_cap - n.mem_left) as f64, mem_cap))
                    .max(share(gpu_cap - n.gpu_left() as f64, gpu_cap));
                let pod_share = share(p.cpu_milli as f64, cpu_cap)
                    .max(share(ctx.pod.memory_mib as f64, mem_cap))
                    .max(if pod_gpu > 0.0 {
                        share(pod_gpu, gpu_cap)
                    } else {
                        0.0
                    });
                let frag = if self.fragmentation {
                    fgd_verdict(&mut self.memo, ctx, *c, ShareGpu::BestGradient)
                } else {
                    None
                };
                gpus.push(frag.and_then(|(_, g)| g));
                NodeFeatures {
                    node: Cow::Borrowed(&s.name),
                    cost_per_hour: Some(s.price),
                    spot: s.spot,
                    predicted_utilisation: None,
                    spike_probability: None,
                    committed_share: Some(committed),
                    pod_share: Some(pod_share),
                    fragmentation_delta: frag.map(|(d, _)| d),
                    gpus: Some(n.gpu_free.len() as u32),
                    pod_gpu_milli: pod_gpu,
                    gpu_scarcity: outlook.gpu_scarcity.unwrap_or(0.0),
                    gpu_hour_price: outlook.gpu_hour_price,
                    reclaim_rate_per_hour: s
                        .spot
                        .then(|| aco_core::node_labels::prior_rate(&s.labels, &ctx.config.spot)),
                    latency_critical_pods: None,
                }
            })
            .collect();
        let tenant = ctx.sim_pod.demand.tenant.clone();
        let colony = self.colonies.entry(tenant.clone()).or_default();
        let pr = colony.prioritize(
            &features,
            ctx.sim_pod.demand.workload,
            &ctx.sim_pod.demand.key,
            ctx.step * 1000,
            ctx.config,
            &mut self.rng,
        );
        self.pending = Some((tenant, pr.decision));
        if self.raw {
            let terms: Vec<_> = features
                .iter()
                .map(|f| {
                    let stats = colony.trail_at(&f.node, ctx.step * 1000, &ctx.config.cost);
                    eta_terms(
                        f,
                        ctx.sim_pod.demand.workload,
                        stats.as_ref(),
                        &ctx.config.cost,
                        &ctx.config.load,
                    )
                })
                .collect();
            return relative_desirabilities(
                &terms,
                &ctx.config.colony,
                &ctx.config.cost,
                &ctx.config.eta,
            )
            .into_iter()
            .zip(gpus)
            .map(|(score, gpu)| Verdict { score, gpu })
            .collect();
        }
        pr.priorities
            .iter()
            .zip(gpus)
            .map(|(h, gpu)| Verdict {
                score: h.score as f64,
                gpu,
            })
            .collect()
    }
    fn placed(&mut self, ctx: &Ctx, node: usize) {
        let tenant = ctx.sim_pod.demand.tenant.clone();
        let pending = self
            .pending
            .take()
            .filter(|(t, _)| *t == tenant)
            .map(|(_, d)| d);
        let colony = self.colonies.entry(tenant).or_default();
        let _ = colony.confirm(
            pending.as_ref(),
            &ctx.sim_nodes[node].name,
            None,
            ctx.step * 1000,
            &ctx.config.cost,
        );
    }
}
