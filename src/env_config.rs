//! Reads `aco_core::config::Config` from the Worker's `[vars]` once per isolate.

use std::rc::Rc;

use aco_core::access::ExtenderAuth;
use aco_core::config::{Config, ConfigError};
use worker::Env;

use crate::isolate;

/// `EXTENDER_AUTH` and its credentials (`EXTENDER_TOKENS` is read from a secret first, then a var).
pub fn extender_auth(env: &Env) -> Result<Rc<ExtenderAuth>, ConfigError> {
    if let Some(a) = isolate::with(|i| i.auth.borrow().clone()) {
        return Ok(a);
    }
    let auth = Rc::new(ExtenderAuth::from_vars(|key| {
        env.secret(key)
            .ok()
            .map(|s| s.to_string())
            .or_else(|| env.var(key).ok().map(|v| v.to_string()))
    })?);
    isolate::with(|i| *i.auth.borrow_mut() = Some(auth.clone()));
    Ok(auth)
}

/// The validated config; an invalid var is reported (503 on the verbs, and on /readyz).
pub fn config(env: &Env) -> Result<Rc<Config>, ConfigError> {
    if let Some(c) = isolate::with(|i| i.config.borrow().clone()) {
        return Ok(c);
    }
    let config = Config::from_vars(|key| env.var(key).ok().map(|v| v.to_string()))?;
    // Whoever can call the verbs could set the clock: only where nobody is authenticated.
    if config.testing.test_clock_header && !matches!(*extender_auth(env)?, ExtenderAuth::None) {
        return Err(ConfigError {
            key: "TEST_CLOCK_HEADER".into(),
            value: "true".into(),
            reason: "tests only: refused unless EXTENDER_AUTH=none (a production Worker \
                     authenticates its verbs)"
                .into(),
        });
    }
    let config = Rc::new(config);
    isolate::with(|i| *i.config.borrow_mut() = Some(config.clone()));
    Ok(config)
}
