//! Run-time slowdown: a finished pod's run time ÷ the median run time of the same workload.
//!
//! The reporter feeds every pod that ran to completion (`Succeeded`) into [`RunTimes`] keyed
//! by its workload (its owner's template: a Job, a ReplicaSet's pod-template-hash, or a
//! configured label), and sends the answer as an outcome's `slowdown`; the simulator uses the
//! same code for its simulated reporter. Above 1 the node ran the pod slower than the workload
//! usually runs — node performance no label shows (GPUs of one SKU differ by up to 1.5×).
//!
//! Memory is bounded twice: at most [`RunTimeLimits::max_workloads`] workloads (the one least
//! recently recorded is forgotten first), and per workload only the last
//! [`RunTimeLimits::window`] run times (a ring; older ones fall out, so the median follows a
//! workload whose inputs change). With the defaults (4,096 × 63 run times of 8 bytes, keys of at
//! most [`MAX_KEY_BYTES`]) that is under 4 MB in all.
//!
//! No clock: run times arrive in milliseconds, computed by the caller from the pod's own
//! container start and termination times.

use std::collections::{BTreeMap, VecDeque};

/// Longer workload keys are refused (not tracked): keys are names the caller builds from
/// Kubernetes names (≤ 253 bytes each), so this only stops a runaway label value.
pub const MAX_KEY_BYTES: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunTimeLimits {
    /// Workloads tracked at once; the least recently recorded one is forgotten beyond this.
    pub max_workloads: usize,
    /// Run times kept per workload (the most recent ones).
    pub window: usize,
    /// A slowdown is given only once the workload has this many earlier run times: with fewer,
    /// one slow pod would be its own median (two pods: each is 1.0 or its pair's ratio).
    pub min_observations: usize,
}

impl Default for RunTimeLimits {
    fn default() -> Self {
        RunTimeLimits {
            max_workloads: 4_096,
            window: 63,
            min_observations: 5,
        }
    }
}

#[derive(Debug, Clone)]
struct Workload {
    /// The most recent run times (ms), oldest first.
    recent: VecDeque<u64>,
    /// Position in [`RunTimes::by_recency`].
    stamp: u64,
}

/// Median run time per workload, bounded in keys and per key.
#[derive(Debug, Clone)]
pub struct RunTimes {
    limits: RunTimeLimits,
    workloads: BTreeMap<String, Workload>,
    /// stamp → workload: the first entry is the least recently recorded workload.
    by_recency: BTreeMap<u64, String>,
    next_stamp: u64,
}

impl Default for RunTimes {
    fn default() -> Self {
        RunTimes::new(RunTimeLimits::default())
    }
}

impl RunTimes {
    pub fn new(limits: RunTimeLimits) -> Self {
        RunTimes {
            limits: RunTimeLimits {
                max_workloads: limits.max_workloads.max(1),
                window: limits.window.max(1),
                min_observations: limits.min_observations.max(1),
            },
            workloads: BTreeMap::new(),
            by_recency: BTreeMap::new(),
            next_stamp: 0,
        }
    }

    pub fn limits(&self) -> RunTimeLimits {
        self.limits
    }

    /// The workload's median run time (ms) over its kept run times, once it has at least
    /// `min_observations` of them.
    pub fn median_ms(&self, workload: &str) -> Option<f64> {
        let w = self.workloads.get(workload)?;
        if w.recent.len() < self.limits.min_observations {
            return None;
        }
        let mut sorted: Vec<u64> = w.recent.iter().copied().collect();
        sorted.sort_unstable();
        let n = sorted.len();
        Some(if n % 2 == 1 {
            sorted[n / 2] as f64
        } else {
            (sorted[n / 2 - 1] as f64 + sorted[n / 2] as f64) / 2.0
        })
    }

    /// `run_ms` ÷ the workload's median, when the workload has enough run times and both are
    /// positive (the wire wants a slowdown > 0).
    pub fn slowdown(&self, workload: &str, run_ms: u64) -> Option<f64> {
        let median = self.median_ms(workload)?;
        (run_ms > 0 && median > 0.0).then(|| run_ms as f64 / median)
    }

    /// Adds one run time of `workload`.
    pub fn record(&mut self, workload: &str, run_ms: u64) {
        if workload.len() > MAX_KEY_BYTES {
            return;
        }
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        if let Some(w) = self.workloads.get_mut(workload) {
            self.by_recency.remove(&w.stamp);
            w.stamp = stamp;
            if w.recent.len() == self.limits.window {
                w.recent.pop_front();
            }
            w.recent.push_back(run_ms);
        } else {
            while self.workloads.len() >= self.limits.max_workloads {
                let Some((_, oldest)) = self.by_recency.pop_first() else {
                    break;
                };
                self.workloads.remove(&oldest);
            }
            let mut recent = VecDeque::with_capacity(self.limits.window.min(8));
            recent.push_back(run_ms);
            self.workloads
                .insert(workload.to_string(), Workload { recent, stamp });
        }
        self.by_recency.insert(stamp, workload.to_string());
    }

    /// The slowdown of this run against the workload's earlier ones (not itself), then records
    /// it: what the reporter calls once per finished pod.
    pub fn observe(&mut self, workload: &str, run_ms: u64) -> Option<f64> {
        let slowdown = self.slowdown(workload, run_ms);
        self.record(workload, run_ms);
        slowdown
    }

    /// Workloads tracked.
    pub fn len(&self) -> usize {
        self.workloads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workloads.is_empty()
    }

    /// Run times kept for `workload`.
    pub fn observations(&self, workload: &str) -> usize {
        self.workloads.get(workload).map_or(0, |w| w.recent.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_slowdown_until_enough_earlier_runs_then_against_their_median() {
        let mut r = RunTimes::default();
        for run in [100, 110, 90, 105] {
            assert_eq!(r.observe("job/a", run), None, "fewer than 5 earlier runs");
        }
        // Five earlier runs: median of 100,110,90,105,95 is 100.
        assert_eq!(r.observe("job/a", 95), None);
        assert_eq!(r.median_ms("job/a"), Some(100.0));
        assert_eq!(r.observe("job/a", 150), Some(1.5));
        // Now six runs, median (100 + 105) / 2.
        assert_eq!(r.median_ms("job/a"), Some(102.5));
        assert_eq!(r.slowdown("job/other", 100), None, "unknown workload");
    }

    #[test]
    fn one_slow_node_stands_out_and_does_not_move_the_median_much() {
        let mut r = RunTimes::default();
        let mut slow = Vec::new();
        for i in 0..40 {
            let on_slow_node = i % 5 == 0;
            let run = if on_slow_node { 200 } else { 100 + (i % 3) };
            if let Some(s) = r.observe("job/train", run) {
                if on_slow_node {
                    slow.push(s);
                } else {
                    assert!((0.95..1.05).contains(&s), "fast pod slowdown {s}");
                }
            }
        }
        assert!(
            !slow.is_empty() && slow.iter().all(|s| *s > 1.9),
            "{slow:?}"
        );
    }

    #[test]
    fn memory_is_bounded_in_keys_and_per_key() {
        let mut r = RunTimes::new(RunTimeLimits {
            max_workloads: 3,
            window: 4,
            min_observations: 2,
        });
        for i in 0..10 {
            r.record("w", i * 10);
        }
        assert_eq!(r.observations("w"), 4, "only the last 4 run times");
        assert_eq!(r.median_ms("w"), Some(75.0), "median of 60, 70, 80, 90");
        r.record("a", 1);
        r.record("b", 1);
        r.record("w", 100); // w is now the most recent
        r.record("c", 1); // evicts a, the least recently recorded
        assert_eq!(r.len(), 3);
        assert_eq!(r.observations("a"), 0);
        assert_eq!(r.observations("w"), 4);
        assert_eq!(r.observations("b") + r.observations("c"), 2);
        r.record(&"x".repeat(MAX_KEY_BYTES + 1), 5);
        assert_eq!(r.len(), 3, "an oversized key is not tracked");
    }

    #[test]
    fn zero_run_times_give_no_slowdown() {
        let mut r = RunTimes::new(RunTimeLimits {
            min_observations: 1,
            ..RunTimeLimits::default()
        });
        r.record("w", 0);
        assert_eq!(r.slowdown("w", 10), None, "median 0");
        r.record("w", 10);
        r.record("w", 10);
        assert_eq!(r.slowdown("w", 0), None, "a slowdown must be > 0");
        assert_eq!(r.slowdown("w", 20), Some(2.0));
    }
}
