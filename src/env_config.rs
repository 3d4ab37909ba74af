//! Reads `aco_core::config::Config` from the Worker's `[vars]` once per isolate.

use std::cell::RefCell;
use std::rc::Rc;

use aco_core::config::{Config, ConfigError};
use worker::Env;

thread_local! {
    static CONFIG: RefCell<Option<Rc<Config>>> = const { RefCell::new(None) };
}

/// The validated config; an invalid var is reported (503 on the verbs, and on /readyz).
pub fn config(env: &Env) -> Result<Rc<Config>, ConfigError> {
    if let Some(c) = CONFIG.with(|c| c.borrow().clone()) {
        return Ok(c);
    }
    let config = Rc::new(Config::from_vars(|key| env.var(key).ok().map(|v| v.to_string()))?);
    CONFIG.with(|c| *c.borrow_mut() = Some(config.clone()));
    Ok(config)
}
