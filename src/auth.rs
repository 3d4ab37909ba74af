//! Bearer-token checks of the admin/ingest routes (`ADMIN_TOKEN`) and of `/metrics`
//! (`METRICS_TOKEN`). Each token is a secret (`wrangler secret put`; a `.dev.vars` entry or a
//! test binding locally); one that could be guessed is refused as unconfigured
//! (`aco_core::access::BearerTokens`), so the routes it guards are disabled rather than open.
//! The comparison takes the same time whatever the token, so its bytes cannot be guessed one
//! at a time.

use aco_core::access::BearerTokens;
use aco_core::config::ConfigError;
use worker::{Env, Request};

use crate::http::ApiError;

pub const ADMIN_TOKEN: &str = "ADMIN_TOKEN";
pub const METRICS_TOKEN: &str = "METRICS_TOKEN";

/// The configured tokens of secret `key`, or why it cannot be used.
pub fn configured(env: &Env, key: &str) -> Result<BearerTokens, ConfigError> {
    let value = env
        .secret(key)
        .map(|s| s.to_string())
        .or_else(|_| env.var(key).map(|v| v.to_string()))
        .ok();
    BearerTokens::from_secret(key, value.as_deref())
}

/// The request carries `Authorization: Bearer <one of key's tokens>`: else 401, or 503 when
/// the secret is unset or unusable (the route is disabled, never open).
pub fn require_bearer(req: &Request, env: &Env, key: &str) -> Result<(), ApiError> {
    let tokens = configured(env, key).map_err(|e| {
        ApiError::new(
            503,
            format!("{e}; the routes it guards are disabled until it is set"),
        )
    })?;
    let header = req.headers().get("authorization").ok().flatten();
    tokens
        .check(header.as_deref())
        .map_err(|r| ApiError::new(r.status, r.message))
}

/// [`require_bearer`] of `ADMIN_TOKEN`: what every admin handler checks again itself, so a
/// handler is never reachable without it whatever the routing says.
pub fn require_admin(req: &Request, env: &Env) -> Result<(), ApiError> {
    require_bearer(req, env, ADMIN_TOKEN)
}
