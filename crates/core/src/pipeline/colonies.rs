//! The colonies a pipeline scores from, per tenant: copies of each tenant's colony (τ table and
//! per-node outcome history) at a version, so that prioritize scores without waiting for the
//! tenant's Colony object.
//!
//! Consistency traded (the Worker): a copy is the colony as of its `version`. Every decision
//! scored from a copy is sent to the colony after the response, and the colony's replies carry
//! the colony itself whenever its version moved, so a copy trails the colony by at most one reply
//! — or by its age limit when the holder is idle, after which the next prioritize fetches the
//! colony first. Learning is untouched: only the colony writes τ, deposits come only from
//! confirmed placements, once per pod. The simulator plays the Colony object itself and applies
//! its reports to the copy directly ([`ColonyCopies::colony_mut`]), so its copy is always fresh.

use std::collections::HashMap;

use crate::colony::TenantColony;

#[derive(Debug, Clone)]
struct Copy {
    version: u64,
    colony: TenantColony,
    /// When the colony last confirmed this version.
    confirmed_ms: u64,
}

/// Per tenant, a copy of its colony.
#[derive(Debug, Clone, Default)]
pub struct ColonyCopies {
    copies: HashMap<String, Copy>,
}

impl ColonyCopies {
    /// Runs `f` on the tenant's copy if it was confirmed within `max_age_ms` (0: never fresh, as
    /// `COLONY_SNAPSHOT_MS = 0` means); `None` otherwise.
    pub fn with_fresh<T>(
        &mut self,
        tenant: &str,
        now_ms: u64,
        max_age_ms: u64,
        f: impl FnOnce(&mut TenantColony) -> T,
    ) -> Option<(u64, T)> {
        let copy = self
            .copies
            .get_mut(tenant)
            .filter(|c| max_age_ms > 0 && now_ms.saturating_sub(c.confirmed_ms) <= max_age_ms)?;
        Some((copy.version, f(&mut copy.colony)))
    }

    /// Runs `f` on the tenant's copy whatever its age (the colony cannot be reached).
    pub fn with_any<T>(
        &mut self,
        tenant: &str,
        f: impl FnOnce(&mut TenantColony) -> T,
    ) -> Option<T> {
        self.copies.get_mut(tenant).map(|c| f(&mut c.colony))
    }

    /// The tenant's colony itself, created empty and confirmed at `now_ms` (the simulator, which
    /// holds the colony rather than a copy of it).
    pub fn colony_mut(&mut self, tenant: &str, now_ms: u64) -> &mut TenantColony {
        let copy = self
            .copies
            .entry(tenant.to_string())
            .or_insert_with(|| Copy {
                version: 0,
                colony: TenantColony::default(),
                confirmed_ms: now_ms,
            });
        copy.confirmed_ms = copy.confirmed_ms.max(now_ms);
        &mut copy.colony
    }

    /// Every tenant's colony, by tenant.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &TenantColony)> {
        self.copies.iter().map(|(t, c)| (t.as_str(), &c.colony))
    }

    /// Drops the tenant's copy (its colony was reset).
    pub fn forget(&mut self, tenant: &str) {
        self.copies.remove(tenant);
    }

    /// The colony answered with `snapshot` (its version and itself): it replaces the copy,
    /// unless the copy is newer (replies can arrive out of order).
    pub fn install(&mut self, tenant: &str, version: u64, colony: TenantColony, now_ms: u64) {
        if self.copies.get(tenant).is_some_and(|c| c.version > version) {
            return;
        }
        self.copies.insert(
            tenant.to_string(),
            Copy {
                version,
                colony,
                confirmed_ms: now_ms,
            },
        );
    }

    /// The colony answered without itself, at `version`: that confirms a copy of this version,
    /// leaves a newer one, and drops an older one (the next prioritize fetches the colony).
    pub fn confirm(&mut self, tenant: &str, version: u64, now_ms: u64) {
        match self.copies.get_mut(tenant) {
            Some(copy) if copy.version == version => {
                copy.confirmed_ms = copy.confirmed_ms.max(now_ms)
            }
            Some(copy) if copy.version > version => {}
            Some(_) => {
                self.copies.remove(tenant);
            }
            None => {}
        }
    }

    /// The version of the tenant's copy, if there is one.
    pub fn version_of(&self, tenant: &str) -> Option<u64> {
        self.copies.get(tenant).map(|c| c.version)
    }

    pub fn contains(&self, tenant: &str) -> bool {
        self.copies.contains_key(tenant)
    }

    pub fn len(&self) -> usize {
        self.copies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.copies.is_empty()
    }

    /// The tenant whose copy was confirmed longest ago, and when (a holder that bounds its
    /// copies drops it first).
    pub fn least_recent(&self) -> Option<(&str, u64)> {
        self.copies
            .iter()
            .min_by_key(|(_, c)| c.confirmed_ms)
            .map(|(t, c)| (t.as_str(), c.confirmed_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn colony(decisions: u64) -> TenantColony {
        let mut c = TenantColony::default();
        c.counters.decisions = decisions;
        c
    }

    fn decisions(copies: &mut ColonyCopies, tenant: &str) -> Option<u64> {
        copies.with_any(tenant, |c| c.counters.decisions)
    }

    #[test]
    fn a_copy_is_fresh_for_its_age_limit_and_zero_means_never() {
        let mut copies = ColonyCopies::default();
        copies.install("a", 3, colony(1), 1_000);
        assert_eq!(copies.with_fresh("a", 1_500, 500, |_| ()), Some((3, ())));
        assert_eq!(copies.with_fresh("a", 1_501, 500, |_| ()), None);
        assert_eq!(copies.with_fresh("a", 1_000, 0, |_| ()), None);
        assert_eq!(decisions(&mut copies, "a"), Some(1), "any age");
        assert_eq!(copies.with_fresh("b", 1_000, 500, |_| ()), None);
    }

    #[test]
    fn replies_never_take_a_copy_back_in_time() {
        let mut copies = ColonyCopies::default();
        copies.install("a", 5, colony(5), 0);
        copies.install("a", 4, colony(4), 10);
        assert_eq!(decisions(&mut copies, "a"), Some(5));
        // A bare version: confirms the same, leaves a newer copy, drops an older one.
        copies.confirm("a", 5, 100);
        assert_eq!(copies.with_fresh("a", 150, 60, |_| ()), Some((5, ())));
        copies.confirm("a", 4, 200);
        assert_eq!(copies.version_of("a"), Some(5));
        copies.confirm("a", 6, 300);
        assert_eq!(
            copies.version_of("a"),
            None,
            "older than the colony: fetched again"
        );
    }

    #[test]
    fn the_least_recently_confirmed_copy_is_named() {
        let mut copies = ColonyCopies::default();
        copies.install("a", 1, colony(0), 50);
        copies.install("b", 1, colony(0), 10);
        copies.colony_mut("c", 30);
        assert_eq!(copies.least_recent(), Some(("b", 10)));
        copies.confirm("b", 1, 60);
        assert_eq!(copies.least_recent(), Some(("c", 30)));
        copies.forget("c");
        assert_eq!((copies.len(), copies.contains("c")), (2, false));
    }
}
