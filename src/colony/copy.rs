//! This isolate's copies of tenants' colonies (τ table and per-node outcome history), so that
//! prioritize scores without waiting for the tenant's Durable Object.
//!
//! Consistency traded: a copy is the colony as of its `version`. Every decision scored from a
//! copy is sent to the colony after the response (`waitUntil`), and the colony's reply (to
//! decisions and to placement batches) carries the colony itself whenever its version moved, so
//! a copy trails the colony by at most one reply of this isolate — or `COLONY_SNAPSHOT_MS` when
//! the isolate is idle, after which the next prioritize fetches the colony first. Learning is untouched: only the colony writes
//! τ, deposits still come only from confirmed placements, once per pod.

use std::cell::RefCell;
use std::collections::HashMap;

use aco_core::colony::TenantColony;

use aco_core::colony_store::wire::ColonySnapshot;

use super::api::ColonyName;

/// Tenants' copies kept per isolate; beyond it the least recently refreshed is dropped.
const MAX_TENANTS: usize = 256;

struct Copy {
    version: u64,
    colony: TenantColony,
    /// When the colony last confirmed this version (a reply to a decision or prioritize).
    confirmed_ms: u64,
}

thread_local! {
    static COPIES: RefCell<HashMap<ColonyName, Copy>> = RefCell::new(HashMap::new());
}

/// Runs `f` on the tenant's copy if it was confirmed within `max_age_ms` (0: never fresh, as
/// `COLONY_SNAPSHOT_MS = 0` means); `None` otherwise.
pub fn with_fresh<T>(
    colony: &ColonyName,
    now_ms: u64,
    max_age_ms: u64,
    f: impl FnOnce(&mut TenantColony) -> T,
) -> Option<(u64, T)> {
    COPIES.with(|c| {
        let mut copies = c.borrow_mut();
        let copy = copies
            .get_mut(colony)
            .filter(|c| max_age_ms > 0 && now_ms.saturating_sub(c.confirmed_ms) <= max_age_ms)?;
        Some((copy.version, f(&mut copy.colony)))
    })
}

/// Runs `f` on the tenant's copy whatever its age (the colony cannot be reached).
pub fn with_any<T>(colony: &ColonyName, f: impl FnOnce(&mut TenantColony) -> T) -> Option<T> {
    COPIES.with(|c| {
        c.borrow_mut()
            .get_mut(colony)
            .map(|copy| f(&mut copy.colony))
    })
}

/// Drops the tenant's copy (its colony was reset).
pub fn forget(colony: &ColonyName) {
    COPIES.with(|c| c.borrow_mut().remove(colony));
}

/// The colony answered: `snapshot` replaces the copy; without one, `version` confirms the copy
/// if it is that version and drops it otherwise (the next prioritize fetches the colony).
pub fn refresh(colony: &ColonyName, version: u64, snapshot: Option<ColonySnapshot>, now_ms: u64) {
    COPIES.with(|c| {
        let mut copies = c.borrow_mut();
        match snapshot {
            // Replies can arrive out of order: never go back to an older version.
            Some(s) if copies.get(colony).is_some_and(|c| c.version > s.version) => {}
            Some(s) => {
                if !copies.contains_key(colony) && copies.len() >= MAX_TENANTS {
                    if let Some(oldest) = copies
                        .iter()
                        .min_by_key(|(_, c)| c.confirmed_ms)
                        .map(|(t, _)| t.clone())
                    {
                        copies.remove(&oldest);
                    }
                }
                copies.insert(
                    colony.clone(),
                    Copy {
                        version: s.version,
                        colony: s.colony,
                        confirmed_ms: now_ms,
                    },
                );
            }
            None => match copies.get_mut(colony) {
                Some(copy) if copy.version == version => {
                    copy.confirmed_ms = copy.confirmed_ms.max(now_ms)
                }
                Some(copy) if copy.version > version => {}
                Some(_) => {
                    copies.remove(colony);
                }
                None => {}
            },
        }
    })
}

/// The version of this isolate's copy of the colony, if it holds one.
pub fn version_of(colony: &ColonyName) -> Option<u64> {
    COPIES.with(|c| c.borrow().get(colony).map(|copy| copy.version))
}
