//! The Registry Durable Object: one global instance, the single writer of the admitted names
//! (`aco_core::registry`). Names live in memory, loaded once from the table `names`; an
//! admission writes its one row before it is applied to memory, so a failed request admits
//! nothing. Every reply carries `x-aco-rows-written`.
//!
//! Internal API (`api.rs`, used only by `client.rs`): `/admit` (`AdmitRequest` → `AdmitReply`),
//! `/names` (`PageRequest` → `Page`: names of a kind, or the tenants of one cluster).

use std::cell::RefCell;

use aco_core::registry::{self, AdmitRequest, PageRequest, Verdict};
use serde::Deserialize;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, State};

use super::api::{RegistryApi, Route};
use crate::bindings::ROWS_WRITTEN_HEADER;
use crate::env_config;
use crate::http::{json_response, text_response};
use crate::object_call::{self, Incoming};

#[durable_object]
pub struct Registry {
    sql: SqlStorage,
    env: Env,
    names: RefCell<Option<registry::Registry>>,
}

impl Registry {
    fn with_names<T>(&self, f: impl FnOnce(&mut registry::Registry) -> T) -> Result<T> {
        let mut slot = self.names.borrow_mut();
        let names = match slot.take() {
            Some(n) => n,
            None => self.load()?,
        };
        Ok(f(slot.insert(names)))
    }

    fn load(&self) -> Result<registry::Registry> {
        self.sql.exec(registry::CREATE_TABLE, None)?;
        #[derive(Deserialize)]
        struct Row {
            kind: String,
            name: String,
        }
        let rows: Vec<Row> = self.sql.exec(registry::SELECT_ALL, None)?.to_array()?;
        Ok(registry::Registry::from_rows(
            rows.iter().map(|r| (r.kind.as_str(), r.name.as_str())),
        ))
    }

    fn admit(&self, request: &AdmitRequest) -> Result<Response> {
        if let Err(message) = registry::validate(request.kind, &request.name) {
            return Ok(json_response(
                400,
                &serde_json::json!({"error": message, "field": "name"}),
            ));
        }
        let limits = env_config::config(&self.env)
            .map_err(|e| worker::Error::RustError(e.to_string()))?
            .registry_limits();
        let verdict = self.with_names(|n| n.admit(request.kind, &request.name, limits))?;
        let mut rows = 0;
        if verdict == Verdict::Admitted {
            let cursor = self.sql.exec(
                registry::INSERT,
                Some(vec![
                    request.kind.as_str().into(),
                    request.name.as_str().into(),
                ]),
            )?;
            rows = cursor.rows_written();
            self.with_names(|n| n.commit(request.kind, &request.name))?;
        }
        let reply = self.with_names(|n| n.reply(request.kind, verdict, limits))?;
        let resp = text_json(object_call::reply::<AdmitRequest>(&reply))?;
        resp.headers().set(ROWS_WRITTEN_HEADER, &rows.to_string())?;
        Ok(resp)
    }
}

fn text_json(body: serde_json::Result<String>) -> Result<Response> {
    let body = body.map_err(|e| worker::Error::RustError(e.to_string()))?;
    Ok(text_response(200, body, "application/json"))
}

impl DurableObject for Registry {
    fn new(state: State, env: Env) -> Self {
        Self {
            sql: state.storage().sql(),
            env,
            names: RefCell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let incoming = match Incoming::<RegistryApi>::read(&mut req).await {
            Ok(incoming) => incoming,
            Err(e) => return Ok(text_response(404, e.to_string(), "text/plain")),
        };
        let bad = |e: String| Ok(text_response(400, e, "text/plain"));
        match incoming.route {
            Route::Admit => match incoming.call::<AdmitRequest>() {
                Ok(request) => self.admit(&request),
                Err(e) => bad(e),
            },
            Route::Names => match incoming.call::<PageRequest>() {
                Ok(request) => text_json(object_call::reply::<PageRequest>(
                    &self.with_names(|n| n.answer(&request))?,
                )),
                Err(e) => bad(e),
            },
        }
    }
}
