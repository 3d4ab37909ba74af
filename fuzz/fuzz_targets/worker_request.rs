//! The Worker's request handling as far as it is pure: a structured request (method, `/c/` and
//! `/t/` prefixes, a route with its parameters, stray segments, a body taken from the committed
//! seeds and mutated, or raw bytes) is routed by `aco_core::route::parse_path` — the function
//! the Worker routes with — and its body parsed and validated by the core function the route's
//! handler calls (ExtenderArgs for filter/prioritize, then the filter itself; the `PUT
//! /v1/nodes` batch, validated and planned against a table; placement outcomes; binding args).
//! Invariants: no panic; a routed path round-trips (the route rebuilt from its parts routes to
//! the same target); a token only ever leads to an extender verb; a named cluster is a valid
//! id; every route a path names accepts at least one method; admin and extender guards never
//! overlap.
#![no_main]
use aco_core::api::nodes::NodesBatch;
use aco_core::cluster::{ClusterId, DEFAULT_CLUSTER};
use aco_core::config::Config;
use aco_core::extender::{filter, parse_args};
use aco_core::facts_shards::FactsTable;
use aco_core::route::{parse_path, Method, Probe, Route};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

/// Bodies the committed seeds hold (fuzz/seeds/<target>/), so mutations start from real shapes.
const SEED_BODIES: [&str; 6] = [
    include_str!("../seeds/extender_args/full-nodes"),
    include_str!("../seeds/extender_args/names-lowercase"),
    include_str!("../seeds/node_report/full"),
    include_str!("../seeds/node_report/minimal"),
    r#"{"placements":[{"podUid":"u1","namespace":"ns","node":"n1","outcome":"succeeded"},{"namespace":"ns","name":"p","node":"n2","outcome":{"quality":0.5,"costPerHour":1.2}}]}"#,
    r#"{"PodName":"p","PodNamespace":"ns","PodUID":"u1","Node":"n1"}"#,
];

/// Segments the routes know, and some they must refuse.
const WORDS: [&str; 16] = [
    "v1",
    "c",
    "t",
    "prod",
    "default",
    "filter",
    "prioritize",
    "nodes",
    "tenants",
    "decisions",
    "pheromones",
    "shadow",
    "metrics",
    "..",
    "%2F",
    "",
];

#[derive(Arbitrary, Debug)]
enum Segment {
    Word(u8),
    Raw(String),
}

impl Segment {
    fn text(&self) -> String {
        match self {
            Segment::Word(i) => WORDS[*i as usize % WORDS.len()].to_string(),
            Segment::Raw(s) => s.chars().filter(|c| *c != '/').take(300).collect(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum RouteChoice {
    Filter,
    Prioritize,
    Bind,
    Placements,
    Nodes,
    Node(Segment),
    Echo,
    Metrics,
    Probe(u8),
    Pheromones(Segment),
    Shadow,
    ShadowSummary(Segment),
    Decision(Segment, Segment, Option<Segment>),
    ReporterView,
    Segments(Vec<Segment>),
}

impl RouteChoice {
    fn path(&self) -> String {
        match self {
            RouteChoice::Filter => "v1/filter".into(),
            RouteChoice::Prioritize => "v1/prioritize".into(),
            RouteChoice::Bind => "v1/bind".into(),
            RouteChoice::Placements => "v1/placements".into(),
            RouteChoice::Nodes => "v1/nodes".into(),
            RouteChoice::Node(n) => format!("v1/nodes/{}", n.text()),
            RouteChoice::Echo => "v1/echo".into(),
            RouteChoice::Metrics => "metrics".into(),
            RouteChoice::Probe(i) => ["livez", "readyz", "version"][*i as usize % 3].into(),
            RouteChoice::Pheromones(t) => format!("v1/tenants/{}/pheromones", t.text()),
            RouteChoice::Shadow => "v1/shadow".into(),
            RouteChoice::ShadowSummary(t) => format!("v1/tenants/{}/shadow", t.text()),
            RouteChoice::Decision(t, a, b) => match b {
                Some(b) => format!(
                    "v1/tenants/{}/decisions/{}/{}",
                    t.text(),
                    a.text(),
                    b.text()
                ),
                None => format!("v1/tenants/{}/decisions/{}", t.text(), a.text()),
            },
            RouteChoice::ReporterView => "v1/config/reporter".into(),
            RouteChoice::Segments(s) => s
                .iter()
                .take(12)
                .map(Segment::text)
                .collect::<Vec<_>>()
                .join("/"),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Body {
    /// A seed body with bytes replaced at (position, byte) pairs and cut at `cut`.
    Seed {
        index: u8,
        edits: Vec<(u16, u8)>,
        cut: Option<u16>,
    },
    Raw(Vec<u8>),
}

impl Body {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Body::Seed { index, edits, cut } => {
                let mut b = SEED_BODIES[*index as usize % SEED_BODIES.len()]
                    .as_bytes()
                    .to_vec();
                for (at, byte) in edits.iter().take(16) {
                    if !b.is_empty() {
                        let i = *at as usize % b.len();
                        b[i] = *byte;
                    }
                }
                if let Some(cut) = cut {
                    b.truncate(*cut as usize);
                }
                b
            }
            Body::Raw(b) => b.clone(),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Request {
    method: u8,
    cluster: Option<Segment>,
    token: Option<Segment>,
    route: RouteChoice,
    leading_slashes: u8,
    trailing_slash: bool,
    body: Body,
}

const METHODS: [&str; 6] = ["GET", "PUT", "POST", "DELETE", "PATCH", "get"];

/// The path of a target's parts, as a client would write it.
fn rebuild(cluster: &str, token: Option<&str>, rest: &str) -> String {
    let mut p = String::new();
    if cluster != DEFAULT_CLUSTER {
        p.push_str(&format!("/c/{cluster}"));
    }
    if let Some(t) = token {
        p.push_str(&format!("/t/{t}"));
    }
    p.push('/');
    p.push_str(rest);
    p
}

fn route_path(route: &Route) -> String {
    match route {
        Route::Probe(Probe::Livez) => "livez".into(),
        Route::Probe(Probe::Readyz) => "readyz".into(),
        Route::Probe(Probe::Version) => "version".into(),
        Route::Metrics => "metrics".into(),
        Route::Filter => "v1/filter".into(),
        Route::Prioritize => "v1/prioritize".into(),
        Route::Bind => "v1/bind".into(),
        Route::Placements => "v1/placements".into(),
        Route::Nodes => "v1/nodes".into(),
        Route::Node(n) => format!("v1/nodes/{n}"),
        Route::Echo => "v1/echo".into(),
        Route::Pheromones(t) => format!("v1/tenants/{t}/pheromones"),
        Route::Shadow => "v1/shadow".into(),
        Route::ShadowSummary(t) => format!("v1/tenants/{t}/shadow"),
        Route::Decision(t, a, None) => format!("v1/tenants/{t}/decisions/{a}"),
        Route::Decision(t, a, Some(b)) => format!("v1/tenants/{t}/decisions/{a}/{b}"),
        Route::Clusters => "v1/clusters".into(),
        Route::Tenants => "v1/tenants".into(),
        Route::Export(t) => format!("v1/tenants/{t}/export"),
        Route::Import(t) => format!("v1/tenants/{t}/import"),
        Route::ReporterView => "v1/config/reporter".into(),
    }
}

fn handle_body(route: &Route, body: &[u8], config: &Config) {
    let Ok(text) = std::str::from_utf8(body) else {
        return; // the Worker answers 400: the body is not UTF-8
    };
    match route {
        Route::Filter | Route::Prioritize => {
            if let Ok(args) = parse_args(text, &config.pod_keys, &config.node_keys) {
                let facts = std::collections::HashMap::<String, aco_core::facts::NodeFacts>::new();
                let _ = filter(&args, &facts, 1_700_000_000_000, config);
            }
        }
        Route::Nodes => {
            if let Ok(batch) = serde_json::from_str::<NodesBatch>(text) {
                let now = 1_700_000_000_000;
                if batch.validate(now).is_ok() {
                    let table = FactsTable::new(aco_core::facts_shards::stamp_lag_ms(
                        config.facts.facts_ttl_ms,
                    ));
                    let plan = table.plan(&batch, now, config);
                    let _ = table.rows(&plan);
                }
            }
        }
        Route::Placements => {
            // As the route reads it: the node and podUid typed (validated) by serde, the key
            // made from namespace and name checked as it is made.
            let batch = aco_core::k8s::parse_json_at::<aco_core::api::placements::PlacementsBatch>;
            if let Ok(batch) = batch(text) {
                for p in &batch.placements {
                    if let Some(o) = p.outcome {
                        let _ = o.quality();
                    }
                    let _ = p.pod_key();
                }
            }
        }
        Route::Bind => {
            let _ = serde_json::from_str::<aco_core::wire::ExtenderBindingArgs>(text);
        }
        Route::Import(t) => {
            let _ =
                aco_core::api::colony_export::ColonyExport::read(text, DEFAULT_CLUSTER, t, false);
        }
        _ => {}
    }
}

fuzz_target!(|req: Request| {
    let config = Config::default();
    let mut path = "/".repeat(req.leading_slashes as usize % 3);
    if let Some(c) = &req.cluster {
        path.push_str(&format!("c/{}/", c.text()));
    }
    if let Some(t) = &req.token {
        path.push_str(&format!("t/{}/", t.text()));
    }
    path.push_str(&req.route.path());
    if req.trailing_slash {
        path.push('/');
    }
    let method = Method::parse(METHODS[req.method as usize % METHODS.len()]);
    let Ok(target) = parse_path(&path) else {
        return;
    };
    let route = target.route;
    // A cluster that would not be valid cannot be made (`ClusterId`): it reads back as itself.
    assert_eq!(
        ClusterId::parse(target.cluster.as_str()).as_ref(),
        Ok(&target.cluster),
        "{path}"
    );
    assert!(
        target.token.is_none() || route.is_extender_verb(),
        "{path}: a token led to {route:?}"
    );
    assert!(!route.methods().is_empty());
    assert!(!(route.is_extender_verb() && route.needs_admin()));
    let again = rebuild(target.cluster.as_str(), target.token, &route_path(&route));
    let back = parse_path(&again).unwrap_or_else(|e| panic!("{path} → {again}: {e:?}"));
    assert_eq!(back, target, "{path} → {again}");
    if route.methods().contains(&method) {
        handle_body(&route, &req.body.bytes(), &config);
    }
});
