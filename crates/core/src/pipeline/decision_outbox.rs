//! The decisions an isolate scored from its colony copies and has not yet seen durable, per
//! colony: what the Worker sends to the Colony object after its answers.
//!
//! The first decision of a window schedules one send (`schedule_send`), `DECISION_FLUSH_MS`
//! later, of everything unsent by then: one Durable Object request per window and colony, not
//! per pod. A placement batch for the tenant carries everything not yet durable
//! (`not_durable`) ahead of its placements, so a placement can never overtake its own decision
//! through this isolate. The colony accepts decisions into memory and commits them within a
//! second (`crate::colony_store`); a decision stays here until a reply of the same colony
//! incarnation says its commit is durable, and is sent again if the colony restarted in between.
//! Delivery is at least once; the colony applies a decision once.

use std::collections::HashMap;
use std::hash::Hash;

use crate::colony_store::wire::{DecisionRecord, Durability};

/// Decisions kept per colony; beyond it the oldest is dropped (its pod's placement will count as
/// unknown), which needs the colony to be unreachable for a long time. At ≈ 1 KB a decision of
/// 64 candidates, ≤ 10 MB per colony in the worst case.
pub const MAX_PER_COLONY: usize = 10_000;

/// A scheduled send older than this is taken as lost (its `waitUntil` was cut off), so that a
/// colony's decisions cannot wait forever behind it: beyond the platform's 30 s for `waitUntil`.
pub const SEND_LOST_AFTER_MS: u64 = 60_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Unsent,
    InFlight,
    /// Accepted by this incarnation of the colony, durable once its commit `seq` is.
    Accepted {
        incarnation: u64,
        seq: u64,
    },
}

#[derive(Debug)]
struct Entry {
    record: DecisionRecord,
    state: State,
}

/// Per colony `K`: its decisions not seen durable, and whether a send is scheduled.
#[derive(Debug)]
pub struct DecisionOutbox<K> {
    queues: HashMap<K, Vec<Entry>>,
    /// Colonies with a send scheduled, and when it was scheduled.
    scheduled: HashMap<K, u64>,
}

impl<K> Default for DecisionOutbox<K> {
    fn default() -> Self {
        DecisionOutbox {
            queues: HashMap::new(),
            scheduled: HashMap::new(),
        }
    }
}

fn same(a: &DecisionRecord, b: &DecisionRecord) -> bool {
    a.key == b.key && a.decision.created_ms == b.decision.created_ms
}

impl<K: Eq + Hash + Clone> DecisionOutbox<K> {
    /// One send per colony gathers every decision of its window: true if the caller is to
    /// schedule it (none is scheduled), false if the scheduled one will take this decision too.
    pub fn schedule_send(&mut self, colony: &K, now_ms: u64) -> bool {
        match self.scheduled.get(colony) {
            Some(&at) if now_ms.saturating_sub(at) < SEND_LOST_AFTER_MS => false,
            _ => {
                self.scheduled.insert(colony.clone(), now_ms);
                true
            }
        }
    }

    /// Queues a decision; returns how many older ones were dropped to make room.
    pub fn push(&mut self, colony: &K, record: DecisionRecord) -> usize {
        let entries = self.queues.entry(colony.clone()).or_default();
        entries.push(Entry {
            record,
            state: State::Unsent,
        });
        let excess = entries.len().saturating_sub(MAX_PER_COLONY);
        entries.drain(..excess);
        excess
    }

    /// The colony's decisions not sent yet, now marked as being sent; the next decision
    /// schedules the next send.
    pub fn take_unsent(&mut self, colony: &K) -> Vec<DecisionRecord> {
        self.scheduled.remove(colony);
        let Some(entries) = self.queues.get_mut(colony) else {
            return Vec::new();
        };
        entries
            .iter_mut()
            .filter(|e| e.state == State::Unsent)
            .map(|e| {
                e.state = State::InFlight;
                e.record.clone()
            })
            .collect()
    }

    /// Every decision of the colony not seen durable (for a placement batch to carry).
    pub fn not_durable(&self, colony: &K) -> Vec<DecisionRecord> {
        self.queues
            .get(colony)
            .map(|e| e.iter().map(|e| e.record.clone()).collect())
            .unwrap_or_default()
    }

    /// The colony answered a request that carried `sent`: they are accepted (durable or not
    /// yet, as `durability` says); and every earlier acceptance is settled against it. Returns
    /// how many were accepted for the first time.
    pub fn answered(
        &mut self,
        colony: &K,
        sent: &[DecisionRecord],
        durability: Durability,
    ) -> usize {
        let Some(entries) = self.queues.get_mut(colony) else {
            return 0;
        };
        let mut first_time = 0;
        for e in entries.iter_mut() {
            if sent.iter().any(|r| same(r, &e.record)) {
                first_time += usize::from(!matches!(e.state, State::Accepted { .. }));
                e.state = State::Accepted {
                    incarnation: durability.incarnation,
                    seq: durability.accepted_seq,
                };
            }
        }
        entries.retain_mut(|e| match e.state {
            State::Accepted { incarnation, seq } if incarnation == durability.incarnation => {
                seq > durability.durable_seq
            }
            // Another incarnation: what it had not committed may be lost; send it again.
            State::Accepted { .. } => {
                e.state = State::Unsent;
                true
            }
            _ => true,
        });
        if entries.is_empty() {
            self.queues.remove(colony);
        }
        first_time
    }

    /// The colony was reset: its decisions held here are forgotten.
    pub fn forget(&mut self, colony: &K) {
        self.queues.remove(colony);
        self.scheduled.remove(colony);
    }

    /// Sending these failed: the next prioritize or placement batch sends them again.
    pub fn failed(&mut self, colony: &K, records: &[DecisionRecord]) {
        if let Some(entries) = self.queues.get_mut(colony) {
            for e in entries
                .iter_mut()
                .filter(|e| records.iter().any(|r| same(r, &e.record)))
            {
                e.state = State::Unsent;
            }
        }
    }

    /// Decisions held for the colony, sent or not.
    pub fn held(&self, colony: &K) -> usize {
        self.queues.get(colony).map_or(0, Vec::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony::Decision;
    use crate::demand::WorkloadClass;
    use crate::names::PodKey;

    fn record(key: &str, created_ms: u64) -> DecisionRecord {
        DecisionRecord {
            key: PodKey::parse(key).unwrap(),
            decision: Decision {
                created_ms,
                workload: WorkloadClass::Batch,
                candidate_count: 1,
                etas: vec![("a".into(), 0.5)],
                explanation: None,
            },
            explored: false,
        }
    }

    fn durability(incarnation: u64, durable_seq: u64, accepted_seq: u64) -> Durability {
        Durability {
            incarnation,
            durable_seq,
            accepted_seq,
        }
    }

    #[test]
    fn a_decision_is_held_until_its_commit_is_durable_and_resent_after_a_restart() {
        let mut outbox = DecisionOutbox::default();
        let colony = "default/queue-test";
        outbox.push(&colony, record("a", 1));
        let sent = outbox.take_unsent(&colony);
        assert!(outbox.take_unsent(&colony).is_empty(), "in flight");
        assert_eq!(outbox.answered(&colony, &sent, durability(1, 4, 5)), 1);
        assert_eq!(outbox.held(&colony), 1, "accepted, not durable yet");
        outbox.push(&colony, record("b", 1));
        let sent_b = outbox.take_unsent(&colony);
        assert_eq!(sent_b.len(), 1);
        // Commit 5 is durable: "a" goes; "b" is in commit 6.
        outbox.answered(&colony, &sent_b, durability(1, 5, 6));
        assert_eq!(outbox.not_durable(&colony).len(), 1);
        // The colony restarted (incarnation 2) before committing 6: "b" is sent again.
        outbox.answered(&colony, &[], durability(2, 5, 5));
        assert_eq!(outbox.take_unsent(&colony).len(), 1);
        outbox.failed(&colony, &sent_b);
        let again = outbox.take_unsent(&colony);
        assert_eq!(outbox.answered(&colony, &again, durability(2, 6, 6)), 1);
        assert_eq!(outbox.held(&colony), 0);
    }

    #[test]
    fn one_send_per_window_until_taken_or_lost() {
        let mut outbox = DecisionOutbox::default();
        assert!(outbox.schedule_send(&"c", 1_000));
        assert!(
            !outbox.schedule_send(&"c", 2_000),
            "the scheduled send takes it"
        );
        assert!(outbox.schedule_send(&"d", 2_000), "another colony");
        outbox.take_unsent(&"c");
        assert!(outbox.schedule_send(&"c", 3_000), "taken: the next window");
        assert!(
            outbox.schedule_send(&"c", 3_000 + SEND_LOST_AFTER_MS),
            "a send cut off is taken as lost"
        );
    }

    #[test]
    fn the_oldest_goes_beyond_the_bound_and_a_reset_forgets() {
        let mut outbox = DecisionOutbox::default();
        for i in 0..MAX_PER_COLONY as u64 {
            assert_eq!(outbox.push(&"c", record("p", i)), 0);
        }
        assert_eq!(outbox.push(&"c", record("p", u64::MAX)), 1);
        let kept = outbox.not_durable(&"c");
        assert_eq!(kept.len(), MAX_PER_COLONY);
        assert_eq!(kept[0].decision.created_ms, 1, "the first one was dropped");
        outbox.schedule_send(&"c", 0);
        outbox.forget(&"c");
        assert_eq!(outbox.held(&"c"), 0);
        assert!(
            outbox.schedule_send(&"c", 1),
            "nothing scheduled after a reset"
        );
    }
}
