//! Fresh means fresh: when each input of the node facts was last confirmed by a healthy watch
//! or poll. A node report's `observedAtMs` is the oldest of its inputs' confirmation times, not
//! the time it was sent, so that during an API-server outage or a 403 the frozen values are
//! re-sent with their old time: the Worker's `FACTS_TTL_MS` then drops them and
//! `AcoNodeFactsStale` fires, instead of stale values being stamped as new.
//!
//! A source is healthy while no error has been seen since its last good event or probe. A watch
//! that errors (kube-rs yields an error for each failed attempt and retries with backoff, at
//! most 30 s apart) is broken from its first error until it yields an event again, or until a
//! probe of the same resource (a LIST of one object, every push interval) succeeds with no watch
//! error for [`QUIET_MS`]: a watch that resumed quietly, with nothing changed, is confirmed by
//! the probe, one that still fails (say, `watch` forbidden but `list` allowed) is not.

use std::sync::Mutex;

/// A probe confirms a watch only after this long without a watch error: longer than kube-rs's
/// longest retry backoff (30 s).
pub const QUIET_MS: u64 = 35_000;

/// An input of the node facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The Node watch (labels, allocatable, the node set).
    Nodes,
    /// The Pod watch (what is requested on each node).
    Pods,
    /// The NodeMetrics poll (utilisation; samples carry their own timestamps too).
    NodeMetrics,
}

impl Source {
    pub const ALL: [Source; 3] = [Source::Nodes, Source::Pods, Source::NodeMetrics];

    pub fn as_str(self) -> &'static str {
        match self {
            Source::Nodes => "nodes",
            Source::Pods => "pods",
            Source::NodeMetrics => "node_metrics",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct State {
    /// First error of the current broken streak (unix ms), `None` while healthy.
    broken_since: Option<u64>,
    /// The latest error (unix ms).
    last_error: Option<u64>,
}

/// Health of every source; shared between the watch tasks and the push loop.
#[derive(Debug, Default)]
pub struct Freshness {
    states: Mutex<[State; 3]>,
}

impl Freshness {
    fn with<T>(&self, f: impl FnOnce(&mut [State; 3]) -> T) -> T {
        f(&mut self.states.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The source failed at `now_ms` (a watch error, a failed poll or probe).
    pub fn failed(&self, source: Source, now_ms: u64) {
        self.with(|s| {
            let st = &mut s[source.index()];
            st.broken_since.get_or_insert(now_ms);
            st.last_error = Some(now_ms);
        })
    }

    /// A probe of the source's resource succeeded at `now_ms`: healthy again unless its watch
    /// failed within [`QUIET_MS`] (polls have no watch: `quiet_ms` 0).
    pub fn probed(&self, source: Source, now_ms: u64, quiet_ms: u64) {
        self.with(|s| {
            let st = &mut s[source.index()];
            if st
                .last_error
                .is_none_or(|e| now_ms.saturating_sub(e) >= quiet_ms)
            {
                st.broken_since = None;
            }
        })
    }

    /// The source delivered (a watch event: the watch is open).
    pub fn confirmed(&self, source: Source) {
        self.with(|s| s[source.index()].broken_since = None)
    }

    pub fn healthy(&self, source: Source) -> bool {
        self.with(|s| s[source.index()].broken_since.is_none())
    }

    /// Until when the source's data is confirmed: now while healthy, else its first error.
    pub fn confirmed_at(&self, source: Source, now_ms: u64) -> u64 {
        self.with(|s| s[source.index()].broken_since.unwrap_or(now_ms).min(now_ms))
    }

    /// `observedAtMs` of node reports: the older of the Node and Pod watches' confirmation.
    pub fn facts_observed_at(&self, now_ms: u64) -> u64 {
        self.confirmed_at(Source::Nodes, now_ms)
            .min(self.confirmed_at(Source::Pods, now_ms))
    }

    /// The broken sources, for `/readyz` (`node_metrics` only when it is read at all).
    pub fn broken(&self, with_metrics: bool) -> Vec<Source> {
        Source::ALL
            .into_iter()
            .filter(|s| with_metrics || *s != Source::NodeMetrics)
            .filter(|s| !self.healthy(*s))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_stamped_with_the_oldest_confirmation_of_their_inputs() {
        let f = Freshness::default();
        assert_eq!(f.facts_observed_at(1_000), 1_000, "healthy: now");
        f.failed(Source::Pods, 2_000);
        f.failed(Source::Pods, 5_000); // the retries do not move the start of the streak
        assert_eq!(f.facts_observed_at(9_000), 2_000);
        f.failed(Source::Nodes, 3_000);
        assert_eq!(f.facts_observed_at(9_000), 2_000);
        assert_eq!(f.broken(false), [Source::Nodes, Source::Pods]);
        f.confirmed(Source::Pods);
        assert_eq!(f.facts_observed_at(9_000), 3_000, "nodes still broken");
        f.confirmed(Source::Nodes);
        assert_eq!(f.facts_observed_at(10_000), 10_000);
        f.failed(Source::NodeMetrics, 11_000);
        assert_eq!(
            f.facts_observed_at(12_000),
            12_000,
            "utilisation carries its own time"
        );
        assert!(f.broken(false).is_empty());
        assert_eq!(f.broken(true), [Source::NodeMetrics]);
        f.probed(Source::NodeMetrics, 12_000, 0);
        assert!(
            f.broken(true).is_empty(),
            "a poll is confirmed by its own success"
        );
    }

    #[test]
    fn a_probe_confirms_a_quiet_watch_only_after_its_retries_stopped_failing() {
        let f = Freshness::default();
        f.failed(Source::Pods, 10_000);
        f.probed(Source::Pods, 20_000, QUIET_MS);
        assert!(
            !f.healthy(Source::Pods),
            "the watch failed 10 s ago: it may still be failing"
        );
        f.failed(Source::Pods, 40_000); // its next retry failed too (list allowed, watch not)
        f.probed(Source::Pods, 60_000, QUIET_MS);
        assert_eq!(
            f.confirmed_at(Source::Pods, 60_000),
            10_000,
            "still broken since the first error"
        );
        f.probed(Source::Pods, 75_000, QUIET_MS);
        assert!(
            f.healthy(Source::Pods),
            "35 s without a watch error and the list works"
        );
    }
}
