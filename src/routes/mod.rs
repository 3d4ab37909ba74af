//! Routing, one file per endpoint. `dispatch` times every request and reports it to the
//! Telemetry Durable Object after the response is sent (`waitUntil`), so metrics never add
//! latency to a scheduling decision.

mod bind;
mod extender_verbs;
mod nodes;
mod ops;
mod placements;
mod tenants;

use std::rc::Rc;

use aco_core::config::Config;
use worker::{Context, Date, Env, Method, Request, Response};

use crate::env_config;
use crate::http::{drain, ApiError};
use crate::telemetry::{self, Event};

/// What a handler gets: the request, the environment, the validated config and the request's
/// telemetry event to add counters to.
pub struct Call {
    pub req: Request,
    pub env: Env,
    pub config: Rc<Config>,
    pub event: Event,
    pub now_ms: u64,
}

type Handled = Result<Response, ApiError>;
type Routed = (Response, Event);

pub async fn dispatch(req: Request, env: Env, ctx: Context) -> Response {
    let started = Date::now().as_millis();
    let method = req.method();
    let path = req.path();
    let (verb, (response, mut event)) = route(method, &path, req, env.clone(), started).await;
    if let Some(verb) = verb {
        event.verb = verb.to_string();
        event.code = response.status_code();
        event.seconds = Date::now().as_millis().saturating_sub(started) as f64 / 1000.0;
        ctx.wait_until(telemetry::record(env, event));
    }
    response
}

/// Picks the handler. Returns the verb label for metrics (None for health probes, which
/// would otherwise dominate the counters).
async fn route(method: Method, path: &str, mut req: Request, env: Env, now_ms: u64) -> (Option<&'static str>, Routed) {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let verb: &'static str = match segments.as_slice() {
        ["livez"] | ["readyz"] | ["version"] => {
            return (None, (ops::health(segments[0], &method, &env).unwrap_or_else(ApiError::into_response), Event::default()))
        }
        ["metrics"] => "metrics",
        ["v1", "filter"] => "filter",
        ["v1", "prioritize"] => "prioritize",
        ["v1", "bind"] => "bind",
        ["v1", "placements"] => "placements",
        ["v1", "nodes"] => "nodes",
        ["v1", "nodes", _] => "node",
        ["v1", "echo"] => "echo",
        ["v1", "tenants", _, "pheromones"] => "pheromones",
        _ => {
            drain(&mut req).await;
            let e = ApiError::new(404, format!("no route for {} {path}", method.as_ref()));
            return (Some("unknown"), (e.into_response(), Event::default()));
        }
    };
    let config = match env_config::config(&env) {
        Ok(c) => c,
        Err(e) => {
            drain(&mut req).await;
            return (Some(verb), (ApiError::new(503, e.to_string()).into_response(), Event::default()));
        }
    };
    let mut call = Call { req, env, config, event: Event::default(), now_ms };
    let expected: &[Method] = match verb {
        "metrics" => &[Method::Get],
        "nodes" => &[Method::Put],
        "node" => &[Method::Get],
        "pheromones" => &[Method::Get, Method::Delete],
        _ => &[Method::Post],
    };
    let result = if !expected.contains(&method) {
        Err(ApiError::new(405, format!("{verb} accepts {}", expected.iter().map(|m| m.as_ref()).collect::<Vec<_>>().join(", "))))
    } else {
        match verb {
            "filter" => extender_verbs::filter(&mut call).await,
            "prioritize" => extender_verbs::prioritize(&mut call).await,
            "bind" => bind::bind(&mut call).await,
            "placements" => placements::placements(&mut call).await,
            "nodes" => nodes::put_nodes(&mut call).await,
            "node" => nodes::get_node(&mut call, segments[2]).await,
            "echo" => ops::echo(&mut call).await,
            "metrics" => ops::metrics(&mut call).await,
            "pheromones" => tenants::pheromones(&mut call, segments[2], method).await,
            _ => unreachable!("every verb above has a handler"),
        }
    };
    drain(&mut call.req).await;
    (Some(verb), (result.unwrap_or_else(ApiError::into_response), call.event))
}
