//! The pods a colony remembers by key after their decision is gone: confirmed placements (so a
//! replay is a duplicate and the later outcome counts once) and pods shadow mode has seen. Kept
//! in memory by a 64-bit hash of the pod key ([`key_hash`]), not by the key itself: 2 M keys of
//! 36 bytes would not fit an isolate, their hashes do. Two keys sharing a hash would make the
//! second pod's placement a duplicate (one lost deposit, never a second one); among a million
//! live pods that happens with probability ~3·10⁻⁸. No Bloom filter: its false positives would
//! lose deposits at a rate of percents.
//!
//! Persisted through [`IndexChange`]s: in ledger entries until the next snapshot, then in one
//! immutable `segments` row per snapshot (see `schema.rs`); a change carries the whole record
//! (absolute), so replaying one twice is replaying it once.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::colony::Confirmed;
use crate::shadow::ShadowRecord;

/// FNV-1a (64 bit) with a final avalanche (splitmix64's): stable across builds and platforms,
/// as a persisted key must be.
pub fn key_hash(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// One pod's remembered record, as of a commit: the fields present replace the stored ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexChange {
    #[serde(rename = "h")]
    pub hash: u64,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<Confirmed>,
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<ShadowRecord>,
}

impl IndexChange {
    /// When the record was made (what its expiry counts from).
    pub fn at_ms(&self) -> u64 {
        let c = self.confirmed.as_ref().map_or(0, |c| c.confirmed_ms);
        let s = self.shadow.as_ref().map_or(0, |s| s.seen_ms);
        c.max(s)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Entry {
    confirmed: Option<Confirmed>,
    shadow: Option<ShadowRecord>,
}

impl Entry {
    fn at_ms(&self) -> u64 {
        let c = self.confirmed.as_ref().map_or(0, |c| c.confirmed_ms);
        let s = self.shadow.as_ref().map_or(0, |s| s.seen_ms);
        c.max(s)
    }
}

/// Every remembered pod of one colony, with the order they were made in (for expiry and for the
/// bound on their number).
#[derive(Debug, Clone, Default)]
pub struct PodIndex {
    entries: HashMap<u64, Entry>,
    /// (made at, hash) in the order changes arrived; stale pairs are skipped when popped.
    order: VecDeque<(u64, u64)>,
}

impl PodIndex {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The pod's confirmation, if made at or after `since_ms`.
    pub fn confirmed(&self, hash: u64, since_ms: u64) -> Option<&Confirmed> {
        self.entries
            .get(&hash)?
            .confirmed
            .as_ref()
            .filter(|c| c.confirmed_ms >= since_ms)
    }

    /// The pod's shadow record, if made at or after `since_ms`.
    pub fn shadow(&self, hash: u64, since_ms: u64) -> Option<&ShadowRecord> {
        self.entries
            .get(&hash)?
            .shadow
            .as_ref()
            .filter(|s| s.seen_ms >= since_ms)
    }

    /// Applies a change; beyond `cap` pods the oldest are forgotten. Returns how many were.
    pub fn apply(&mut self, change: &IndexChange, cap: usize) -> u64 {
        let entry = self.entries.entry(change.hash).or_default();
        if let Some(c) = &change.confirmed {
            entry.confirmed = Some(c.clone());
        }
        if let Some(s) = &change.shadow {
            entry.shadow = Some(s.clone());
        }
        self.order.push_back((entry.at_ms(), change.hash));
        let mut evicted = 0;
        while self.entries.len() > cap {
            match self.order.pop_front() {
                Some((at, hash)) => {
                    if self.entries.get(&hash).is_some_and(|e| e.at_ms() == at) {
                        self.entries.remove(&hash);
                        evicted += 1;
                    }
                }
                None => break,
            }
        }
        evicted
    }

    /// Forgets pods made before `before_ms`.
    pub fn expire(&mut self, before_ms: u64) {
        while let Some(&(at, hash)) = self.order.front() {
            if at >= before_ms {
                break;
            }
            self.order.pop_front();
            if self
                .entries
                .get(&hash)
                .is_some_and(|e| e.at_ms() < before_ms)
            {
                self.entries.remove(&hash);
            }
        }
        // Pairs left behind by records remade later accumulate; drop them once they dominate.
        if self.order.len() > 2 * self.entries.len() + 1024 {
            let mut live: Vec<(u64, u64)> =
                self.entries.iter().map(|(h, e)| (e.at_ms(), *h)).collect();
            live.sort_unstable();
            self.order = live.into();
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confirmed(node: &str, at: u64) -> Confirmed {
        Confirmed {
            node: node.into(),
            confirmed_ms: at,
            outcome_recorded: false,
        }
    }

    #[test]
    fn hashes_are_stable_and_spread() {
        assert_eq!(key_hash("uid-a"), key_hash("uid-a"));
        assert_ne!(key_hash("uid-a"), key_hash("uid-b"));
        // Pinned: the hash keys persisted records, so it must never change.
        assert_eq!(
            key_hash("8a3e6c2e-5f43-4b0e-9c1f-2d7a4e6b8c90"),
            0x2b40_d0a2_d314_839a
        );
    }

    #[test]
    fn the_oldest_pods_go_first_beyond_the_cap_and_expiry_forgets_by_time() {
        let mut index = PodIndex::default();
        for i in 0..5u64 {
            let change = IndexChange {
                hash: i,
                confirmed: Some(confirmed("a", 100 + i)),
                shadow: None,
            };
            assert_eq!(index.apply(&change, 3), u64::from(i >= 3));
        }
        assert_eq!(index.len(), 3);
        assert!(index.confirmed(0, 0).is_none() && index.confirmed(1, 0).is_none());
        assert!(index.confirmed(4, 0).is_some());
        assert!(
            index.confirmed(4, 105).is_none(),
            "older than the TTL reads as absent"
        );
        // Remade later: the record is kept past its first time.
        let again = IndexChange {
            hash: 2,
            confirmed: Some(confirmed("b", 200)),
            shadow: None,
        };
        index.apply(&again, 3);
        index.expire(150);
        assert_eq!(index.len(), 1);
        assert_eq!(index.confirmed(2, 0).unwrap().node, "b");
    }
}
