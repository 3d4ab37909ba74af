//! Every call to a binding (KV, Durable Object stubs) goes through [`Bindings`], which counts it
//! against the platform's limits per invocation (Cloudflare's Workers limits page, re-checked Dec 2026): 10,000
//! subrequests on Workers Paid (fetches, Durable Object calls, binding calls; [`LIMIT`]), of
//! which at most 1,000 KV operations ([`KV_LIMIT`], KV's own page; a bulk read counts once).
//!
//! Cloudflare refuses the operation beyond a limit ("Too many API requests by single Worker
//! invocation"); Miniflare does not. So the Worker enforces the same budgets itself: an
//! operation beyond one fails with 503 and logs [`BUDGET_EXCEEDED`], which the test harness
//! treats as a failed test (crates/testkit/src/worker.rs). Work done after the response (`waitUntil`)
//! belongs to the same invocation and spends from the same budget: hand it a clone.
//!
//! The counts also feed the cost model: each kind is exported as
//! `aco_binding_operations_total{kind}`, and Durable Objects report the SQLite rows they wrote
//! in the [`ROWS_WRITTEN_HEADER`] of their replies (`aco_do_rows_written_total{class}`), so
//! `docs/cost.md` prices operations that a benchmark counted rather than guessed.

use aco_core::colony_store::wire::ColonyFailure;
use aco_core::metrics;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use worker::kv::KvStore;
use worker::{Env, Request, Response};

use crate::http::ApiError;

/// Subrequests one invocation may make (Workers Paid default; `[limits] subrequests` can raise it).
pub const LIMIT: u32 = 10_000;
/// KV operations one invocation may make, within [`LIMIT`].
pub const KV_LIMIT: u32 = 1_000;
/// Logged when an operation is refused; the test harness fails any test whose Worker logs it.
pub const BUDGET_EXCEEDED: &str = "binding operation budget exceeded";
/// Header of a Durable Object reply: SQLite rows that request wrote.
pub const ROWS_WRITTEN_HEADER: &str = "x-aco-rows-written";
/// Response header: binding operations the invocation had made when it answered.
pub const OPS_HEADER: &str = "x-aco-binding-ops";

/// What an operation was, for the budget's message and the cost counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpKind {
    KvRead,
    KvWrite,
    DoRequest,
}

impl OpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::KvRead => "kv_read",
            OpKind::KvWrite => "kv_write",
            OpKind::DoRequest => "do_request",
        }
    }
}

/// Where an invocation's final counts go: a counter (name, labels, increment) of the isolate's
/// telemetry, handed in by the router so that this module needs none.
pub type CountSink = fn(&'static aco_core::metrics::Metric, &[&str], f64);

#[derive(Default)]
struct Tally {
    sink: Option<CountSink>,
    used: Cell<u32>,
    by_kind: RefCell<BTreeMap<OpKind, u32>>,
    /// SQLite rows written by Durable Objects on this invocation's behalf, by class.
    rows_written: RefCell<BTreeMap<&'static str, u64>>,
}

impl Drop for Tally {
    /// When the invocation's last piece of work (including `waitUntil`) lets go of its count,
    /// the count joins this isolate's telemetry, so work done after the response is priced too.
    fn drop(&mut self) {
        let Some(count) = self.sink else {
            return;
        };
        for (kind, n) in self.by_kind.get_mut().iter() {
            count(&metrics::BINDING_OPERATIONS, &[kind.as_str()], *n as f64);
        }
        for (class, rows) in self.rows_written.get_mut().iter() {
            count(&metrics::DO_ROWS_WRITTEN, &[class], *rows as f64);
        }
    }
}

/// One invocation's binding operations. Cheap to clone; clones share the count.
#[derive(Clone, Default)]
pub struct Ops(Rc<Tally>);

impl Ops {
    /// Spends `n` operations of `kind`, or refuses (503) if that would exceed [`LIMIT`].
    pub fn spend(&self, kind: OpKind, n: u32) -> Result<(), ApiError> {
        let used = self.0.used.get();
        let kv_used: u32 = self
            .0
            .by_kind
            .borrow()
            .iter()
            .filter(|(k, _)| matches!(k, OpKind::KvRead | OpKind::KvWrite))
            .map(|(_, n)| *n)
            .sum();
        let is_kv = matches!(kind, OpKind::KvRead | OpKind::KvWrite);
        let refused = if used.saturating_add(n) > LIMIT {
            Some(("subrequests", LIMIT))
        } else if is_kv && kv_used.saturating_add(n) > KV_LIMIT {
            Some(("KV operations", KV_LIMIT))
        } else {
            None
        };
        if let Some((what, limit)) = refused {
            #[cfg(target_arch = "wasm32")]
            crate::log::error(
                "bindings",
                None,
                &format!(
                    "{BUDGET_EXCEEDED}: {used} used, {n} more {} refused (limit {limit} {what})",
                    kind.as_str()
                ),
            );
            return Err(ApiError::new(
                503,
                format!(
                    "{BUDGET_EXCEEDED}: this request needs more than {limit} {what} ({} refused)",
                    kind.as_str()
                ),
            ));
        }
        self.0.used.set(used + n);
        *self.0.by_kind.borrow_mut().entry(kind).or_default() += n;
        Ok(())
    }

    pub fn used(&self) -> u32 {
        self.0.used.get()
    }

    #[cfg(test)]
    pub fn by_kind(&self) -> Vec<(OpKind, u32)> {
        self.0
            .by_kind
            .borrow()
            .iter()
            .map(|(k, n)| (*k, *n))
            .collect()
    }

    fn add_rows_written(&self, class: &'static str, rows: u64) {
        *self.0.rows_written.borrow_mut().entry(class).or_default() += rows;
    }
}

/// The environment's bindings, each call counted in `ops`.
#[derive(Clone)]
pub struct Bindings {
    pub env: Env,
    pub ops: Ops,
    /// The invocation's request id (`log.rs`), sent to every Durable Object it calls, so that
    /// an object's error names the request it met it in.
    pub request_id: Rc<str>,
}

fn kv_unavailable(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::unavailable(what, e)
}

impl Bindings {
    /// The bindings of one invocation; its operation counts go to `sink` when the invocation's
    /// last work lets go of them.
    pub fn new(env: Env, sink: CountSink, request_id: &str) -> Self {
        Self {
            env,
            request_id: request_id.into(),
            ops: Ops(Rc::new(Tally {
                sink: Some(sink),
                used: Cell::default(),
                by_kind: RefCell::default(),
                rows_written: RefCell::default(),
            })),
        }
    }

    fn kv(&self, binding: &str) -> Result<KvStore, ApiError> {
        self.env
            .kv(binding)
            .map_err(|e| kv_unavailable("KV binding", e))
    }

    pub async fn kv_get_text(&self, binding: &str, key: &str) -> Result<Option<String>, ApiError> {
        let kv = self.kv(binding)?;
        self.ops.spend(OpKind::KvRead, 1)?;
        kv.get(key)
            .text()
            .await
            .map_err(|e| kv_unavailable("KV", e))
    }

    /// Writes a value; `ttl_s` (≥ 60, KV's minimum) makes it expire.
    pub async fn kv_put(
        &self,
        binding: &str,
        key: &str,
        value: String,
        ttl_s: Option<u64>,
    ) -> Result<(), ApiError> {
        let kv = self.kv(binding)?;
        self.ops.spend(OpKind::KvWrite, 1)?;
        let mut put = kv.put(key, value).map_err(|e| kv_unavailable("KV", e))?;
        if let Some(ttl) = ttl_s {
            put = put.expiration_ttl(ttl.max(60));
        }
        put.execute().await.map_err(|e| kv_unavailable("KV", e))
    }

    /// Sends `req` to the Durable Object named `name` of namespace `binding`. The reply's
    /// [`ROWS_WRITTEN_HEADER`] is added to this invocation's row count under `class`.
    pub async fn do_fetch(
        &self,
        binding: &str,
        class: &'static str,
        name: &str,
        req: Request,
    ) -> Result<Response, ApiError> {
        let unreachable = |e: worker::Error| ApiError {
            colony_failure: Some(ColonyFailure::Unreachable),
            ..ApiError::unavailable(class, e)
        };
        // DO_LOCATION_HINT: where an object is created, the first time it is named. An invalid
        // config answers 503 before any binding is used, so no hint is lost here.
        let hint = crate::env_config::config(&self.env)
            .map(|c| c.serving.do_location_hint.clone())
            .unwrap_or_default();
        let stub = self
            .env
            .durable_object(binding)
            .and_then(|ns| {
                if hint.is_empty() {
                    ns.get_by_name(name)
                } else {
                    ns.get_by_name_with_location_hint(name, &hint)
                }
            })
            .map_err(unreachable)?;
        self.ops.spend(OpKind::DoRequest, 1)?;
        let _ = req
            .headers()
            .set(crate::log::REQUEST_ID_HEADER, &self.request_id);
        let resp = stub.fetch_with_request(req).await.map_err(unreachable)?;
        if let Ok(Some(rows)) = resp.headers().get(ROWS_WRITTEN_HEADER) {
            if let Ok(rows) = rows.parse::<u64>() {
                self.ops.add_rows_written(class, rows);
            }
        }
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_the_operation_that_would_exceed_the_limit_and_counts_nothing_for_it() {
        let ops = Ops::default();
        ops.spend(OpKind::KvRead, 999).unwrap();
        let clone = ops.clone();
        clone.spend(OpKind::KvWrite, 1).unwrap();
        // KV's own limit: the 1,001st KV operation is refused, other subrequests are not.
        let refused = ops.spend(OpKind::KvWrite, 1).unwrap_err();
        assert_eq!(refused.status, 503);
        assert!(
            refused.message.contains("1000 KV operations"),
            "{}",
            refused.message
        );
        clone.spend(OpKind::DoRequest, LIMIT - 1_000).unwrap();
        assert_eq!(ops.used(), LIMIT);
        let refused = ops.spend(OpKind::DoRequest, 1).unwrap_err();
        assert!(
            refused.message.contains(BUDGET_EXCEEDED)
                && refused.message.contains("10000 subrequests"),
            "{}",
            refused.message
        );
        assert_eq!(ops.used(), LIMIT);
        assert_eq!(
            ops.by_kind(),
            vec![
                (OpKind::KvRead, 999),
                (OpKind::KvWrite, 1),
                (OpKind::DoRequest, LIMIT - 1_000)
            ]
        );
    }
}
