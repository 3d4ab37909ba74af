//! The Worker's side of the Colony object: [`call`] sends one typed request (see `api.rs`) to a
//! tenant's colony, and the decision traffic that follows prioritize goes through here.

use aco_core::colony_store::wire::{
    ColonyFailure, ColonySnapshot, CopyRequest, DecisionBatch, DecisionsReply,
};
use aco_core::metrics;

use super::api::{ColonyApi, ColonyName};
use super::{copy, queue};
use crate::bindings::Bindings;
use crate::clock;
use crate::http::ApiError;
use crate::object_call::{self, ObjectCall};
use crate::telemetry;

/// Sends `req` to the colony and decodes its reply. A non-200 is a 503 naming the colony, with
/// `colony_failure` set for the failure counters (`corrupt_state`, `error`, `unreachable`).
pub async fn call<C: ObjectCall<Api = ColonyApi>>(
    bindings: &Bindings,
    colony: &ColonyName,
    req: &C,
) -> Result<C::Reply, ApiError> {
    object_call::call(bindings, &colony.object_name(), req).await
}

/// Fetches the colony for this isolate's copy (prioritize without a fresh copy, shadow mode).
pub async fn fetch_copy(
    bindings: &Bindings,
    colony: &ColonyName,
    now_ms: u64,
) -> Result<ColonySnapshot, ApiError> {
    let snapshot = call(bindings, colony, &CopyRequest {}).await?;
    copy::refresh(colony, snapshot.version, Some(snapshot.clone()), now_ms);
    Ok(snapshot)
}

/// Counts the decisions a colony reply accepted for the first time, whichever request carried
/// them (the scheduled send, a placement batch, a read).
pub fn count_recorded(recorded: usize) {
    if recorded > 0 {
        telemetry::count(
            &metrics::COLONY_LOCAL_DECISIONS,
            &["recorded"],
            recorded as f64,
        );
    }
}

/// What a decisions reply settles: the decisions it made durable, and this isolate's copy.
/// (Items it dropped are in the colony's own report, `aco_colony_items_dropped_total`.)
fn settle(
    colony: &ColonyName,
    sent: &[aco_core::colony_store::wire::DecisionRecord],
    reply: &DecisionsReply,
) {
    count_recorded(queue::answered(colony, sent, reply.durability));
    copy::refresh(
        colony,
        reply.version,
        reply.snapshot.clone(),
        clock::now_ms(),
    );
}

/// After the response, `after_ms` later (`DECISION_FLUSH_MS`; see `queue::schedule_send`): the
/// colony remembers the decisions scored from this isolate's copy since the last send, and its
/// reply refreshes the copy if the colony moved on. A failure keeps them queued (the next
/// prioritize or placement batch of the tenant sends them again) and is counted.
pub async fn send_decisions(bindings: Bindings, colony: ColonyName, after_ms: u64) {
    if after_ms > 0 {
        worker::Delay::from(std::time::Duration::from_millis(after_ms)).await;
    }
    let decisions = queue::take_unsent(&colony);
    if decisions.is_empty() {
        return;
    }
    let known_version = copy::version_of(&colony).unwrap_or(0);
    let now_ms = clock::now_ms();
    let batch = DecisionBatch {
        decisions,
        known_version,
        now_ms,
    };
    let sent = batch.decisions.len() as f64;
    match call(&bindings, &colony, &batch).await {
        Ok(reply) => {
            settle(&colony, &batch.decisions, &reply);
            // The reply may have carried the colony's report, and no request of this
            // invocation is left to schedule the flush that delivers it.
            let flush_ms = crate::env_config::config(&bindings.env)
                .map(|c| c.serving.telemetry_flush_ms)
                .unwrap_or(0);
            if let Some(flush) = telemetry::schedule_flush(bindings.clone(), flush_ms) {
                flush.await;
            }
        }
        Err(e) => {
            queue::failed(&colony, &batch.decisions);
            let message = format!(
                "{sent} decisions of colony {:?} not recorded yet: {}",
                colony.object_name(),
                e.message
            );
            crate::log::error("prioritize", Some(&bindings.request_id), &message);
            let reason = e.colony_failure.unwrap_or(ColonyFailure::Error);
            telemetry::count(&metrics::COLONY_ERRORS, &[reason.label()], 1.0);
            telemetry::count(&metrics::COLONY_LOCAL_DECISIONS, &["retry"], sent);
        }
    }
}

/// Sends every decision of the tenant this isolate has not seen durable (in flight ones too:
/// the colony applies each once), so that what follows reads them.
pub async fn send_not_durable(bindings: &Bindings, colony: &ColonyName) -> Result<(), ApiError> {
    let decisions = queue::not_durable(colony);
    if decisions.is_empty() {
        return Ok(());
    }
    let batch = DecisionBatch {
        decisions,
        known_version: 0,
        now_ms: clock::now_ms(),
    };
    let reply = call(bindings, colony, &batch).await?;
    settle(colony, &batch.decisions, &reply);
    Ok(())
}
