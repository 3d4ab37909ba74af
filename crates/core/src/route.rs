//! The Worker's routes as data: a request path parsed once into its cluster, its token and a
//! [`Route`], and each route's verb label, methods and who may call it. Pure, so the routing is
//! unit-tested and fuzzed natively (`fuzz/fuzz_targets/worker_request.rs`) exactly as the Worker
//! runs it; every match on a route is exhaustive, so a new route cannot be added without its
//! verb label, its methods and its caller.

use crate::access::split_token;
use crate::cluster::{split_cluster, ClusterId};

/// The HTTP methods the routes accept (anything else is `Other`, answered 405).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Put,
    Post,
    Delete,
    Other,
}

impl Method {
    pub fn parse(text: &str) -> Self {
        match text {
            "GET" => Method::Get,
            "PUT" => Method::Put,
            "POST" => Method::Post,
            "DELETE" => Method::Delete,
            _ => Method::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Other => "OTHER",
        }
    }
}

/// Health probes, answered before the config is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Livez,
    Readyz,
    Version,
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Health probes: anyone (they say nothing about tenants or nodes).
    Open,
    /// kube-scheduler: `EXTENDER_AUTH` (`aco_core::access::ExtenderAuth`).
    ExtenderVerb,
    /// The reporter and operators: `Authorization: Bearer <ADMIN_TOKEN>`.
    Admin,
    /// Prometheus: `Authorization: Bearer <METRICS_TOKEN>` — a scrape reads every tenant's
    /// series and node names, and may not write anything.
    Scrape,
}

/// Every endpoint of the Worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    Probe(Probe),
    Metrics,
    Filter,
    Prioritize,
    Bind,
    Placements,
    Nodes,
    Node(&'a str),
    Echo,
    Pheromones(&'a str),
    // Shadow mode (routes/shadow.rs).
    Shadow,
    ShadowSummary(&'a str),
    /// (tenant, pod key): a UID, or `namespace/name` as two segments.
    Decision(&'a str, &'a str, Option<&'a str>),
    // The operator's (acoctl; routes/names.rs, routes/transfer.rs).
    /// The named clusters (the Registry's).
    Clusters,
    /// The tenants with a colony in the path's cluster.
    Tenants,
    /// A colony's learned state as a file, and that file put back.
    Export(&'a str),
    Import(&'a str),
    /// The vars the reporter must read as the Worker does (`api::reporter_view`).
    ReporterView,
}

impl<'a> Route<'a> {
    /// The route for a path's segments (`/v1/nodes/n1` → `["v1", "nodes", "n1"]`).
    pub fn parse(segments: &[&'a str]) -> Option<Self> {
        Some(match segments {
            ["livez"] => Route::Probe(Probe::Livez),
            ["readyz"] => Route::Probe(Probe::Readyz),
            ["version"] => Route::Probe(Probe::Version),
            ["metrics"] => Route::Metrics,
            ["v1", "filter"] => Route::Filter,
            ["v1", "prioritize"] => Route::Prioritize,
            ["v1", "bind"] => Route::Bind,
            ["v1", "placements"] => Route::Placements,
            ["v1", "nodes"] => Route::Nodes,
            ["v1", "nodes", name] => Route::Node(name),
            ["v1", "echo"] => Route::Echo,
            ["v1", "tenants", tenant, "pheromones"] => Route::Pheromones(tenant),
            ["v1", "shadow"] => Route::Shadow,
            ["v1", "tenants", tenant, "shadow"] => Route::ShadowSummary(tenant),
            ["v1", "tenants", tenant, "decisions", uid] => Route::Decision(tenant, uid, None),
            ["v1", "tenants", tenant, "decisions", namespace, name] => {
                Route::Decision(tenant, namespace, Some(name))
            }
            ["v1", "clusters"] => Route::Clusters,
            ["v1", "tenants"] => Route::Tenants,
            ["v1", "tenants", tenant, "export"] => Route::Export(tenant),
            ["v1", "tenants", tenant, "import"] => Route::Import(tenant),
            ["v1", "config", "reporter"] => Route::ReporterView,
            _ => return None,
        })
    }

    /// The `verb` label of the request metrics; `None` for health probes, which would otherwise
    /// dominate the counters.
    pub fn verb(self) -> Option<&'static str> {
        Some(match self {
            Route::Probe(_) => return None,
            Route::Metrics => "metrics",
            Route::Filter => "filter",
            Route::Prioritize => "prioritize",
            Route::Bind => "bind",
            Route::Placements => "placements",
            Route::Nodes => "nodes",
            Route::Node(_) => "node",
            Route::Echo => "echo",
            Route::Pheromones(_) => "pheromones",
            Route::Shadow => "shadow",
            Route::ShadowSummary(_) => "shadow_summary",
            Route::Decision(..) => "decision",
            Route::Clusters => "clusters",
            Route::Tenants => "tenants",
            Route::Export(_) => "export",
            Route::Import(_) => "import",
            Route::ReporterView => "reporter_view",
        })
    }

    /// The tenant the path names, if it names one (the request log's `tenant`).
    pub fn tenant(self) -> Option<&'a str> {
        match self {
            Route::Pheromones(t)
            | Route::ShadowSummary(t)
            | Route::Decision(t, ..)
            | Route::Export(t)
            | Route::Import(t) => Some(t),
            Route::Probe(_)
            | Route::Metrics
            | Route::Filter
            | Route::Prioritize
            | Route::Bind
            | Route::Placements
            | Route::Nodes
            | Route::Node(_)
            | Route::Echo
            | Route::Shadow
            | Route::Clusters
            | Route::Tenants
            | Route::ReporterView => None,
        }
    }

    /// Whether serving the route makes its path's cluster exist (the Registry admits it first,
    /// `MAX_CLUSTERS`): every route that may touch a cluster's objects, but not the listings,
    /// which only read what exists.
    pub fn admits_cluster(self) -> bool {
        !matches!(self, Route::Clusters | Route::Tenants | Route::ReporterView)
    }

    /// Who may call the route: checked before anything else is done for the request.
    pub fn guard(self) -> Guard {
        match self {
            Route::Probe(_) => Guard::Open,
            Route::Metrics => Guard::Scrape,
            // `echo` answers what a verb would read, so it is served to the same callers only.
            Route::Filter | Route::Prioritize | Route::Bind | Route::Echo => Guard::ExtenderVerb,
            Route::Placements
            | Route::Nodes
            | Route::Node(_)
            | Route::Pheromones(_)
            | Route::Shadow
            | Route::ShadowSummary(_)
            | Route::Decision(..)
            | Route::Clusters
            | Route::Tenants
            | Route::Export(_)
            | Route::Import(_)
            | Route::ReporterView => Guard::Admin,
        }
    }

    /// The verbs kube-scheduler calls, guarded by `EXTENDER_AUTH`.
    pub fn is_extender_verb(self) -> bool {
        self.guard() == Guard::ExtenderVerb
    }

    /// The routes behind `ADMIN_TOKEN`.
    pub fn needs_admin(self) -> bool {
        self.guard() == Guard::Admin
    }

    pub fn methods(self) -> &'static [Method] {
        match self {
            Route::Probe(_)
            | Route::Metrics
            | Route::Node(_)
            | Route::ShadowSummary(_)
            | Route::Decision(..)
            | Route::Clusters
            | Route::Tenants
            | Route::Export(_)
            | Route::ReporterView => &[Method::Get],
            Route::Nodes | Route::Import(_) => &[Method::Put],
            Route::Pheromones(_) => &[Method::Get, Method::Delete],
            Route::Filter
            | Route::Prioritize
            | Route::Bind
            | Route::Placements
            | Route::Echo
            | Route::Shadow => &[Method::Post],
        }
    }
}

/// What a request path names: its cluster (`/c/<cluster>`, else the default), the extender
/// token of `/t/<token>` (path-token auth) and the route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target<'a> {
    pub cluster: ClusterId,
    pub token: Option<&'a str>,
    pub route: Route<'a>,
}

/// Why a path names no route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    /// `/c/<cluster>` with an invalid id (400 naming `cluster`).
    Cluster(String),
    /// Nothing is served there (404); a token prefix only leads to the extender verbs.
    NoRoute,
}

/// Parses a request path (`/c/prod/t/abc/v1/filter`).
pub fn parse_path(path: &str) -> Result<Target<'_>, PathError> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (cluster, rest) = split_cluster(&segments).map_err(PathError::Cluster)?;
    let (token, rest) = split_token(rest);
    let route = Route::parse(rest)
        .filter(|r| token.is_none() || r.is_extender_verb())
        .ok_or(PathError::NoRoute)?;
    Ok(Target {
        cluster,
        token,
        route,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_cluster_token_and_route() {
        for (path, expected) in [
            ("/v1/filter", Ok(("default", None, Route::Filter))),
            (
                "/c/prod/v1/prioritize",
                Ok(("prod", None, Route::Prioritize)),
            ),
            (
                "/c/prod/t/abc/v1/bind",
                Ok(("prod", Some("abc"), Route::Bind)),
            ),
            ("/t/abc/v1/echo", Ok(("default", Some("abc"), Route::Echo))),
            ("/v1/nodes/n1", Ok(("default", None, Route::Node("n1")))),
            (
                "/v1/tenants/ml/decisions/ns/pod",
                Ok(("default", None, Route::Decision("ml", "ns", Some("pod")))),
            ),
            ("/metrics", Ok(("default", None, Route::Metrics))),
            ("/v1/clusters", Ok(("default", None, Route::Clusters))),
            ("/c/eu/v1/tenants", Ok(("eu", None, Route::Tenants))),
            (
                "/c/eu/v1/tenants/ml/export",
                Ok(("eu", None, Route::Export("ml"))),
            ),
            (
                "/v1/tenants/ml/import",
                Ok(("default", None, Route::Import("ml"))),
            ),
            (
                "/v1/config/reporter",
                Ok(("default", None, Route::ReporterView)),
            ),
            ("/t/abc/v1/tenants", Err(PathError::NoRoute)),
            ("/t/abc/v1/nodes", Err(PathError::NoRoute)),
            ("/t/abc/metrics", Err(PathError::NoRoute)),
            ("/v1/unknown", Err(PathError::NoRoute)),
            ("", Err(PathError::NoRoute)),
        ] {
            let got = parse_path(path).map(|t| (t.cluster.to_string(), t.token, t.route));
            let expected = expected.map(|(c, t, r)| (c.to_string(), t, r));
            assert_eq!(got, expected, "{path}");
        }
        assert!(matches!(
            parse_path("/c/Bad_Id/v1/filter"),
            Err(PathError::Cluster(_))
        ));
    }

    #[test]
    fn every_route_has_methods_and_only_probes_are_open() {
        let routes = [
            Route::Probe(Probe::Livez),
            Route::Metrics,
            Route::Filter,
            Route::Prioritize,
            Route::Bind,
            Route::Placements,
            Route::Nodes,
            Route::Node("n"),
            Route::Echo,
            Route::Pheromones("t"),
            Route::Shadow,
            Route::ShadowSummary("t"),
            Route::Decision("t", "u", None),
            Route::Clusters,
            Route::Tenants,
            Route::Export("t"),
            Route::Import("t"),
            Route::ReporterView,
        ];
        for r in routes {
            assert!(!r.methods().is_empty(), "{r:?}");
            assert_eq!(
                r.guard() == Guard::Open,
                matches!(r, Route::Probe(_)),
                "{r:?}"
            );
        }
        assert_eq!(Route::Metrics.guard(), Guard::Scrape);
    }
}
