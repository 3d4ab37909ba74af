//! The typed call pattern every Durable Object's internal API follows (Colony, Facts, Registry,
//! Telemetry): a request type names its object, its route and its reply type
//! ([`ObjectCall`]), so the Worker's side ([`call`]) and the object's router
//! ([`Incoming::call`], [`reply`]) cannot disagree on a path or a body. Every call is a `POST` of
//! the request's JSON to the route's one path; the reply is JSON of the reply type. What differs
//! between objects — a header naming the instance, an envelope around the reply, how a failure
//! reads — is the object's [`ObjectApi`], declared once beside its routes (`<object>/api.rs`).

use aco_core::colony_store::wire::ColonyFailure;
use serde::de::DeserializeOwned;
use serde::Serialize;
use worker::{Method, Request, RequestInit};

use crate::bindings::Bindings;
use crate::http::ApiError;

/// One Durable Object class's internal API: its binding, its routes, and how its answers read.
pub trait ObjectApi: 'static {
    /// The namespace binding (`wrangler.toml`).
    const BINDING: &'static str;
    /// Class label of the binding counters (`aco_do_rows_written_total{class}`).
    const CLASS: &'static str;
    /// The object's routes, each with one path in [`ObjectApi::ROUTES`].
    type Route: Copy + Eq + std::fmt::Debug + 'static;
    const ROUTES: &'static [(Self::Route, &'static str)];

    /// Sets what the object reads beside the body (its instance's name, the clock).
    fn prepare(_request: &Request, _instance: &str) -> Result<(), worker::Error> {
        Ok(())
    }

    /// A 200's body as the reply.
    fn read_reply<R: DeserializeOwned>(text: &str) -> serde_json::Result<R> {
        serde_json::from_str(text)
    }

    /// A non-200 answer as the caller's error (by default a 503: the object failed).
    fn failure(_instance: &str, status: u16, text: &str) -> ApiError {
        ApiError::new(
            503,
            format!("{} Durable Object answered {status}: {text}", Self::CLASS),
        )
    }

    /// The object could not be reached: the error arrives marked as a colony's
    /// (`colony_failure: unreachable`, as `Bindings::do_fetch` marks it), which only the Colony
    /// keeps.
    fn unreachable(e: ApiError) -> ApiError {
        ApiError {
            colony_failure: None,
            ..e
        }
    }
}

/// A route's one path.
pub fn path<A: ObjectApi>(route: A::Route) -> &'static str {
    A::ROUTES
        .iter()
        .find(|(r, _)| *r == route)
        .map_or("/", |(_, p)| p)
}

/// The route a path names, if any.
pub fn parse_route<A: ObjectApi>(path: &str) -> Option<A::Route> {
    A::ROUTES.iter().find(|(_, p)| *p == path).map(|(r, _)| *r)
}

/// A call to an object: POSTed as JSON to `ROUTE`'s path, answered with `Reply`.
pub trait ObjectCall: Serialize + DeserializeOwned {
    type Api: ObjectApi;
    const ROUTE: <Self::Api as ObjectApi>::Route;
    type Reply: Serialize + DeserializeOwned;
}

/// Sends `req` to the object named `instance` and reads its reply, one binding operation.
pub async fn call<C: ObjectCall>(
    bindings: &Bindings,
    instance: &str,
    req: &C,
) -> Result<C::Reply, ApiError> {
    let class = <C::Api as ObjectApi>::CLASS;
    let unreachable = |e: worker::Error| {
        <C::Api as ObjectApi>::unreachable(ApiError {
            colony_failure: Some(ColonyFailure::Unreachable),
            ..ApiError::unavailable(&format!("{class} Durable Object"), e)
        })
    };
    let json = serde_json::to_string(req)
        .map_err(|e| ApiError::unavailable(&format!("serialising a {class} request"), e))?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(json.into()));
    let url = format!("https://{class}{}", path::<C::Api>(C::ROUTE));
    let request = Request::new_with_init(&url, &init).map_err(unreachable)?;
    <C::Api as ObjectApi>::prepare(&request, instance).map_err(unreachable)?;
    let mut resp = bindings
        .do_fetch(<C::Api as ObjectApi>::BINDING, class, instance, request)
        .await
        .map_err(<C::Api as ObjectApi>::unreachable)?;
    let text = resp.text().await.map_err(unreachable)?;
    if resp.status_code() != 200 {
        return Err(<C::Api as ObjectApi>::failure(
            instance,
            resp.status_code(),
            &text,
        ));
    }
    <C::Api as ObjectApi>::read_reply(&text)
        .map_err(|e| ApiError::unavailable(&format!("{class} reply"), e))
}

/// A request as the object receives it: its route, parsed from the path, and its body.
pub struct Incoming<A: ObjectApi> {
    pub route: A::Route,
    body: String,
}

impl<A: ObjectApi> Incoming<A> {
    /// Reads the request; `Err` names a path that is none of the object's routes.
    pub async fn read(req: &mut Request) -> Result<Self, worker::Error> {
        let path = req.path();
        let Some(route) = parse_route::<A>(&path) else {
            return Err(worker::Error::RustError(format!(
                "unknown {} route {path}",
                A::CLASS
            )));
        };
        Ok(Self {
            route,
            body: req.text().await?,
        })
    }

    /// The body as the call `C`, which must be this route's (a router that reads another
    /// route's call is refused, so a test of that route fails rather than a body misread).
    pub fn call<C: ObjectCall<Api = A>>(&self) -> Result<C, String> {
        if C::ROUTE != self.route {
            return Err(format!(
                "{} route {:?} read as the call of {:?}",
                A::CLASS,
                self.route,
                C::ROUTE
            ));
        }
        serde_json::from_str(&self.body)
            .map_err(|e| format!("{} request {:?}: {e}", A::CLASS, self.route))
    }
}

/// The reply to the call `C`, as JSON.
pub fn reply<C: ObjectCall>(value: &C::Reply) -> serde_json::Result<String> {
    serde_json::to_string(value)
}

/// Declares an object's routes, each with its one path: `object_routes!(Route { Put => "/nodes",
/// … })` makes the enum and `Route::PATHS` (every variant, so none lacks a path).
macro_rules! object_routes {
    ($route:ident { $($variant:ident => $path:literal),+ $(,)? }) => {
        /// The object's routes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $route {
            $($variant),+
        }

        impl $route {
            pub const PATHS: &'static [($route, &'static str)] = &[$(($route::$variant, $path)),+];
        }
    };
}
pub(crate) use object_routes;

/// Declares an object's calls: `object_calls!(Api { Request => Route: Reply, … })`.
macro_rules! object_calls {
    ($api:ty { $($req:ty => $route:ident: $reply:ty),+ $(,)? }) => {
        $(
            impl $crate::object_call::ObjectCall for $req {
                type Api = $api;
                const ROUTE: <$api as $crate::object_call::ObjectApi>::Route = Route::$route;
                type Reply = $reply;
            }
        )+
    };
}
pub(crate) use object_calls;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every route of `A` has one path, and the paths are distinct and parse back.
    pub fn routes_round_trip<A: ObjectApi>() {
        for (route, p) in A::ROUTES {
            assert_eq!(path::<A>(*route), *p);
            assert_eq!(parse_route::<A>(p), Some(*route));
        }
        assert_eq!(parse_route::<A>("/nope"), None);
    }
}
