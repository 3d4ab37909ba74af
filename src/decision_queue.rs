//! Decisions this isolate scored from its colony copy and has not yet seen the colony
//! acknowledge, per tenant. After each such prioritize, `waitUntil` sends what is unsent; a
//! placement batch for the tenant carries everything still unacknowledged ahead of its
//! placements, so a placement can never overtake its own decision. Delivery is at least once;
//! the colony applies a decision once (see `Colony::remember`).

use std::cell::RefCell;
use std::collections::HashMap;

use crate::colony_do::DecisionRecord;

/// Unacknowledged decisions kept per tenant; beyond it the oldest is dropped (its pod's
/// placement will count as unknown), which needs the colony to be unreachable for a long time.
const MAX_PER_TENANT: usize = 10_000;

struct Entry {
    record: DecisionRecord,
    in_flight: bool,
}

thread_local! {
    static QUEUE: RefCell<HashMap<String, Vec<Entry>>> = RefCell::new(HashMap::new());
}

/// Queues a decision; returns how many older ones were dropped to make room.
pub fn push(tenant: &str, record: DecisionRecord) -> usize {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let entries = q.entry(tenant.to_string()).or_default();
        entries.push(Entry {
            record,
            in_flight: false,
        });
        let excess = entries.len().saturating_sub(MAX_PER_TENANT);
        entries.drain(..excess);
        excess
    })
}

/// The tenant's decisions not being sent yet, now marked as being sent.
pub fn take_unsent(tenant: &str) -> Vec<DecisionRecord> {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let Some(entries) = q.get_mut(tenant) else {
            return Vec::new();
        };
        entries
            .iter_mut()
            .filter(|e| !e.in_flight)
            .map(|e| {
                e.in_flight = true;
                e.record.clone()
            })
            .collect()
    })
}

/// Every unacknowledged decision of the tenant (for a placement batch to carry).
pub fn unacknowledged(tenant: &str) -> Vec<DecisionRecord> {
    QUEUE.with(|q| {
        q.borrow()
            .get(tenant)
            .map(|e| e.iter().map(|e| e.record.clone()).collect())
            .unwrap_or_default()
    })
}

fn same(a: &DecisionRecord, b: &DecisionRecord) -> bool {
    a.key == b.key && a.decision.created_ms == b.decision.created_ms
}

/// The colony has these: forget them.
pub fn acknowledged(tenant: &str, records: &[DecisionRecord]) {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        if let Some(entries) = q.get_mut(tenant) {
            entries.retain(|e| !records.iter().any(|r| same(r, &e.record)));
            if entries.is_empty() {
                q.remove(tenant);
            }
        }
    })
}

/// Sending these failed: the next prioritize or placement batch sends them again.
pub fn failed(tenant: &str, records: &[DecisionRecord]) {
    QUEUE.with(|q| {
        if let Some(entries) = q.borrow_mut().get_mut(tenant) {
            for e in entries
                .iter_mut()
                .filter(|e| records.iter().any(|r| same(r, &e.record)))
            {
                e.in_flight = false;
            }
        }
    })
}
