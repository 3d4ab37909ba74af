//! Decisions this isolate scored from its colony copy and has not yet seen durable, per colony.
//! The first such prioritize of a window schedules one send, `DECISION_FLUSH_MS` later in its
//! `waitUntil`, of everything unsent by then (`client::send_decisions`): one Durable Object
//! request per window and colony, not per pod (a placement that overtakes its decision through
//! another isolate is held by the colony until the decision comes: `colony_store::early`); a
//! placement batch for the tenant carries everything not yet durable ahead of its placements,
//! so a placement can never overtake its own decision. The colony accepts decisions into memory
//! and commits them within a second (see `aco_core::colony_store`); a decision stays here until
//! a reply of the same colony incarnation says its commit is durable, and is sent again if the
//! colony restarted in between. Delivery is at least once; the colony applies a decision once.

use std::cell::RefCell;
use std::collections::HashMap;

use aco_core::colony_store::wire::{DecisionRecord, Durability};

use super::api::ColonyName;

/// Decisions kept per colony; beyond it the oldest is dropped (its pod's placement will count as
/// unknown), which needs the colony to be unreachable for a long time.
const MAX_PER_COLONY: usize = 10_000;

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

struct Entry {
    record: DecisionRecord,
    state: State,
}

/// A scheduled send older than this is taken as lost (its `waitUntil` was cut off), so that a
/// colony's decisions cannot wait forever behind it: beyond the platform's 30 s for `waitUntil`.
const SEND_LOST_AFTER_MS: u64 = 60_000;

thread_local! {
    static QUEUE: RefCell<HashMap<ColonyName, Vec<Entry>>> = RefCell::new(HashMap::new());
    /// Colonies with a send scheduled (`schedule_send`), and when it was scheduled.
    static SCHEDULED: RefCell<HashMap<ColonyName, u64>> = RefCell::new(HashMap::new());
}

/// One send per colony gathers every decision of its window: true if the caller is to schedule
/// it (none is scheduled), false if the scheduled one will take this decision too.
pub fn schedule_send(colony: &ColonyName, now_ms: u64) -> bool {
    SCHEDULED.with(|s| {
        let mut s = s.borrow_mut();
        match s.get(colony) {
            Some(&at) if now_ms.saturating_sub(at) < SEND_LOST_AFTER_MS => false,
            _ => {
                s.insert(colony.clone(), now_ms);
                true
            }
        }
    })
}

fn same(a: &DecisionRecord, b: &DecisionRecord) -> bool {
    a.key == b.key && a.decision.created_ms == b.decision.created_ms
}

/// Queues a decision; returns how many older ones were dropped to make room.
pub fn push(colony: &ColonyName, record: DecisionRecord) -> usize {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let entries = q.entry(colony.clone()).or_default();
        entries.push(Entry {
            record,
            state: State::Unsent,
        });
        let excess = entries.len().saturating_sub(MAX_PER_COLONY);
        entries.drain(..excess);
        excess
    })
}

/// The colony's decisions not sent yet, now marked as being sent; the next decision schedules
/// the next send.
pub fn take_unsent(colony: &ColonyName) -> Vec<DecisionRecord> {
    SCHEDULED.with(|s| s.borrow_mut().remove(colony));
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let Some(entries) = q.get_mut(colony) else {
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
    })
}

/// Every decision of the colony not seen durable (for a placement batch to carry).
pub fn not_durable(colony: &ColonyName) -> Vec<DecisionRecord> {
    QUEUE.with(|q| {
        q.borrow()
            .get(colony)
            .map(|e| e.iter().map(|e| e.record.clone()).collect())
            .unwrap_or_default()
    })
}

/// The colony answered a request that carried `sent`: they are accepted (durable or not yet, as
/// `durability` says); and every earlier acceptance is settled against it. Returns how many
/// were accepted for the first time.
pub fn answered(colony: &ColonyName, sent: &[DecisionRecord], durability: Durability) -> usize {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let Some(entries) = q.get_mut(colony) else {
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
            q.remove(colony);
        }
        first_time
    })
}

/// The colony was reset: its decisions held here are forgotten.
pub fn forget(colony: &ColonyName) {
    QUEUE.with(|q| q.borrow_mut().remove(colony));
    SCHEDULED.with(|s| s.borrow_mut().remove(colony));
}

/// Sending these failed: the next prioritize or placement batch sends them again.
pub fn failed(colony: &ColonyName, records: &[DecisionRecord]) {
    QUEUE.with(|q| {
        if let Some(entries) = q.borrow_mut().get_mut(colony) {
            for e in entries
                .iter_mut()
                .filter(|e| records.iter().any(|r| same(r, &e.record)))
            {
                e.state = State::Unsent;
            }
        }
    })
}

/// Decisions held for the colony (sent or not) — for tests of this module.
#[cfg(test)]
fn held(colony: &ColonyName) -> usize {
    QUEUE.with(|q| q.borrow().get(colony).map_or(0, Vec::len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aco_core::colony::Decision;
    use aco_core::demand::WorkloadClass;

    fn record(key: &str) -> DecisionRecord {
        DecisionRecord {
            key: key.into(),
            decision: Decision {
                created_ms: 1,
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
        let colony = ColonyName::new("default", "queue-test");
        push(&colony, record("a"));
        let sent = take_unsent(&colony);
        assert!(take_unsent(&colony).is_empty(), "in flight");
        answered(&colony, &sent, durability(1, 4, 5));
        assert_eq!(held(&colony), 1, "accepted, not durable yet");
        push(&colony, record("b"));
        let sent_b = take_unsent(&colony);
        assert_eq!(sent_b.len(), 1);
        // Commit 5 is durable: "a" goes; "b" is in commit 6.
        answered(&colony, &sent_b, durability(1, 5, 6));
        assert_eq!(not_durable(&colony).len(), 1);
        // The colony restarted (incarnation 2) before committing 6: "b" is sent again.
        answered(&colony, &[], durability(2, 5, 5));
        assert_eq!(take_unsent(&colony).len(), 1);
        failed(&colony, &sent_b);
        let again = take_unsent(&colony);
        answered(&colony, &again, durability(2, 6, 6));
        assert_eq!(held(&colony), 0);
    }
}
