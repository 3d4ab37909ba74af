//! Reads `aco_core::config::Config` from the Worker's `[vars]` once per isolate.

use std::cell::RefCell;
use std::rc::Rc;

use aco_core::access::ExtenderAuth;
use aco_core::config::{Config, ConfigError};
use worker::Env;

thread_local! {
    static CONFIG: RefCell<Option<Rc<Config>>> = const { RefCell::new(None) };
    static AUTH: RefCell<Option<Rc<ExtenderAuth>>> = const { RefCell::new(None) };
}

/// `EXTENDER_AUTH` and its credentials (`EXTENDER_TOKENS` is read from a secret first, then a var).
pub fn extender_auth(env: &Env) -> Result<Rc<ExtenderAuth>, ConfigError> {
    if let Some(a) = AUTH.with(|a| a.borrow().clone()) {
        return Ok(a);
    }
    let auth = Rc::new(ExtenderAuth::from_vars(|key| {
        env.secret(key)
            .ok()
            .map(|s| s.to_string())
            .or_else(|| env.var(key).ok().map(|v| v.to_string()))
    })?);
    AUTH.with(|a| *a.borrow_mut() = Some(auth.clone()));
    Ok(auth)
}

/// The validated config; an invalid var is reported (503 on the verbs, and on /readyz).
pub fn config(env: &Env) -> Result<Rc<Config>, ConfigError> {
    if let Some(c) = CONFIG.with(|c| c.borrow().clone()) {
        return Ok(c);
    }
    let config = Rc::new(Config::from_vars(|key| {
        env.var(key).ok().map(|v| v.to_string())
    })?);
    CONFIG.with(|c| *c.borrow_mut() = Some(config.clone()));
    Ok(config)
}
