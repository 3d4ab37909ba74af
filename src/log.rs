//! The Worker's log: JSON lines (`aco_core::request_log`), one per request served (`routes`'
//! dispatch) and one per error, each with its request id — the caller's `x-request-id` when it
//! is a plausible one, else one made here — so that a kube-scheduler call, the Worker's line, a
//! Durable Object's error and the reporter's delivery can be found together. Errors go to
//! `console.error` (level error in Workers Logs), requests to `console.log`.

use aco_core::request_log::{accepted_request_id, request_id_from, ErrorLine, RequestLine};
use worker::Request;

pub use aco_core::request_log::REQUEST_ID_HEADER;

/// The request's id: its `x-request-id` if acceptable, else 16 random bytes in hex.
pub fn request_id(req: &Request) -> String {
    let given = req.headers().get(REQUEST_ID_HEADER).ok().flatten();
    match given.as_deref().and_then(accepted_request_id) {
        Some(id) => id.to_string(),
        None => {
            let mut bytes = [0u8; 16];
            if getrandom::fill(&mut bytes).is_err() {
                // No randomness: the clock still tells requests apart in a log.
                bytes[..8].copy_from_slice(&worker::Date::now().as_millis().to_be_bytes());
            }
            request_id_from(bytes)
        }
    }
}

/// The request's id as a Durable Object got it from the Worker (`None` when it carries none).
pub fn forwarded_id(req: &Request) -> Option<String> {
    req.headers()
        .get(REQUEST_ID_HEADER)
        .ok()
        .flatten()
        .filter(|id| accepted_request_id(id).is_some())
}

pub fn request(line: &RequestLine) {
    worker::console_log!("{}", line.to_json());
}

/// An error met while serving `request_id` (if known), in `what` (`prioritize`, `colony`, …).
pub fn error(what: &str, request_id: Option<&str>, error: &str) {
    worker::console_error!("{}", ErrorLine::new(what, request_id, error).to_json());
}

/// An error a Durable Object met (`object`: its name).
pub fn object_error(what: &str, object: &str, request_id: Option<&str>, error: &str) {
    worker::console_error!(
        "{}",
        ErrorLine::new(what, request_id, error)
            .object(object)
            .to_json()
    );
}
