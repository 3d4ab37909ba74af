//! Placements that reached the colony before their pod's decision, held until it comes.
//!
//! Why: an isolate sends the decisions it scored in one request per `DECISION_FLUSH_MS` (one
//! Durable Object request per window, not per pod), while the reporter may send a placement
//! as soon as it sees the binding — through another isolate, which cannot carry the first
//! one's queue. Such a placement is held here, in memory only, at most [`HOLD_MS`] and
//! [`MAX_HELD`] per colony; when the decision arrives the placement is applied as if it had
//! come second. What expires or is pushed out counts as an unknown placement then, as it would
//! have at once before. Not persisted: a restart loses what is held (those pods' learning,
//! never a second deposit), the same as a decision lost with an isolate. Reports of pods no
//! prioritize scored (kube-scheduler binds a pod with one feasible node without asking) are
//! held too and expire; beyond ~400 such reports a second per colony they push real ones out
//! early (counted unknown, as they would have been before).

use std::collections::{HashMap, VecDeque};

use super::wire::PlacementItem;
use crate::names::PodKey;

/// How long a placement waits for its decision: well beyond one flush window and a retry.
pub const HOLD_MS: u64 = 10_000;
/// Placements held per colony (~0.6 KB each at the longest key and node name).
pub const MAX_HELD: usize = 4_096;

#[derive(Debug, Clone)]
struct Held {
    item: PlacementItem,
    seq: u64,
}

/// What [`EarlyPlacements::hold`] did with an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Held; `pushed_out` older ones were dropped to make room.
    Held { pushed_out: usize },
    /// The same report is already held (a redelivery): nothing changed.
    AlreadyHeld,
}

#[derive(Debug, Clone, Default)]
pub struct EarlyPlacements {
    by_key: HashMap<PodKey, Vec<Held>>,
    /// (received_ms, seq, key) of every item held or taken since, oldest first; taken ones are
    /// skipped when they reach the front.
    arrivals: VecDeque<(u64, u64, PodKey)>,
    next_seq: u64,
    held: usize,
}

impl EarlyPlacements {
    pub fn len(&self) -> usize {
        self.held
    }

    /// Holds `item` for its decision.
    pub fn hold(&mut self, item: &PlacementItem, now_ms: u64) -> Hold {
        let entries = self.by_key.entry(item.key.clone()).or_default();
        if entries.iter().any(|h| h.item == *item) {
            return Hold::AlreadyHeld;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        entries.push(Held {
            item: item.clone(),
            seq,
        });
        self.arrivals.push_back((now_ms, seq, item.key.clone()));
        self.held += 1;
        if self.arrivals.len() > 2 * MAX_HELD {
            // Arrivals of taken items wait for the front otherwise; keep the queue bounded.
            let by_key = &self.by_key;
            self.arrivals.retain(|(_, seq, key)| {
                by_key
                    .get(key)
                    .is_some_and(|held| held.iter().any(|h| h.seq == *seq))
            });
        }
        let mut pushed_out = 0;
        while self.held > MAX_HELD {
            pushed_out += self.pop_oldest();
        }
        Hold::Held { pushed_out }
    }

    /// Everything held for `key`, in the order it arrived; none are held for it after.
    pub fn take(&mut self, key: &str) -> Vec<PlacementItem> {
        let taken = self.by_key.remove(key).unwrap_or_default();
        self.held -= taken.len();
        if self.held == 0 {
            self.arrivals.clear();
        }
        taken.into_iter().map(|h| h.item).collect()
    }

    /// Drops what has waited longer than [`HOLD_MS`]; returns how many.
    pub fn expire(&mut self, now_ms: u64) -> usize {
        let mut expired = 0;
        while let Some(&(received_ms, _, _)) = self.arrivals.front() {
            if now_ms.saturating_sub(received_ms) <= HOLD_MS {
                break;
            }
            expired += self.pop_oldest();
        }
        expired
    }

    pub fn clear(&mut self) {
        *self = Self {
            next_seq: self.next_seq,
            ..Self::default()
        };
    }

    /// Removes the front arrival; 1 if it was still held, 0 if it had been taken.
    fn pop_oldest(&mut self) -> usize {
        let Some((_, seq, key)) = self.arrivals.pop_front() else {
            return 0;
        };
        let Some(entries) = self.by_key.get_mut(&key) else {
            return 0;
        };
        let Some(at) = entries.iter().position(|h| h.seq == seq) else {
            return 0;
        };
        entries.remove(at);
        if entries.is_empty() {
            self.by_key.remove(&key);
        }
        self.held -= 1;
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colony::{Outcome, OutcomeLabel};
    use crate::names::NodeName;

    fn item(key: &str, outcome: Option<Outcome>) -> PlacementItem {
        PlacementItem {
            key: PodKey::parse(key).unwrap(),
            node: NodeName::parse("n1").unwrap(),
            outcome,
        }
    }

    #[test]
    fn a_held_placement_is_taken_once_in_arrival_order() {
        let mut early = EarlyPlacements::default();
        let failed = Some(Outcome::Label(OutcomeLabel::Failed));
        assert_eq!(
            early.hold(&item("a", None), 0),
            Hold::Held { pushed_out: 0 }
        );
        assert_eq!(early.hold(&item("a", None), 5), Hold::AlreadyHeld);
        assert_eq!(
            early.hold(&item("a", failed), 6),
            Hold::Held { pushed_out: 0 }
        );
        assert_eq!(early.len(), 2);
        assert_eq!(early.take("a"), vec![item("a", None), item("a", failed)]);
        assert!(early.take("a").is_empty());
        assert_eq!(early.len(), 0);
        // The taken items' arrivals expire as nothing.
        assert_eq!(early.expire(HOLD_MS * 2), 0);
    }

    #[test]
    fn what_waits_longer_than_the_hold_expires_and_only_that() {
        let mut early = EarlyPlacements::default();
        early.hold(&item("a", None), 1_000);
        early.hold(&item("b", None), 2_000);
        early.hold(&item("c", None), 3_000);
        assert_eq!(early.take("b").len(), 1);
        assert_eq!(early.expire(1_000 + HOLD_MS), 0);
        assert_eq!(
            early.expire(2_000 + HOLD_MS + 1),
            1,
            "a expires, b was taken"
        );
        assert_eq!(early.len(), 1);
        assert_eq!(early.expire(3_000 + HOLD_MS + 1), 1);
        assert_eq!(early.len(), 0);
    }

    #[test]
    fn beyond_the_cap_the_oldest_is_pushed_out() {
        let mut early = EarlyPlacements::default();
        for i in 0..MAX_HELD {
            early.hold(&item(&format!("p{i}"), None), i as u64);
        }
        assert_eq!(
            early.hold(&item("last", None), 0),
            Hold::Held { pushed_out: 1 }
        );
        assert_eq!(early.len(), MAX_HELD);
        assert!(early.take("p0").is_empty(), "the oldest went");
        assert_eq!(early.take("p1").len(), 1);
        assert_eq!(early.take("last").len(), 1);
    }

    #[test]
    fn arrivals_of_taken_items_do_not_pile_up() {
        let mut early = EarlyPlacements::default();
        early.hold(&item("kept", None), 0);
        for i in 0..5 * MAX_HELD {
            let key = format!("p{i}");
            early.hold(&item(&key, None), 1);
            early.take(&key);
        }
        assert!(early.arrivals.len() <= 2 * MAX_HELD + 1);
        assert_eq!(early.len(), 1);
        assert_eq!(early.take("kept").len(), 1, "compaction keeps what is held");
    }
}
