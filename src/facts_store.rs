//! Node facts in KV (`node/<name>` → JSON `NodeFacts`), fronted by a per-isolate cache that
//! keeps each record (or its absence) for `FACTS_CACHE_MS`. KV is eventually consistent (~60 s
//! across locations) and allows about one write per second per key, which suits facts that a
//! reporter pushes every few seconds. A forgotten node (deleted from the cluster) is cached as
//! absent in the isolate that forgot it; other isolates see it gone after their cache entry
//! expires (`FACTS_CACHE_MS`) and KV has propagated the delete.

use std::cell::RefCell;
use std::collections::HashMap;

use aco_core::facts::NodeFacts;
use futures::future::join_all;

use crate::bindings::{Bindings, KV_BULK_LIMIT};
use crate::http::ApiError;

pub const BINDING: &str = "NODE_FACTS";

thread_local! {
    static CACHE: RefCell<HashMap<String, (u64, Option<NodeFacts>)>> = RefCell::new(HashMap::new());
}

fn key(node: &str) -> String {
    format!("node/{node}")
}

/// Facts for the given nodes (absent nodes are simply missing from the map).
pub async fn load<'a>(
    kv: &Bindings,
    names: impl Iterator<Item = &'a str>,
    now_ms: u64,
    cache_ms: u64,
) -> Result<HashMap<String, NodeFacts>, ApiError> {
    let mut found = HashMap::new();
    let mut missing = Vec::new();
    CACHE.with(|cache| {
        let cache = cache.borrow();
        for name in names {
            match cache.get(name) {
                Some((at, facts)) if now_ms.saturating_sub(*at) <= cache_ms => {
                    if let Some(f) = facts {
                        found.insert(name.to_string(), f.clone());
                    }
                }
                _ => missing.push(name.to_string()),
            }
        }
    });
    missing.sort();
    missing.dedup();
    let chunks = missing.chunks(KV_BULK_LIMIT).map(|chunk| async move {
        let keys: Vec<String> = chunk.iter().map(|n| key(n)).collect();
        kv.kv_get_bulk::<NodeFacts>(BINDING, &keys).await
    });
    let mut fetched: Vec<(String, Option<NodeFacts>)> = Vec::with_capacity(missing.len());
    for result in join_all(chunks).await {
        let map = result?;
        fetched.extend(map.into_iter().map(|(k, v)| (k.trim_start_matches("node/").to_string(), v)));
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        for name in &missing {
            cache.insert(name.clone(), (now_ms, None));
        }
        for (name, facts) in &fetched {
            cache.insert(name.clone(), (now_ms, facts.clone()));
        }
    });
    found.extend(fetched.into_iter().filter_map(|(n, f)| f.map(|f| (n, f))));
    Ok(found)
}

/// Stores the records and refreshes this isolate's cache with them.
pub async fn store(kv: &Bindings, records: &[NodeFacts], now_ms: u64) -> Result<(), ApiError> {
    let writes = records.iter().map(|f| async move {
        let body = serde_json::to_string(f).map_err(|e| ApiError::unavailable("serialising facts", e))?;
        kv.kv_put(BINDING, &key(&f.name), body, None).await
    });
    for result in join_all(writes).await {
        result?;
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        for f in records {
            cache.insert(f.name.clone(), (now_ms, Some(f.clone())));
        }
    });
    Ok(())
}

/// Deletes the records of nodes that left the cluster and caches their absence in this isolate.
pub async fn forget<'a>(kv: &Bindings, names: impl Iterator<Item = &'a str>, now_ms: u64) -> Result<(), ApiError> {
    let names: Vec<&str> = names.collect();
    let deletes = names.iter().map(|name| async move {
        kv.kv_delete(BINDING, &key(name)).await
    });
    for result in join_all(deletes).await {
        result?;
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        for name in names {
            cache.insert(name.to_string(), (now_ms, None));
        }
    });
    Ok(())
}
