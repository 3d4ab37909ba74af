//! The Worker's clock: the wall clock — or, with `TEST_CLOCK_HEADER` (tests only), the time each
//! request carries in [`HEADER`], so that a trace replay runs the Worker and its objects on the
//! trace's clock: facts' freshness, outcome fading, spot exposure and assumed placements then
//! age as they do in the simulator (`tests/replay_matches_native.rs`).
//!
//! Work that no request times (decisions sent after a response, an object's commits and alarm)
//! reads [`now_ms`]: the latest time this isolate was given, so the Worker forwards it to the
//! objects it calls ([`forward`]).

use aco_core::config::TestHooks;
use worker::{Date, Headers, Request};

use crate::http::ApiError;
use crate::isolate;

/// The request's time in ms since the epoch, under `TEST_CLOCK_HEADER`.
pub const HEADER: &str = "x-aco-test-now-ms";

fn wall_ms() -> u64 {
    Date::now().as_millis()
}

/// When `req` happens: the wall clock, or under `TEST_CLOCK_HEADER` its header (then required:
/// a request on another clock would move this isolate's by years).
pub fn of_request(req: &Request, hooks: &TestHooks) -> Result<u64, ApiError> {
    if !hooks.test_clock_header {
        return Ok(wall_ms());
    }
    let value = req.headers().get(HEADER).ok().flatten().ok_or_else(|| {
        ApiError::field(
            400,
            HEADER,
            "TEST_CLOCK_HEADER is set: every request carries its time (ms since the epoch)",
        )
    })?;
    let at: u64 = value.trim().parse().map_err(|_| {
        ApiError::field(
            400,
            HEADER,
            format!("{value:?} is not a time in ms since the epoch"),
        )
    })?;
    isolate::with(|i| {
        let g = &i.given_clock_ms;
        g.set(Some(g.get().map_or(at, |t| t.max(at))))
    });
    Ok(at)
}

/// Now, for work that no request times: the latest time a request gave this isolate under
/// `TEST_CLOCK_HEADER`, else the wall clock.
pub fn now_ms() -> u64 {
    isolate::with(|i| i.given_clock_ms.get()).unwrap_or_else(wall_ms)
}

/// Sets this isolate's given time on a request to one of the Worker's objects, so that the
/// object runs on the same clock (nothing without `TEST_CLOCK_HEADER`).
pub fn forward(headers: &Headers) -> worker::Result<()> {
    match isolate::with(|i| i.given_clock_ms.get()) {
        Some(at) => headers.set(HEADER, &at.to_string()),
        None => Ok(()),
    }
}
