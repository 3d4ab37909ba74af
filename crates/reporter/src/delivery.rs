//! At-least-once delivery of placement, outcome and shadow reports: a bounded FIFO queue,
//! jittered exponential backoff, per-tenant pacing, and what each Worker answer means for the
//! batch in flight.
//!
//! A batch is one tenant's reports for one endpoint (`/v1/placements` or `/v1/shadow`), in
//! queue order ([`Queue::take_for`]): the Worker commits each tenant's colony once per request,
//! so one request per tenant is one commit. [`Pacer`] sends a tenant's reports at most once per
//! `--tenant-interval` (1 s): at load, everything that tenant has due goes in one request; when
//! the rate is low a report goes at once (its tenant sent nothing in the last interval); a
//! tenant with a full batch waiting goes at once too.
//!
//! A refusal of the request as a whole (a 4xx naming no item: a wrong URL, a bad cluster id, a
//! token without rights) is not the reports' fault: delivery stops and backs off with an error
//! log and the `aco_reporter_delivery_halted` gauge (alert `AcoReporterDeliveryHalted`), keeping
//! every report; a 401 first re-reads the token file (a rotated Secret).
//!
//! Nothing is lost by a full queue: an item that does not fit stays owed in the
//! [`crate::placements::Ledger`] and is planned again on the next scan. Items leave the queue
//! only when the Worker acknowledged them or refused them for good (a 4xx naming the item).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use aco_core::api::error::ErrorBody;
use rand::Rng;

use crate::placements::{Endpoint, Item};

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

    /// Up to `max` items for `endpoint` and `tenant`, in queue order, removed until
    /// [`Queue::put_back`] or acknowledgement.
    pub fn take_for(&mut self, endpoint: Endpoint, tenant: &str, max: usize) -> Vec<Item> {
        let mut taken = Vec::new();
        let mut rest = VecDeque::with_capacity(self.items.len());
        for item in self.items.drain(..) {
            if taken.len() < max && item.kind.endpoint() == endpoint && item.tenant() == tenant {
                taken.push(item);
            } else {
                rest.push_back(item);
            }
        }
        self.items = rest;
        taken
    }

    /// Every (endpoint, tenant) with reports waiting, and how many, in order of first appearance.
    pub fn waiting(&self) -> Vec<((Endpoint, String), usize)> {
        let mut out: Vec<((Endpoint, String), usize)> = Vec::new();
        let mut index: HashMap<(Endpoint, &str), usize> = HashMap::new();
        for item in &self.items {
            let key = (item.kind.endpoint(), item.tenant());
            match index.get(&key) {
                Some(&i) => out[i].1 += 1,
                None => {
                    index.insert(key, out.len());
                    out.push(((key.0, key.1.to_string()), 1));
                }
            }
        }
        out
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

/// One request per tenant (and endpoint) per interval at most, except with a full batch waiting.
#[derive(Debug, Clone)]
pub struct Pacer {
    interval_ms: u64,
    last_sent: HashMap<(Endpoint, String), u64>,
}

impl Pacer {
    pub fn new(interval: Duration) -> Self {
        Pacer {
            interval_ms: interval.as_millis() as u64,
            last_sent: HashMap::new(),
        }
    }

    /// When the next request for `key` may go: now if it sent nothing in the last interval or
    /// `full` (a whole batch is waiting), else one interval after its last request.
    pub fn due_at(&self, key: &(Endpoint, String), full: bool, now_ms: u64) -> u64 {
        match self.last_sent.get(key) {
            Some(&last) if !full => (last + self.interval_ms).max(now_ms),
            _ => now_ms,
        }
    }

    /// The next (endpoint, tenant) to send and when, from [`Queue::waiting`].
    pub fn next(
        &self,
        waiting: Vec<((Endpoint, String), usize)>,
        batch_size: usize,
        now_ms: u64,
    ) -> Option<((Endpoint, String), u64)> {
        waiting
            .into_iter()
            .map(|(key, n)| {
                let due = self.due_at(&key, n >= batch_size, now_ms);
                (key, due)
            })
            .min_by_key(|(_, due)| *due)
    }

    /// A request for `key` went out at `now_ms`; entries older than an interval are forgotten.
    pub fn sent(&mut self, key: (Endpoint, String), now_ms: u64) {
        let interval = self.interval_ms;
        self.last_sent
            .retain(|_, last| now_ms.saturating_sub(*last) < interval);
        self.last_sent.insert(key, now_ms);
    }
}

/// What to do with a batch after the Worker answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Disposition {
    Acknowledged,
    /// Try the same batch again later (Worker down, 5xx, 429, auth not yet right); the Worker's
    /// `Retry-After` if it gave one.
    Retry(Option<Duration>),
    /// The Worker refused item `index` for good (a 4xx whose error body names the item): drop
    /// that item, retry the rest at once.
    DropItem(usize),
    /// The batch was too large (413): split it.
    Split,
    /// 401: the token may have been rotated — re-read it, then retry.
    Unauthorized,
    /// The Worker refused the request as a whole (a 4xx naming no item: wrong URL, bad cluster
    /// id, a token without rights): stop, back off, alert; keep every report.
    Halt(String),
}

/// Reads a Worker answer and its error body, if it had one.
pub fn disposition(
    status: Option<u16>,
    retry_after: Option<&str>,
    error: Option<&ErrorBody>,
    batch_len: usize,
) -> Disposition {
    let Some(status) = status else {
        return Disposition::Retry(None);
    };
    match status {
        200..=299 => Disposition::Acknowledged,
        429 | 500..=599 | 408 => Disposition::Retry(
            retry_after
                .and_then(|v| v.trim().parse().ok())
                .map(Duration::from_secs),
        ),
        401 => Disposition::Unauthorized,
        413 if batch_len > 1 => Disposition::Split,
        // One report alone too large can never be taken.
        413 => Disposition::DropItem(0),
        _ => match error.and_then(|e| e.item) {
            Some(i) if i < batch_len => Disposition::DropItem(i),
            _ => Disposition::Halt(format!(
                "HTTP {status}{}",
                error
                    .and_then(|e| e.field.as_deref())
                    .map(|f| format!(" ({f})"))
                    .unwrap_or_default()
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placements::Kind;
    use aco_core::api::placements::PlacementReport;
    use aco_core::names::{NodeName, PodKey};
    use rand::{rngs::SmallRng, SeedableRng};

    fn item(uid: &str) -> Item {
        item_of(Kind::Placement, uid)
    }

    fn item_of(kind: Kind, uid: &str) -> Item {
        Item {
            kind,
            report: PlacementReport {
                pod_uid: Some(PodKey::parse(uid).unwrap()),
                namespace: Some("ns".into()),
                name: Some(uid.into()),
                tenant: Some("ns".into()),
                node: NodeName::parse("n").unwrap(),
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
        assert_eq!(q.push(item("d")).unwrap_err().uid(), "d");
        let batch = q.take_for(crate::placements::Endpoint::Placements, "ns", 2);
        assert_eq!(q.len(), 1);
        q.put_back(batch);
        let uids: Vec<String> = q
            .take_for(crate::placements::Endpoint::Placements, "ns", 10)
            .into_iter()
            .map(|i| i.uid().to_string())
            .collect();
        assert_eq!(uids, ["a", "b", "c"]);
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

    fn refused(field: Option<&str>, item: Option<usize>) -> ErrorBody {
        ErrorBody {
            error: "refused".into(),
            field: field.map(String::from),
            item,
        }
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
            Disposition::Unauthorized
        );
        assert_eq!(
            disposition(
                Some(400),
                None,
                Some(&refused(Some("placements[3].node"), Some(3))),
                5
            ),
            Disposition::DropItem(3)
        );
        // Refused as a whole: never split down and dropped one by one (the old silent loss).
        assert_eq!(
            disposition(
                Some(400),
                None,
                Some(&refused(Some("placements batch"), None)),
                5
            ),
            Disposition::Halt("HTTP 400 (placements batch)".into())
        );
        assert_eq!(
            disposition(Some(404), None, None, 1),
            Disposition::Halt("HTTP 404".into()),
            "ACO_WORKER_URL=https://host/v1: /v1/v1/placements"
        );
        assert_eq!(
            disposition(Some(403), None, None, 3),
            Disposition::Halt("HTTP 403".into())
        );
        assert_eq!(
            disposition(
                Some(400),
                None,
                Some(&refused(Some("placements[9].node"), Some(9))),
                5
            ),
            Disposition::Halt("HTTP 400 (placements[9].node)".into()),
            "an index outside the batch names no item of ours"
        );
        assert_eq!(
            disposition(Some(413), None, Some(&refused(Some("placements"), None)), 5),
            Disposition::Split
        );
        assert_eq!(
            disposition(Some(413), None, None, 1),
            Disposition::DropItem(0)
        );
    }

    fn item_for(tenant: &str, uid: &str) -> Item {
        let mut i = item(uid);
        i.report.tenant = Some(tenant.into());
        i
    }

    #[test]
    fn a_batch_is_one_tenants_reports_in_queue_order() {
        use crate::placements::Endpoint;
        let mut q = Queue::new(10);
        for (t, u) in [("a", "1"), ("b", "2"), ("a", "3"), ("b", "4"), ("a", "5")] {
            q.push(item_for(t, u)).unwrap();
        }
        q.push(item_of(Kind::Shadow, "6")).unwrap();
        assert_eq!(
            q.waiting(),
            [
                ((Endpoint::Placements, "a".to_string()), 3),
                ((Endpoint::Placements, "b".to_string()), 2),
                ((Endpoint::Shadow, "ns".to_string()), 1)
            ]
        );
        let uids = |b: &[Item]| b.iter().map(|i| i.uid().to_string()).collect::<Vec<_>>();
        let a = q.take_for(Endpoint::Placements, "a", 2);
        assert_eq!(uids(&a), ["1", "3"]);
        q.put_back(a);
        assert_eq!(
            uids(&q.take_for(Endpoint::Placements, "a", 10)),
            ["1", "3", "5"]
        );
        assert_eq!(uids(&q.take_for(Endpoint::Placements, "b", 10)), ["2", "4"]);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn a_tenant_sends_at_most_once_per_interval_unless_a_full_batch_waits() {
        use crate::placements::Endpoint;
        let mut p = Pacer::new(Duration::from_secs(1));
        let a = (Endpoint::Placements, "a".to_string());
        let b = (Endpoint::Placements, "b".to_string());
        // Low rate: at once.
        assert_eq!(p.due_at(&a, false, 10_000), 10_000);
        p.sent(a.clone(), 10_000);
        // Again within the second: wait for the rest of it, gathering what comes.
        assert_eq!(p.due_at(&a, false, 10_300), 11_000);
        assert_eq!(
            p.due_at(&a, true, 10_300),
            10_300,
            "a full batch goes at once"
        );
        // Another tenant is not held up by a.
        assert_eq!(
            p.next(vec![(a.clone(), 3), (b.clone(), 1)], 500, 10_300),
            Some((b.clone(), 10_300))
        );
        p.sent(b.clone(), 10_300);
        assert_eq!(
            p.next(vec![(a.clone(), 3), (b.clone(), 1)], 500, 10_400),
            Some((a.clone(), 11_000))
        );
        // After the interval, prompt again; old entries are forgotten.
        p.sent(a.clone(), 12_000);
        assert_eq!(p.last_sent.len(), 1);
        assert_eq!(p.due_at(&b, false, 12_000), 12_000);
    }
}
