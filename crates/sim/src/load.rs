//! The load model. The OpenB trace has no utilisation signal, so **all of this is modelled**:
//!
//! A pod's utilisation relative to its request, sampled on a grid of `bucket_s` seconds, is
//!
//! ```text
//! u(t) = clamp( base · (1 + A·sin(2π t / 24h + φ)) · (1 + σ·ε_t) + spike(t),  0, cap )
//! ```
//!
//! * `base` — per pod, uniform in `ls_base` for LS pods (services provisioned for their peak)
//!   and in `other_base` for everything else (batch/training runs near their request);
//! * `A`, `φ` — diurnal amplitude and a per-pod phase (uniform);
//! * `ε_t` — per bucket, uniform in [−1, 1);
//! * `spike(t)` — a spike starts in a bucket with probability `spike_rate_per_h · bucket_s / 3600`,
//!   lasts a uniform 1..=`spike_max_buckets` buckets and adds a uniform `spike_magnitude` × request;
//! * `cap` — pods may burst above their request up to `cap` × request (CPU limits above requests).
//!
//! Everything is a pure function of `(seed, pod, bucket)` (stateless hashing), so any time can be
//! evaluated in any order and a run is reproducible from its seed.
//!
//! A **node's utilisation** is the larger of its CPU and GPU utilisation, each
//! `Σ_pods request_r · u_pod(t) / allocatable_r`, clamped to 1. Memory is not modelled as load
//! (it is not bursty in the same way and does not drive latency here).
//!
//! **Real-shape variant** (`usage`, [`crate::usage`]): instead of the sine, noise and spikes, a
//! pod follows a real cluster-average CPU series `r` (relative to its mean, so mean(r) = 1):
//!
//! ```text
//! u(t) = clamp( base · (1 + k · (r(t + o) − 1)),  0, cap )
//! ```
//!
//! * `base` — as above (the pod's mean level: the real series only gives the shape);
//! * `o` — per pod, uniform over the series' cycle (whole seconds): pods do not move in
//!   lockstep, each one sees the real dynamics from a different point of the trace (the files
//!   are cluster averages and have no per-machine variation to draw on);
//! * `k` — per pod, uniform in `usage_share`: the pod's share of the real series' own
//!   variability (k = 1 keeps its coefficient of variation; the default range has mean 1).
//!
//! The derivation is per pod, the load model's unit, so the engine is unchanged: a node hosting
//! one pod shows the real series' shape (scaled, and clamped to 1); a node with several pods the
//! request-weighted sum of several offsets of it, which is smoother. Still a pure function of
//! `(seed, pod, t)`.

use std::path::Path;
use std::sync::Arc;

use crate::rng;
use crate::usage::UsageSeries;

#[derive(Debug, Clone, PartialEq)]
pub struct LoadModel {
    pub seed: u64,
    pub bucket_s: u64,
    pub ls_base: (f64, f64),
    pub other_base: (f64, f64),
    pub diurnal_amplitude: f64,
    pub noise: f64,
    pub spike_rate_per_h: f64,
    pub spike_max_buckets: u64,
    pub spike_magnitude: (f64, f64),
    pub cap: f64,
    /// The real series pods follow instead of the synthetic shape (`None`: synthetic).
    pub usage: Option<Arc<UsageSeries>>,
    /// Range of a pod's share of the real series' variability (`k` above).
    pub usage_share: (f64, f64),
}

impl Default for LoadModel {
    fn default() -> Self {
        Self {
            seed: 1,
            bucket_s: 15,
            ls_base: (0.25, 0.65),
            other_base: (0.4, 0.9),
            diurnal_amplitude: 0.2,
            noise: 0.1,
            spike_rate_per_h: 2.0,
            spike_max_buckets: 8,
            spike_magnitude: (0.3, 0.8),
            cap: 1.3,
            usage: None,
            usage_share: (0.5, 1.5),
        }
    }
}

const DAY_S: f64 = 86_400.0;

/// A pod's fixed load parameters, drawn once from `(seed, pod)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodLoad {
    pub key: u64,
    pub base: f64,
    pub phase: f64,
    /// Offset into the real series, seconds (0 without one).
    pub offset_s: f64,
    /// Share of the real series' variability.
    pub share: f64,
}

fn unit_of(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

impl LoadModel {
    pub fn pod(&self, pod_key: u64, ls: bool) -> PodLoad {
        let (lo, hi) = if ls { self.ls_base } else { self.other_base };
        PodLoad {
            key: rng::hash(&[self.seed, pod_key, 100]),
            base: rng::range(&[self.seed, pod_key, 101], lo, hi),
            phase: rng::range(&[self.seed, pod_key, 102], 0.0, std::f64::consts::TAU),
            offset_s: self.usage.as_ref().map_or(0.0, |u| {
                rng::range(&[self.seed, pod_key, 103], 0.0, u.span_s()).floor()
            }),
            share: rng::range(
                &[self.seed, pod_key, 104],
                self.usage_share.0,
                self.usage_share.1,
            ),
        }
    }

    /// Utilisation of pod `pod_key` (a stable id) relative to its request at time `t_s`.
    pub fn pod_utilisation(&self, pod_key: u64, ls: bool, t_s: u64) -> f64 {
        self.utilisation(&self.pod(pod_key, ls), t_s)
    }

    pub fn utilisation(&self, p: &PodLoad, t_s: u64) -> f64 {
        if let Some(series) = &self.usage {
            let r = series.relative_at(t_s as f64 + p.offset_s);
            return (p.base * (1.0 + p.share * (r - 1.0))).clamp(0.0, self.cap);
        }
        let bucket = t_s / self.bucket_s.max(1);
        let diurnal = 1.0
            + self.diurnal_amplitude
                * ((t_s as f64 / DAY_S) * std::f64::consts::TAU + p.phase).sin();
        let noise = 1.0
            + self.noise
                * (2.0
                    * unit_of(rng::splitmix(
                        p.key ^ bucket.wrapping_mul(0xA24B_AED4_963E_E407),
                    ))
                    - 1.0);
        let u = p.base * diurnal * noise + self.spike_of(p.key, bucket);
        u.clamp(0.0, self.cap)
    }

    /// The largest [`LoadModel::utilisation`] of the pod at any time: diurnal and noise at their
    /// peaks plus the largest spike, capped (lets the monitor skip nodes that cannot cross a
    /// threshold without evaluating them).
    pub fn utilisation_bound(&self, p: &PodLoad) -> f64 {
        let spike = self.spike_magnitude.0.max(self.spike_magnitude.1).max(0.0);
        (p.base * (1.0 + self.diurnal_amplitude.abs()) * (1.0 + self.noise.abs()) + spike)
            .clamp(0.0, self.cap)
    }

    /// The spike term in `bucket` (0 outside spikes) for the pod's hashed key.
    pub fn spike_of(&self, key: u64, bucket: u64) -> f64 {
        let p_start = (self.spike_rate_per_h * self.bucket_s as f64 / 3600.0).min(1.0);
        let max_len = self.spike_max_buckets.max(1);
        let mut total: f64 = 0.0;
        for start in bucket.saturating_sub(max_len - 1)..=bucket {
            let h = rng::splitmix(
                key ^ 0x5851_F42D_4C95_7F2D ^ start.wrapping_mul(0x9FB2_1C65_1E98_DF25),
            );
            if unit_of(h) < p_start {
                let h2 = rng::splitmix(h);
                let len = 1 + (h2 & 0xFFFF) % max_len;
                if start + len > bucket {
                    let (lo, hi) = self.spike_magnitude;
                    total = total.max(lo + (hi - lo) * unit_of(rng::splitmix(h2)));
                }
            }
        }
        total
    }

    /// Whether a spike starts in `bucket` (for tests and documentation).
    pub fn spike_starts(&self, key: u64, bucket: u64) -> bool {
        let p_start = (self.spike_rate_per_h * self.bucket_s as f64 / 3600.0).min(1.0);
        unit_of(rng::splitmix(
            key ^ 0x5851_F42D_4C95_7F2D ^ bucket.wrapping_mul(0x9FB2_1C65_1E98_DF25),
        )) < p_start
    }
}

/// What a pod contributes to its node's load: requests in the dimensions that carry load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadShare {
    pub pod_key: u64,
    pub load: PodLoad,
    pub cpu_milli: f64,
    pub gpu_milli: f64,
}

/// Node utilisation = max(CPU, GPU) of `Σ request · u / allocatable`, clamped to [0, 1].
pub fn node_utilisation(
    model: &LoadModel,
    pods: &[LoadShare],
    cpu_alloc_milli: f64,
    gpu_alloc_milli: f64,
    t_s: u64,
) -> f64 {
    let (mut cpu, mut gpu) = (0.0, 0.0);
    for p in pods {
        let u = model.utilisation(&p.load, t_s);
        cpu += p.cpu_milli * u;
        gpu += p.gpu_milli * u;
    }
    let c = if cpu_alloc_milli > 0.0 {
        cpu / cpu_alloc_milli
    } else {
        0.0
    };
    let g = if gpu_alloc_milli > 0.0 {
        gpu / gpu_alloc_milli
    } else {
        0.0
    };
    c.max(g).clamp(0.0, 1.0)
}

/// Load models by name: `synthetic` (the default model) or `usage:<series>` (the default model's
/// pod bases with the shape of the shipped series `<series>` from `dir`). Labels are the names.
pub fn load_models(specs: &[String], dir: &Path) -> Result<Vec<(String, LoadModel)>, String> {
    specs
        .iter()
        .map(|spec| {
            let spec = spec.trim();
            let model = match spec.strip_prefix("usage:") {
                None if spec == "synthetic" => LoadModel::default(),
                None => {
                    return Err(format!(
                        "unknown load model {spec:?}; use synthetic or usage:<series>"
                    ))
                }
                Some(name) => LoadModel {
                    usage: Some(Arc::new(UsageSeries::load(dir, name)?)),
                    ..LoadModel::default()
                },
            };
            Ok((spec.to_string(), model))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A day-long 10 s series with a diurnal swing, autocorrelated wander and a burst every
    /// ~17 minutes — small enough to build inline, shaped like the real files.
    fn day_series() -> Arc<UsageSeries> {
        let mut text = String::from("cpu_util_percent,mem\n");
        let mut wander = 0.0f64;
        for i in 0..8640u64 {
            wander = 0.95 * wander + 2.0 * (rng::unit(&[9, i]) - 0.5);
            let burst = if i % 100 < 3 { 15.0 } else { 0.0 };
            let x =
                40.0 + 10.0 * (i as f64 / 8640.0 * std::f64::consts::TAU).sin() + wander + burst;
            text += &format!("{x},50\n");
        }
        Arc::new(UsageSeries::parse("day", "day.csv", &text, "cpu_util_percent", 10).unwrap())
    }

    fn mean_sd(v: &[f64]) -> (f64, f64) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (
            m,
            (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt(),
        )
    }

    #[test]
    fn usage_shape_is_seeded_per_pod() {
        let m = LoadModel {
            usage: Some(day_series()),
            ..LoadModel::default()
        };
        let a: Vec<f64> = (0..400)
            .map(|t| m.pod_utilisation(3, true, t * 15))
            .collect();
        let b: Vec<f64> = (0..400)
            .rev()
            .map(|t| m.pod_utilisation(3, true, t * 15))
            .rev()
            .collect();
        assert_eq!(a, b, "order-free");
        let again = LoadModel {
            usage: Some(day_series()),
            ..LoadModel::default()
        };
        assert_eq!(
            a,
            (0..400)
                .map(|t| again.pod_utilisation(3, true, t * 15))
                .collect::<Vec<_>>()
        );
        let other_seed = LoadModel {
            seed: 2,
            ..m.clone()
        };
        assert_ne!(m.pod(3, true).offset_s, other_seed.pod(3, true).offset_s);
        assert_ne!(
            a,
            (0..400)
                .map(|t| other_seed.pod_utilisation(3, true, t * 15))
                .collect::<Vec<_>>()
        );
        assert_ne!(
            m.pod(3, true).offset_s,
            m.pod(4, true).offset_s,
            "pods see different stretches"
        );
    }

    #[test]
    fn usage_shape_keeps_the_series_mean_and_variability() {
        let series = day_series();
        // No clamping in range: base 0.4, share 1 → u = 0.4 · r stays well inside [0, cap].
        let m = LoadModel {
            usage: Some(series.clone()),
            ls_base: (0.4, 0.4),
            usage_share: (1.0, 1.0),
            ..LoadModel::default()
        };
        // One full cycle on the simulator's 15 s grid (a day = 5,760 buckets).
        let u: Vec<f64> = (0..5760)
            .map(|b| m.pod_utilisation(11, true, b * 15))
            .collect();
        let (mean, sd) = mean_sd(&u);
        assert!((mean - 0.4).abs() < 0.4 * 0.01, "mean {mean}");
        let want_sd = 0.4 * series.cv();
        // Resampling 10 s → 15 s with interpolation smooths the bursts a little, never much.
        assert!(
            (sd - want_sd).abs() < 0.05 * want_sd,
            "sd {sd} vs {want_sd}"
        );
        // Lag-1 autocorrelation is the real series' structure, not white noise.
        let lag1 = u
            .windows(2)
            .map(|w| (w[0] - mean) * (w[1] - mean))
            .sum::<f64>()
            / (u.len() as f64 * sd * sd);
        assert!(lag1 > 0.8, "lag-1 autocorrelation {lag1}");
        // Half the share → half the variability, same mean.
        let half = LoadModel {
            usage_share: (0.5, 0.5),
            ..m.clone()
        };
        let (hm, hsd) = mean_sd(
            &(0..5760)
                .map(|b| half.pod_utilisation(11, true, b * 15))
                .collect::<Vec<_>>(),
        );
        assert!(
            (hm - 0.4).abs() < 0.004 && (hsd - want_sd / 2.0).abs() < 0.05 * want_sd,
            "{hm} {hsd}"
        );
    }

    #[test]
    fn seeded_and_order_free() {
        let m = LoadModel::default();
        let a: Vec<f64> = (0..500)
            .map(|t| m.pod_utilisation(42, true, t * 15))
            .collect();
        let b: Vec<f64> = (0..500)
            .rev()
            .map(|t| m.pod_utilisation(42, true, t * 15))
            .rev()
            .collect();
        assert_eq!(a, b);
        let other = LoadModel {
            seed: 2,
            ..LoadModel::default()
        };
        assert_ne!(
            a[0..50],
            (0..50)
                .map(|t| other.pod_utilisation(42, true, t * 15))
                .collect::<Vec<_>>()[..]
        );
        assert!(a.iter().all(|u| (0.0..=m.cap).contains(u)));
        let bound = m.utilisation_bound(&m.pod(42, true));
        assert!(
            a.iter().all(|u| *u <= bound),
            "the bound the monitor skips nodes by holds"
        );
    }

    #[test]
    fn spikes_happen_at_about_the_configured_rate_and_raise_load() {
        let m = LoadModel::default();
        let buckets = 240 * 200; // 200 hours
        let key = m.pod(7, true).key;
        let starts = (0..buckets).filter(|b| m.spike_starts(key, *b)).count();
        let per_hour = starts as f64 / 200.0;
        assert!((per_hour - m.spike_rate_per_h).abs() < 0.5, "{per_hour}");
        let spiky = (0..buckets).filter(|b| m.spike_of(key, *b) > 0.0).count();
        assert!(spiky > 0 && spiky < buckets as usize / 4);
        let mean_ls = (0..buckets)
            .map(|b| m.pod_utilisation(7, true, b * 15))
            .sum::<f64>()
            / buckets as f64;
        let mean_be = (0..buckets)
            .map(|b| m.pod_utilisation(8, false, b * 15))
            .sum::<f64>()
            / buckets as f64;
        assert!(mean_ls > 0.1 && mean_be > 0.2);
    }

    #[test]
    fn node_utilisation_sums_pods_and_takes_the_busier_dimension() {
        let m = LoadModel {
            noise: 0.0,
            diurnal_amplitude: 0.0,
            spike_rate_per_h: 0.0,
            ls_base: (0.5, 0.5),
            other_base: (0.5, 0.5),
            ..LoadModel::default()
        };
        let p = LoadShare {
            pod_key: 1,
            load: m.pod(1, true),
            cpu_milli: 1000.0,
            gpu_milli: 1000.0,
        };
        let u = node_utilisation(
            &m,
            &[
                p,
                LoadShare {
                    pod_key: 2,
                    load: m.pod(2, true),
                    ..p
                },
            ],
            8000.0,
            2000.0,
            0,
        );
        assert!((u - 0.5).abs() < 1e-12, "{u}");
        assert_eq!(node_utilisation(&m, &[], 8000.0, 0.0, 0), 0.0);
    }

    #[test]
    fn load_models_are_named_synthetic_or_by_usage_series() {
        let e = load_models(&["usage:borg".into()], Path::new(".")).unwrap_err();
        assert!(e.contains("unknown usage series"), "{e}");
        assert!(load_models(&["sine".into()], Path::new("."))
            .unwrap_err()
            .contains("synthetic or usage:"));
        let m = load_models(&["synthetic".into()], Path::new(".")).unwrap();
        assert_eq!(m[0].1, LoadModel::default());
    }
}
