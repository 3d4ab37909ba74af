//! Decisions waiting for their placement, by pod key: at most `MAX_DECISIONS_PER_TENANT`
//! (oldest evicted) and `DECISION_TTL_MS` old. Only the newest [`EXPLANATIONS_KEPT`] keep their
//! explanation in memory (an explanation at 64 candidates with the filter's rejections is up to
//! ~19 KB, the decision without it ~4 KB): older ones still confirm exactly, and explain η alone.

use std::collections::{BTreeMap, BTreeSet};

use crate::colony::Decision;
use crate::names::PodKey;

/// Pending decisions that keep their explanation (the newest ones).
pub const EXPLANATIONS_KEPT: usize = 256;

#[derive(Debug, Clone, Default)]
pub struct Pending {
    decisions: BTreeMap<PodKey, Decision>,
    /// (created_ms, key): eviction order, oldest first (ties by key).
    by_age: BTreeSet<(u64, PodKey)>,
    /// (created_ms, key) of the decisions holding an explanation.
    explained: BTreeSet<(u64, PodKey)>,
    /// When the most recently evicted decisions (at most `cap` of them, in memory only) were
    /// made, by key: a copy redelivers a decision until its commit is durable, and one evicted
    /// in between must not be remembered (and counted) again.
    evicted: BTreeMap<PodKey, u64>,
    evicted_by_age: BTreeSet<(u64, PodKey)>,
}

impl Pending {
    pub fn len(&self) -> usize {
        self.decisions.len()
    }

    /// The pod's decision if made at or after `since_ms`.
    pub fn get(&self, key: &str, since_ms: u64) -> Option<&Decision> {
        self.decisions.get(key).filter(|d| d.created_ms >= since_ms)
    }

    /// When the pod's decision was made, whatever its age.
    pub fn created_ms(&self, key: &str) -> Option<u64> {
        self.decisions.get(key).map(|d| d.created_ms)
    }

    /// When the pod's decision was made if it was evicted lately (see `evicted`).
    pub fn evicted_ms(&self, key: &str) -> Option<u64> {
        self.evicted.get(key).copied()
    }

    /// Inserts (or replaces) a decision; evicts the oldest others beyond `cap`. Returns the keys
    /// evicted.
    pub fn insert(&mut self, key: PodKey, decision: Decision, cap: usize) -> Vec<PodKey> {
        self.remove(&key);
        let at = (decision.created_ms, key.clone());
        if decision.explanation.is_some() {
            self.explained.insert(at.clone());
            while self.explained.len() > EXPLANATIONS_KEPT {
                if let Some((_, k)) = self.explained.pop_first() {
                    if let Some(d) = self.decisions.get_mut(&k) {
                        d.explanation = None;
                    }
                }
            }
        }
        self.by_age.insert(at);
        self.decisions.insert(key.clone(), decision);
        let mut evicted = Vec::new();
        while self.decisions.len() > cap.max(1) {
            let Some(oldest) = self.by_age.iter().find(|(_, k)| *k != key).cloned() else {
                break;
            };
            self.remove(&oldest.1);
            self.remember_evicted(oldest.clone(), cap.max(1));
            evicted.push(oldest.1);
        }
        evicted
    }

    fn remember_evicted(&mut self, (created_ms, key): (u64, PodKey), cap: usize) {
        if let Some(old) = self.evicted.insert(key.clone(), created_ms) {
            self.evicted_by_age.remove(&(old, key.clone()));
        }
        self.evicted_by_age.insert((created_ms, key));
        while self.evicted.len() > cap {
            if let Some((_, k)) = self.evicted_by_age.pop_first() {
                self.evicted.remove(&k);
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Decision> {
        let (key, d) = self.decisions.remove_entry(key)?;
        let at = (d.created_ms, key);
        self.by_age.remove(&at);
        self.explained.remove(&at);
        Some(d)
    }

    /// Forgets decisions made before `before_ms`.
    pub fn expire(&mut self, before_ms: u64) {
        while let Some((at, key)) = self.by_age.first().cloned() {
            if at >= before_ms {
                break;
            }
            self.remove(&key);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&PodKey, &Decision)> {
        self.decisions.iter()
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }
}
