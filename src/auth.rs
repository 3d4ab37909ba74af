//! Bearer-token check for the admin and ingest endpoints. The token comes from the `ADMIN_TOKEN`
//! secret (or var, for local development). The comparison takes the same time whatever the
//! token, so its bytes cannot be guessed one at a time.

use worker::{Env, Request};

use aco_core::access::constant_time_eq;

use crate::http::ApiError;

pub fn require_admin(req: &Request, env: &Env) -> Result<(), ApiError> {
    let expected = env
        .secret("ADMIN_TOKEN")
        .map(|s| s.to_string())
        .or_else(|_| env.var("ADMIN_TOKEN").map(|v| v.to_string()))
        .map_err(|_| {
            ApiError::new(
                503,
                "ADMIN_TOKEN is not configured; admin endpoints are disabled",
            )
        })?;
    if expected.is_empty() {
        return Err(ApiError::new(
            503,
            "ADMIN_TOKEN is empty; admin endpoints are disabled",
        ));
    }
    let header = req
        .headers()
        .get("authorization")
        .ok()
        .flatten()
        .unwrap_or_default();
    let Some(given) = header.strip_prefix("Bearer ").map(str::trim) else {
        return Err(ApiError::new(401, "missing Authorization: Bearer <token>"));
    };
    if constant_time_eq(given.as_bytes(), expected.as_bytes()) {
        Ok(())
    } else {
        Err(ApiError::new(401, "invalid bearer token"))
    }
}
