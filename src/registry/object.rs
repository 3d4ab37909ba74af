//! The Registry Durable Object: one global instance, the single writer of the admitted names
//! (`aco_core::registry`). Names live in memory, loaded once from the table `names`; an
//! admission writes its one row before it is applied to memory, so a failed request admits
//! nothing. Every reply carries `x-aco-rows-written`.
//!
//! Internal API, used only by `client.rs`: `POST /admit` (`AdmitRequest` → `AdmitReply`),
//! `GET /names?kind=<cluster|colony>&after=<name>&limit=<n>` (→ `Page`), and with
//! `kind=colony&cluster=<id>` the tenants of one cluster (`after` a tenant).

use std::cell::RefCell;

use aco_core::registry::{self, AdmitRequest, NameKind, Verdict};
use serde::Deserialize;
use worker::{
    durable_object, DurableObject, Env, Method, Request, Response, Result, SqlStorage, State,
};

use crate::bindings::ROWS_WRITTEN_HEADER;
use crate::env_config;
use crate::http::{json_response, text_response};

pub const BINDING: &str = "REGISTRY";
pub const CLASS: &str = "Registry";
pub const INSTANCE: &str = "global";

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
        let resp = json_response(200, &reply);
        resp.headers().set(ROWS_WRITTEN_HEADER, &rows.to_string())?;
        Ok(resp)
    }
}

#[derive(Deserialize)]
struct PageQuery {
    kind: String,
    after: Option<String>,
    limit: Option<usize>,
    cluster: Option<String>,
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
        match (req.method(), req.path().as_str()) {
            (Method::Post, "/admit") => {
                let request: AdmitRequest = req.json().await?;
                self.admit(&request)
            }
            (Method::Get, "/names") => {
                let query: PageQuery = req.query()?;
                let Some(kind) = NameKind::parse(&query.kind) else {
                    return Ok(text_response(400, "unknown kind".into(), "text/plain"));
                };
                let limit = query.limit.unwrap_or(registry::PAGE_LIMIT);
                let after = query.after.as_deref();
                let page = self.with_names(|n| match (kind, &query.cluster) {
                    (NameKind::Colony, Some(cluster)) => n.tenants(cluster, after, limit),
                    _ => n.page(kind, after, limit),
                })?;
                Ok(json_response(200, &page))
            }
            _ => Ok(text_response(
                404,
                "unknown registry route".into(),
                "text/plain",
            )),
        }
    }
}
