//! This isolate's decisions not yet durable in their colony, per colony: the isolate's
//! `aco_core::pipeline::DecisionOutbox` (the protocol, with its tests), kept in the isolate's
//! state (`isolate.rs`). The first prioritize of a window schedules one send of everything
//! unsent, `DECISION_FLUSH_MS` later in its `waitUntil` (`client::send_decisions`); a placement
//! batch for the tenant carries everything not yet durable ahead of its placements; a placement
//! that overtakes its decision through another isolate is held by the colony until the decision
//! comes (`colony_store::early`).

use aco_core::colony_store::wire::{DecisionRecord, Durability};

use super::api::ColonyName;
use crate::isolate;

/// True if the caller is to schedule the colony's send (none is scheduled).
pub fn schedule_send(colony: &ColonyName, now_ms: u64) -> bool {
    isolate::with(|i| i.decisions.borrow_mut().schedule_send(colony, now_ms))
}

/// Queues a decision; returns how many older ones were dropped to make room.
pub fn push(colony: &ColonyName, record: DecisionRecord) -> usize {
    isolate::with(|i| i.decisions.borrow_mut().push(colony, record))
}

/// The colony's decisions not sent yet, now marked as being sent.
pub fn take_unsent(colony: &ColonyName) -> Vec<DecisionRecord> {
    isolate::with(|i| i.decisions.borrow_mut().take_unsent(colony))
}

/// Every decision of the colony not seen durable (for a placement batch to carry).
pub fn not_durable(colony: &ColonyName) -> Vec<DecisionRecord> {
    isolate::with(|i| i.decisions.borrow().not_durable(colony))
}

/// The colony answered a request that carried `sent`; returns how many were accepted for the
/// first time.
pub fn answered(colony: &ColonyName, sent: &[DecisionRecord], durability: Durability) -> usize {
    isolate::with(|i| i.decisions.borrow_mut().answered(colony, sent, durability))
}

/// The colony was reset: its decisions held here are forgotten.
pub fn forget(colony: &ColonyName) {
    isolate::with(|i| i.decisions.borrow_mut().forget(colony))
}

/// Sending these failed: the next prioritize or placement batch sends them again.
pub fn failed(colony: &ColonyName, records: &[DecisionRecord]) {
    isolate::with(|i| i.decisions.borrow_mut().failed(colony, records))
}
