//! At-least-once delivery of placement, outcome and shadow reports: a bounded FIFO queue,
//! jittered exponential backoff, and what each Worker answer means for the batch in flight.
//! A batch goes to one endpoint (`/v1/placements` or `/v1/shadow`): [`Queue::take`] takes the
//! front run of reports for the front report's endpoint, so order is kept per queue.
//!
//! Nothing is lost by a full queue: an item that does not fit stays owed in the
//! [`crate::placements::Ledger`] and is planned again on the next scan. Items leave the queue
//! only when the Worker acknowledged them or refused them for good (a 4xx naming the item).

use std::collections::VecDeque;
use std::time::Duration;

use rand::Rng;

use crate::placements::Item;

#[derive(Debug)]
pub struct Queue {
    items: VecDeque<Item>,
    capacity: usize,
}

impl Queue {
    pub fn new(capacity: usize) -> Self {
        Queue {
            items: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Appends `item`, or hands it back when the queue is full (the caller un-queues it in the ledger).
    #[allow(clippy::result_large_err)]
    pub fn push(&mut self, item: Item) -> Result<(), Item> {
        if self.items.len() >= self.capacity {
            return Err(item);
        }
        self.items.push_back(item);
        Ok(())
    }

    /// Up to `max` items from the front, all for the front item's endpoint (the run stops at the
    /// first item for another endpoint), removed until [`Queue::put_back`] or acknowledgement.
    pub fn take(&mut self, max: usize) -> Vec<Item> {
        let Some(endpoint) = self.items.front().map(|i| i.kind.endpoint()) else {
            return Vec::new();
        };
        let n = self
            .items
            .iter()
            .take(max)
            .take_while(|i| i.kind.endpoint() == endpoint)
            .count();
        self.items.drain(..n).collect()
    }

    /// Returns an unacknowledged batch to the front, in its order.
    pub fn put_back(&mut self, batch: Vec<Item>) {
        for item in batch.into_iter().rev() {
            self.items.push_front(item);
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// Exponential backoff with jitter: the n-th consecutive failure waits a random time in
/// `[d/2, d]`, `d = min(max, base·2ⁿ)` (never zero, so a flapping Worker is not hammered).
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    pub fn new(base: Duration, max: Duration) -> Self {
        Backoff {
            base,
            max,
            failures: 0,
        }
    }

    pub fn failed(&mut self, rng: &mut impl Rng) -> Duration {
        let exp = self.base.saturating_mul(1u32 << self.failures.min(20));
        let d = exp.min(self.max);
        self.failures = self.failures.saturating_add(1);
        let half = d / 2;
        half + Duration::from_nanos(
            rng.random_range(0..=half.as_nanos().min(u64::MAX as u128) as u64),
        )
    }

    pub fn succeeded(&mut self) {
        self.failures = 0;
    }
}

/// What to do with a batch after the Worker answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Disposition {
    Acknowledged,
    /// Try the same batch again later (Worker down, 5xx, 429, auth not yet right); the Worker's
    /// `Retry-After` if it gave one.
    Retry(Option<Duration>),
    /// The Worker refused item `index` for good (400 naming `placements[index]`): drop that
    /// item, retry the rest at once.
    DropItem(usize),
    /// The Worker refused the batch for good without naming an item (e.g. 413): split it.
    Split,
}

/// Reads a Worker answer. `field` is the `field` of its JSON error body, if any.
pub fn disposition(
    status: Option<u16>,
    retry_after: Option<&str>,
    field: Option<&str>,
    batch_len: usize,
) -> Disposition {
    let Some(status) = status else {
        return Disposition::Retry(None);
    };
    match status {
        200..=299 => Disposition::Acknowledged,
        // 401/403: a token being rotated or a Secret not yet mounted: keep the reports.
        429 | 500..=599 | 401 | 403 | 408 => Disposition::Retry(
            retry_after
                .and_then(|v| v.trim().parse().ok())
                .map(Duration::from_secs),
        ),
        413 if batch_len > 1 => Disposition::Split,
        _ => match field.and_then(item_index) {
            Some(i) if i < batch_len => Disposition::DropItem(i),
            _ if batch_len > 1 => Disposition::Split,
            _ => Disposition::DropItem(0),
        },
    }
}

/// `placements[12].node` → 12.
fn item_index(field: &str) -> Option<usize> {
    let rest = field.strip_prefix("placements[")?;
    rest[..rest.find(']')?].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placements::Kind;
    use crate::wire::PlacementReport;
    use rand::{rngs::SmallRng, SeedableRng};

    fn item(uid: &str) -> Item {
        item_of(Kind::Placement, uid)
    }

    fn item_of(kind: Kind, uid: &str) -> Item {
        Item {
            kind,
            report: PlacementReport {
                pod_uid: uid.into(),
                namespace: "ns".into(),
                name: uid.into(),
                tenant: "ns".into(),
                node: "n".into(),
                outcome: None,
            },
            bound_at_ms: 0,
            pod: None,
        }
    }

    #[test]
    fn bounded_fifo_with_put_back() {
        let mut q = Queue::new(3);
        for u in ["a", "b", "c"] {
            q.push(item(u)).unwrap();
        }
        assert_eq!(q.push(item("d")).unwrap_err().report.pod_uid, "d");
        let batch = q.take(2);
        assert_eq!(q.len(), 1);
        q.put_back(batch);
        let uids: Vec<String> = q.take(10).into_iter().map(|i| i.report.pod_uid).collect();
        assert_eq!(uids, ["a", "b", "c"]);
    }

    #[test]
    fn a_batch_goes_to_one_endpoint_in_queue_order() {
        use crate::placements::Endpoint;
        let mut q = Queue::new(10);
        let kinds = [
            Kind::Placement,
            Kind::Outcome,
            Kind::Shadow,
            Kind::ShadowOutcome,
            Kind::Placement,
        ];
        for (i, k) in kinds.iter().enumerate() {
            q.push(item_of(*k, &i.to_string())).unwrap();
        }
        let endpoints_and_uids = |b: &[Item]| {
            (
                b[0].kind.endpoint(),
                b.iter()
                    .map(|i| i.report.pod_uid.clone())
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            endpoints_and_uids(&q.take(10)),
            (Endpoint::Placements, vec!["0".into(), "1".into()])
        );
        let shadow = q.take(1);
        assert_eq!(
            endpoints_and_uids(&shadow),
            (Endpoint::Shadow, vec!["2".into()])
        );
        q.put_back(shadow);
        assert_eq!(
            endpoints_and_uids(&q.take(10)),
            (Endpoint::Shadow, vec!["2".into(), "3".into()])
        );
        assert_eq!(
            endpoints_and_uids(&q.take(10)),
            (Endpoint::Placements, vec!["4".into()])
        );
        assert!(q.take(10).is_empty());
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut b = Backoff::new(Duration::from_millis(500), Duration::from_secs(30));
        let waits: Vec<Duration> = (0..10).map(|_| b.failed(&mut rng)).collect();
        for (n, w) in waits.iter().enumerate() {
            let d = Duration::from_millis(500 * (1 << n)).min(Duration::from_secs(30));
            assert!(
                *w >= d / 2 && *w <= d,
                "attempt {n}: {w:?} not in [{:?}, {d:?}]",
                d / 2
            );
        }
        b.succeeded();
        assert!(b.failed(&mut rng) <= Duration::from_millis(500));
    }

    #[test]
    fn worker_answers() {
        assert_eq!(
            disposition(Some(200), None, None, 5),
            Disposition::Acknowledged
        );
        assert_eq!(disposition(None, None, None, 5), Disposition::Retry(None));
        assert_eq!(
            disposition(Some(503), None, None, 5),
            Disposition::Retry(None)
        );
        assert_eq!(
            disposition(Some(429), Some("7"), None, 5),
            Disposition::Retry(Some(Duration::from_secs(7)))
        );
        assert_eq!(
            disposition(Some(401), None, None, 5),
            Disposition::Retry(None)
        );
        assert_eq!(
            disposition(Some(400), None, Some("placements[3].node"), 5),
            Disposition::DropItem(3)
        );
        assert_eq!(
            disposition(Some(400), None, Some("placements batch"), 5),
            Disposition::Split
        );
        assert_eq!(
            disposition(Some(413), None, Some("placements"), 5),
            Disposition::Split
        );
        assert_eq!(
            disposition(Some(400), None, None, 1),
            Disposition::DropItem(0)
        );
    }
}
