//! Routing, one file per endpoint. `dispatch` times every request and reports it to the
//! Telemetry Durable Object after the response is sent (`waitUntil`), so metrics never add
//! latency to a scheduling decision; it also writes the request's JSON log line with its id
//! (`log.rs`), which the response carries back in `x-request-id`.
//!
//! A path is parsed once into a [`Route`] (`aco_core::route`, the routing as pure data); every
//! match on it is exhaustive, so a new route cannot be added without its handler.

mod admission;
mod bind;
mod decisions;
mod extender_verbs;
mod names;
mod nodes;
mod ops;
mod placements;
mod shadow;
mod tenants;
mod transfer;

use aco_core::metrics;
use std::rc::Rc;

use aco_core::access::{ClientCert, ExtenderAuth};
use aco_core::api::reporter_view::ReporterView;
use aco_core::cluster::{ClusterId, TenantId};
use aco_core::config::Config;
use aco_core::registry::NameKind;
use aco_core::request_log::RequestLine;
pub use aco_core::route::Probe;
use aco_core::route::{parse_path, Guard, Method as RouteMethod, PathError, Route};
use worker::{Context, Date, Env, Method, Request, Response};

use crate::auth::{self, require_bearer};
use crate::bindings::{self, Bindings};
use crate::clock;
use crate::env_config;
use crate::http::{drain, json_response, ApiError};
use crate::log;
use crate::registry;
use crate::telemetry::{self, Event};

/// What a handler gets: the request, the environment, the validated config and the request's
/// telemetry event to add counters to.
pub struct Call {
    pub req: Request,
    pub env: Env,
    /// Every binding call of this invocation, counted against the platform's limit.
    pub bindings: Bindings,
    pub config: Rc<Config>,
    pub event: Event,
    /// When the request happens (`clock::of_request`).
    pub now_ms: u64,
    /// From `/c/<cluster>/…`, else the default cluster: keys facts and colonies.
    pub cluster: ClusterId,
    /// Handed to `waitUntil` after the response.
    pub deferred: Vec<Deferred>,
    /// The tenant the request turned out to be about (the log line's), where a handler knows it.
    pub tenant: Option<String>,
}

type Handled = Result<Response, ApiError>;
/// Work to finish after the response (`waitUntil`): e.g. recording a decision scored locally.
pub type Deferred = std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>;
/// What a request came to: the response, its telemetry, the work left for after it, and what
/// its log line says it was about.
struct Routed {
    response: Response,
    event: Event,
    deferred: Vec<Deferred>,
    /// A named cluster, once the request was authenticated for it.
    cluster: Option<ClusterId>,
    tenant: Option<String>,
}

impl Routed {
    /// A request answered before any handler ran (refused, or a probe).
    fn early(response: Response, event: Event) -> Self {
        Self {
            response,
            event,
            deferred: Vec::new(),
            cluster: None,
            tenant: None,
        }
    }
}

pub async fn dispatch(req: Request, env: Env, ctx: Context) -> Response {
    let started = Date::now().as_millis();
    let method = req.method();
    let path = req.path();
    let request_id = log::request_id(&req);
    let bindings = Bindings::new(env.clone(), telemetry::count, &request_id);
    let (verb, routed) = route(method.clone(), &path, req, bindings.clone()).await;
    let Routed {
        response,
        mut event,
        deferred,
        cluster,
        tenant,
    } = routed;
    // Set on the response we built ourselves; a header that cannot be set changes nothing else.
    let _ = response
        .headers()
        .set(bindings::OPS_HEADER, &bindings.ops.used().to_string());
    let _ = response.headers().set(log::REQUEST_ID_HEADER, &request_id);
    let duration_ms = Date::now().as_millis().saturating_sub(started);
    log::request(&RequestLine::new(
        &request_id,
        method.as_ref(),
        verb.unwrap_or("probe"),
        cluster.as_ref().map(ClusterId::as_str),
        tenant.as_deref(),
        response.status_code(),
        duration_ms,
        bindings.ops.used(),
    ));
    if let Some(verb) = verb {
        event.verb = verb.to_string();
        event.code = response.status_code();
        event.seconds = duration_ms as f64 / 1000.0;
        telemetry::record(&event);
    }
    for work in deferred {
        ctx.wait_until(work);
    }
    // Counters go out at most TELEMETRY_FLUSH_MS from now, in this invocation's waitUntil (an
    // invalid config has been answered with 503 above; its requests are still counted).
    let flush_ms = env_config::config(&env)
        .map(|c| c.serving.telemetry_flush_ms)
        .unwrap_or(0);
    if let Some(flush) = telemetry::schedule_flush(bindings, flush_ms) {
        ctx.wait_until(flush);
    }
    response
}

/// Applies `EXTENDER_AUTH` to an extender verb.
fn authenticate(req: &Request, env: &Env, token: Option<&str>) -> Result<(), ApiError> {
    let auth = env_config::extender_auth(env).map_err(|e| ApiError::new(503, e.to_string()))?;
    let cert = match *auth {
        ExtenderAuth::Mtls { .. } => client_cert(req),
        _ => None,
    };
    auth.check(token, cert.as_ref())
        .map_err(|r| ApiError::new(r.status, r.message))
}

/// `request.cf.tlsClientAuth`, read field by field (no panicking accessors); None when absent.
fn client_cert(req: &Request) -> Option<ClientCert> {
    use worker::js_sys::Reflect;
    use worker::wasm_bindgen::JsValue;
    let get = |o: &JsValue, k: &str| {
        Reflect::get(o, &JsValue::from_str(k))
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_null())
    };
    let cf = get(req.inner().as_ref(), "cf")?;
    let tls = get(&cf, "tlsClientAuth")?;
    let text = |k: &str| get(&tls, k).and_then(|v| v.as_string()).unwrap_or_default();
    Some(ClientCert {
        cert_verified: text("certVerified"),
        fingerprint_sha256: text("certFingerprintSHA256"),
        issuer_dn: text("certIssuerDN"),
    })
}

fn methods_text(methods: &[RouteMethod]) -> String {
    methods
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Picks the handler and runs it. Returns the verb label for metrics.
async fn route(
    method: Method,
    path: &str,
    mut req: Request,
    bindings: Bindings,
) -> (Option<&'static str>, Routed) {
    let env = bindings.env.clone();
    // `/c/<cluster>/…`: the cluster this request is about (paths without it: the default one).
    // `/t/<token>/v1/<verb>`: the extender verbs' token path (EXTENDER_AUTH=path-token).
    let (cluster, token, route) = match parse_path(path) {
        Ok(t) => (t.cluster, t.token, t.route),
        Err(PathError::Cluster(message)) => {
            drain(&mut req).await;
            let e = ApiError::field(400, "cluster", message);
            return (
                Some("unknown"),
                Routed::early(e.into_response(), Event::default()),
            );
        }
        Err(PathError::NoRoute) => {
            drain(&mut req).await;
            let e = ApiError::new(404, format!("no route for {} {path}", method.as_ref()));
            return (
                Some("unknown"),
                Routed::early(e.into_response(), Event::default()),
            );
        }
    };
    let verb = route.verb();
    if let Route::Probe(probe) = route {
        drain(&mut req).await;
        let response = ops::health(probe, &method, &env).unwrap_or_else(ApiError::into_response);
        return (verb, Routed::early(response, Event::default()));
    }
    let config = match env_config::config(&env) {
        Ok(c) => c,
        Err(e) => {
            drain(&mut req).await;
            let response = ApiError::new(503, e.to_string()).into_response();
            return (verb, Routed::early(response, Event::default()));
        }
    };
    let now_ms = match clock::of_request(&req, &config.testing) {
        Ok(t) => t,
        Err(e) => {
            drain(&mut req).await;
            return (verb, Routed::early(e.into_response(), Event::default()));
        }
    };
    // Refused requests are counted without a `cluster` label and touch no object: neither an
    // unknown cluster id nor an unauthenticated caller can add a series, a row or a Durable
    // Object (docs/limits.md).
    if !config.cluster_allowed(cluster.as_str()) {
        drain(&mut req).await;
        let e = ApiError::field(
            404,
            "cluster",
            format!(
                "cluster {:?} is not served here (CLUSTERS, CLUSTER_PATTERN)",
                cluster.as_str()
            ),
        );
        return (verb, Routed::early(e.into_response(), Event::default()));
    }
    let refused = match route.guard() {
        Guard::Open => None,
        Guard::ExtenderVerb => authenticate(&req, &env, token).err().map(|e| {
            let mut event = Event::default();
            event.count(
                &metrics::EXTENDER_AUTH_FAILURES,
                &[&e.status.to_string()],
                1.0,
            );
            (e, event)
        }),
        Guard::Admin => require_bearer(&req, &env, auth::ADMIN_TOKEN)
            .err()
            .map(|e| (e, Event::default())),
        Guard::Scrape => require_bearer(&req, &env, auth::METRICS_TOKEN)
            .err()
            .map(|e| (e, Event::default())),
    };
    if let Some((e, event)) = refused {
        drain(&mut req).await;
        return (verb, Routed::early(e.into_response(), event));
    }
    // Only a request authenticated as the extender or an admin carries its cluster's label.
    let authenticated = matches!(route.guard(), Guard::ExtenderVerb | Guard::Admin);
    // A named cluster exists once the Registry admitted it (MAX_CLUSTERS), before any object or
    // label is made for it; a refusal, like an unknown id, is counted without a label.
    if authenticated && !cluster.is_default() && route.admits_cluster() {
        let admitted =
            registry::client::admit(&bindings, NameKind::Cluster, cluster.as_str(), now_ms).await;
        let refusal = match admitted {
            Ok(true) => None,
            Ok(false) => Some(ApiError::field(
                404,
                "cluster",
                format!(
                    "cluster {:?} is not served: MAX_CLUSTERS ({}) clusters exist",
                    cluster.as_str(),
                    config.bounds.max_clusters
                ),
            )),
            Err(e) => Some(e),
        };
        if let Some(e) = refusal {
            drain(&mut req).await;
            let mut event = Event::default();
            event.count(&metrics::CLUSTERS_REFUSED, &[], 1.0);
            return (verb, Routed::early(e.into_response(), event));
        }
    }
    let event = Event {
        cluster: if cluster.is_default() || !authenticated {
            String::new()
        } else {
            cluster.to_string()
        },
        ..Event::default()
    };
    let mut call = Call {
        req,
        env,
        bindings,
        config,
        event,
        now_ms,
        cluster,
        deferred: Vec::new(),
        tenant: route.tenant().map(str::to_string),
    };
    let result = if !route
        .methods()
        .contains(&RouteMethod::parse(method.as_ref()))
    {
        Err(ApiError::new(
            405,
            format!(
                "{} accepts {}",
                verb.unwrap_or("this route"),
                methods_text(route.methods())
            ),
        ))
    } else {
        handle(&mut call, route, method).await
    };
    drain(&mut call.req).await;
    if let Err(ApiError {
        colony_failure: Some(reason),
        message,
        ..
    }) = &result
    {
        log::error(
            verb.unwrap_or("request"),
            Some(&call.bindings.request_id),
            message,
        );
        call.event
            .count(&metrics::COLONY_ERRORS, &[reason.label()], 1.0);
    }
    let routed = Routed {
        response: result.unwrap_or_else(ApiError::into_response),
        event: call.event,
        deferred: call.deferred,
        cluster: (authenticated && !call.cluster.is_default()).then_some(call.cluster),
        tenant: call.tenant,
    };
    (verb, routed)
}

/// A tenant named by the path, where it enters: 400 naming `tenant` unless it is valid.
fn path_tenant(text: &str) -> Result<TenantId, ApiError> {
    TenantId::parse(text).map_err(|m| ApiError::field(400, "tenant", m))
}

/// Runs the route's handler (its method already checked).
async fn handle(call: &mut Call, route: Route<'_>, method: Method) -> Handled {
    match route {
        Route::Probe(probe) => ops::health(probe, &method, &call.env),
        Route::Filter => extender_verbs::filter(call).await,
        Route::Prioritize => extender_verbs::prioritize(call).await,
        Route::Bind => bind::bind(call).await,
        Route::Placements => placements::placements(call).await,
        Route::Nodes => nodes::put_nodes(call).await,
        Route::Node(name) => nodes::get_node(call, name).await,
        Route::Echo => ops::echo(call).await,
        Route::Metrics => ops::metrics(call).await,
        Route::Pheromones(tenant) => tenants::pheromones(call, &path_tenant(tenant)?, method).await,
        Route::Shadow => shadow::report(call).await,
        Route::ShadowSummary(tenant) => shadow::summary(call, &path_tenant(tenant)?).await,
        Route::Decision(tenant, uid, None) => {
            decisions::decision(call, &path_tenant(tenant)?, uid).await
        }
        Route::Decision(tenant, namespace, Some(name)) => {
            let key = format!("{namespace}/{name}");
            decisions::decision(call, &path_tenant(tenant)?, &key).await
        }
        Route::Clusters => names::clusters(call).await,
        Route::Tenants => names::tenants(call).await,
        Route::Export(tenant) => transfer::export(call, &path_tenant(tenant)?).await,
        Route::Import(tenant) => transfer::import(call, &path_tenant(tenant)?).await,
        Route::ReporterView => Ok(json_response(200, &ReporterView::of(&call.config))),
    }
}
