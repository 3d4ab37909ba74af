//! Node facts, per cluster: written through the cluster's Facts Durable Object (`facts_do`, the
//! single writer, one request per `PUT /v1/nodes` whatever its size), read on the hot path from a
//! per-isolate copy of the cluster's snapshot.
//!
//! The copy is kept for `FACTS_CACHE_MS`. On a miss the isolate asks the object for the shards
//! rewritten since the version it holds (all of them the first time, or after the object
//! restarted) in ONE request, so a filter over 5,000 candidates costs at most one binding
//! operation. A shard is rewritten when one of its nodes changes materially (`facts_shards`), so
//! a reader sees a material change within `FACTS_CACHE_MS` of its report, and the small movements
//! (observation times, utilisation within the deadband) no later than the next material change
//! of the shard — at most `stamp_lag_ms` (60 s) behind in any observation time. A `PUT` marks this
//! isolate's copy stale, so that the isolate reads its own writes.
//!
//! Verbs read the copy in place: [`load`] hands out the current [`ClusterFacts`] (an `Rc`, no
//! record copied), and a refresh builds the next one beside it, sharing the shards it did not
//! rewrite, so a request that holds the old one keeps reading a consistent snapshot.
//!
//! Concurrent misses in one isolate each make their own request rather than awaiting a shared
//! one: a Rust waker fired by one request's fetch would poll the other request inside the first
//! one's I/O context, which workerd refuses or warns about ("a promise was resolved from a
//! different request context"). Such fetches are deltas from the same version, and a reply older
//! than the copy is not applied, so they cost one operation each and never go back in time.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use aco_core::api::nodes::NodesReply;
use aco_core::config::Config;
use aco_core::facts::{FactsLookup, KeptFacts, NodeFacts, ReadFacts};
use aco_core::facts_shards::{shard_of, SHARDS};
use aco_core::heuristic::spot_risk::SpotPools;
use aco_core::heuristic::ClusterOutlook;
use aco_core::node_labels::LabelReading;
use worker::{Method, Request, RequestInit};

use crate::bindings::Bindings;
use crate::facts::{self, SnapshotReply};
use crate::http::ApiError;

/// One cluster's node facts, as of one version of this isolate's copy: immutable once handed
/// out; the next version shares the shards it did not change. Each record's labels are read
/// when it arrives ([`ReadFacts`]), not by every verb over every candidate.
#[derive(Clone)]
pub struct ClusterFacts {
    shards: Vec<Rc<KeptFacts>>,
}

impl Default for ClusterFacts {
    fn default() -> Self {
        Self {
            shards: vec![Rc::default(); SHARDS],
        }
    }
}

impl ClusterFacts {
    fn nodes(&self) -> impl Iterator<Item = &NodeFacts> {
        self.shards
            .iter()
            .flat_map(|shard| shard.values().map(|r| &r.facts))
    }

    /// Every record's labels read again under `config`.
    fn read_again(&mut self, config: &Config) {
        for shard in &mut self.shards {
            for record in Rc::make_mut(shard).values_mut() {
                record.read_again(config);
            }
        }
    }
}

/// The readings are the isolate's config's ([`load`] reads every record again should a call
/// come with another).
impl FactsLookup for ClusterFacts {
    fn get(&self, name: &str) -> Option<&NodeFacts> {
        FactsLookup::get(&*self.shards[shard_of(name)], name)
    }

    fn get_read(&self, name: &str, config: &Config) -> Option<(&NodeFacts, Cow<'_, LabelReading>)> {
        FactsLookup::get_read(&*self.shards[shard_of(name)], name, config)
    }
}

/// One cluster's facts as this isolate last fetched them.
#[derive(Default)]
struct Snapshot {
    /// Instance and sequence number of the Facts object the copy is from.
    version: Option<(u64, u64)>,
    /// When the copy was last brought up to date (None: stale, fetch before reading).
    fetched_at_ms: Option<u64>,
    /// Bumped by a `PUT` through this isolate; a fetch that began before it does not make the
    /// copy fresh (it may predate the write).
    generation: u64,
    facts: Rc<ClusterFacts>,
    /// The config the records' labels were read under.
    read_with: Option<Rc<Config>>,
    /// Every spot pool's history, as of `version`.
    pools: SpotPools,
    /// What η reads of the whole cluster, computed from this copy once per version.
    outlook: Option<((u64, u64), Rc<ClusterOutlook>)>,
}

thread_local! {
    static SNAPSHOTS: RefCell<HashMap<String, Snapshot>> = RefCell::new(HashMap::new());
}

fn with_snapshot<T>(cluster: &str, f: impl FnOnce(&mut Snapshot) -> T) -> T {
    SNAPSHOTS.with(|s| f(s.borrow_mut().entry(cluster.to_string()).or_default()))
}

/// The facts of `cluster`'s nodes, refreshed first when the copy is older than `cache_ms`:
/// the isolate's snapshot itself, shared, for the verbs to read in place.
pub async fn load(
    bindings: &Bindings,
    cluster: &str,
    now_ms: u64,
    config: &Rc<Config>,
) -> Result<Rc<ClusterFacts>, ApiError> {
    let fresh = with_snapshot(cluster, |s| {
        s.fetched_at_ms
            .is_some_and(|at| now_ms.saturating_sub(at) <= config.facts_cache_ms)
    });
    if !fresh {
        refresh(bindings, cluster, now_ms, config).await?;
    }
    Ok(with_snapshot(cluster, |s| {
        read_under(s, config);
        s.facts.clone()
    }))
}

/// What the cluster's facts say as a whole (GPU scarcity, spot pools), from this isolate's copy
/// as the last [`load`] left it: computed once per version of the copy, so a verb pays for it
/// only after a refresh brought news (measurements' freshness is judged at that moment).
pub fn outlook(cluster: &str, now_ms: u64, config: &Config) -> Rc<ClusterOutlook> {
    with_snapshot(cluster, |s| {
        let version = s.version.unwrap_or((0, 0));
        match &s.outlook {
            Some((v, o)) if *v == version => o.clone(),
            _ => {
                let o = Rc::new(ClusterOutlook::from_facts(
                    s.facts.nodes(),
                    s.pools.pools.clone(),
                    now_ms,
                    config,
                ));
                s.outlook = Some((version, o.clone()));
                o
            }
        }
    })
}

/// Facts of every node of `cluster` (shadow mode scores a pod against the whole cluster, not a
/// candidate list): the same copy and the same single refresh request as [`load`].
pub async fn load_all(
    bindings: &Bindings,
    cluster: &str,
    now_ms: u64,
    config: &Rc<Config>,
) -> Result<HashMap<String, NodeFacts>, ApiError> {
    let fresh = with_snapshot(cluster, |s| {
        s.fetched_at_ms
            .is_some_and(|at| now_ms.saturating_sub(at) <= config.facts_cache_ms)
    });
    if !fresh {
        refresh(bindings, cluster, now_ms, config).await?;
    }
    Ok(with_snapshot(cluster, |s| {
        s.facts
            .nodes()
            .map(|f| (f.name.clone(), f.clone()))
            .collect()
    }))
}

/// Makes the copy's label readings `config`'s. The isolate's config never changes, so this
/// reads nothing again after its first call (on an empty copy).
fn read_under(s: &mut Snapshot, config: &Rc<Config>) {
    if !s.read_with.as_ref().is_some_and(|c| Rc::ptr_eq(c, config)) {
        Rc::make_mut(&mut s.facts).read_again(config);
        s.read_with = Some(config.clone());
    }
}

/// Brings this isolate's copy up to date with one request to the cluster's Facts object.
async fn refresh(
    bindings: &Bindings,
    cluster: &str,
    now_ms: u64,
    config: &Rc<Config>,
) -> Result<(), ApiError> {
    let (version, generation) = with_snapshot(cluster, |s| (s.version, s.generation));
    let path = match version {
        Some((instance, seq)) => format!("/snapshot?instance={instance}&seq={seq}"),
        None => "/snapshot".to_string(),
    };
    let (status, text) = call(bindings, cluster, Method::Get, &path, None).await?;
    if status != 200 {
        return Err(refused(status, &text));
    }
    let reply: SnapshotReply<NodeFacts> =
        serde_json::from_str(&text).map_err(|e| ApiError::unavailable("facts snapshot", e))?;
    with_snapshot(cluster, |s| {
        let newer = match s.version {
            Some((instance, seq)) => reply.instance != instance || reply.seq > seq,
            None => true,
        };
        // A reply older than the copy (a concurrent fetch finished first) is not applied.
        if newer {
            // A new version beside the one requests may still hold (copying 16 pointers).
            read_under(s, config);
            let facts = Rc::make_mut(&mut s.facts);
            if reply.full {
                *facts = ClusterFacts::default();
            }
            for shard in reply.shards {
                if let Some(slot) = facts.shards.get_mut(shard.id) {
                    *slot = Rc::new(
                        shard
                            .nodes
                            .into_iter()
                            .map(|f| (f.name.clone(), ReadFacts::read(f, config)))
                            .collect(),
                    );
                }
            }
            s.pools = reply.pools;
            s.version = Some((reply.instance, reply.seq));
        }
        if s.generation == generation {
            s.fetched_at_ms = Some(now_ms);
        }
    });
    Ok(())
}

/// Stores a `PUT /v1/nodes` batch (the body as received; the Facts object validates it whole
/// and answers 4xx naming the field) in one request, and marks this isolate's copy stale.
pub async fn put(
    bindings: &Bindings,
    cluster: &str,
    batch: String,
    now_ms: u64,
) -> Result<NodesReply, ApiError> {
    let (status, text) = call(
        bindings,
        cluster,
        Method::Put,
        &format!("/nodes?now={now_ms}"),
        Some(batch),
    )
    .await?;
    // Even a refused batch may have raced a write by another request: re-read either way.
    with_snapshot(cluster, |s| {
        s.fetched_at_ms = None;
        s.generation += 1;
    });
    if status != 200 {
        return Err(refused(status, &text));
    }
    serde_json::from_str(&text).map_err(|e| ApiError::unavailable("facts reply", e))
}

/// The authoritative record of one node (from the Facts object, not this isolate's copy).
pub async fn get(
    bindings: &Bindings,
    cluster: &str,
    name: &str,
) -> Result<Option<NodeFacts>, ApiError> {
    let (status, text) = call(
        bindings,
        cluster,
        Method::Get,
        &format!("/nodes/{name}"),
        None,
    )
    .await?;
    match status {
        200 => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| ApiError::unavailable("facts reply", e)),
        404 => Ok(None),
        _ => Err(refused(status, &text)),
    }
}

/// A non-200 reply: the object's 4xx (a bad batch) is the client's, anything else ours (503).
fn refused(status: u16, text: &str) -> ApiError {
    #[derive(serde::Deserialize)]
    struct Refusal {
        error: String,
        field: Option<String>,
    }
    match serde_json::from_str::<Refusal>(text) {
        Ok(r) if (400..500).contains(&status) => ApiError {
            field: r.field,
            ..ApiError::new(status, r.error)
        },
        _ => ApiError::new(
            503,
            format!("facts Durable Object answered {status}: {text}"),
        ),
    }
}

async fn call(
    bindings: &Bindings,
    cluster: &str,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<(u16, String), ApiError> {
    // `Bindings::do_fetch` labels failures as a colony's; facts are not a colony.
    let unavailable = |e: worker::Error| ApiError::unavailable("facts Durable Object", e);
    let mut init = RequestInit::new();
    init.with_method(method);
    if let Some(b) = body {
        init.with_body(Some(b.into()));
    }
    let req =
        Request::new_with_init(&format!("https://facts{path}"), &init).map_err(unavailable)?;
    let mut resp = bindings
        .do_fetch(facts::BINDING, facts::CLASS, cluster, req)
        .await
        .map_err(|e| ApiError {
            colony_failure: None,
            ..e
        })?;
    let text = resp.text().await.map_err(unavailable)?;
    Ok((resp.status_code(), text))
}
