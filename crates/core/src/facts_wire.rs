//! Every body between the Worker and a cluster's Facts object (its internal API; the Worker's
//! `facts/api.rs` pairs each request with its route and reply). Shapes only: what a batch means
//! is `facts_shards`'.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::heuristic::spot_risk::SpotPools;

/// `/nodes`: a `PUT /v1/nodes` batch as the reporter sent it, stored at `now_ms`. The batch
/// travels as received: the object parses and validates it whole (`api::nodes::NodesBatch`),
/// once, so its refusals name the field exactly as the reporter wrote it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PutNodes {
    pub now_ms: u64,
    pub batch: Box<RawValue>,
}

/// `/node`: the stored record of one node (`null` when none is stored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRequest {
    pub name: String,
}

/// `/snapshot`: the shards changed since the reader's version (`instance`, `seq`), or all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRequest {
    pub since: Option<FactsVersion>,
}

/// A version of a Facts object's table: the instance (a restarted object is another) and its
/// sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactsVersion {
    pub instance: u64,
    pub seq: u64,
}

/// One shard as served to readers.
#[derive(Debug, Serialize, Deserialize)]
pub struct ShardView<F> {
    pub id: usize,
    pub nodes: Vec<F>,
}

/// Reply to `/snapshot`. `full`: every shard is listed (the reader drops what it had).
/// `pools`: every spot pool's exposure and reclamations, always whole (a few hundred bytes).
#[derive(Debug, Serialize, Deserialize)]
pub struct SnapshotReply<F> {
    pub instance: u64,
    pub seq: u64,
    pub full: bool,
    #[serde(default)]
    pub pools: SpotPools,
    pub shards: Vec<ShardView<F>>,
}

/// A [`SnapshotReply`]'s JSON from shards already encoded (each shard's node array kept as
/// text per change, so a reply copies bytes rather than serialising every node again).
pub fn write_snapshot<'a>(
    version: FactsVersion,
    full: bool,
    pools: &SpotPools,
    shards: impl IntoIterator<Item = (usize, &'a str)>,
) -> String {
    let pools = serde_json::to_string(pools).unwrap_or_else(|_| "{}".into());
    let mut body = format!(
        r#"{{"instance":{},"seq":{},"full":{full},"pools":{pools},"shards":["#,
        version.instance, version.seq
    );
    for (i, (id, nodes)) in shards.into_iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&format!(r#"{{"id":{id},"nodes":"#));
        body.push_str(nodes);
        body.push('}');
    }
    body.push_str("]}");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_snapshot_reads_as_the_reply() {
        let version = FactsVersion {
            instance: 7,
            seq: 42,
        };
        let text = write_snapshot(
            version,
            true,
            &SpotPools::default(),
            [(3, r#"[{"n":1}]"#), (9, "[]")],
        );
        let reply: SnapshotReply<serde_json::Value> = serde_json::from_str(&text).unwrap();
        assert_eq!((reply.instance, reply.seq, reply.full), (7, 42, true));
        let shards: Vec<_> = reply.shards.iter().map(|s| (s.id, s.nodes.len())).collect();
        assert_eq!(shards, [(3, 1), (9, 0)]);
        let empty = write_snapshot(version, false, &SpotPools::default(), []);
        let reply: SnapshotReply<serde_json::Value> = serde_json::from_str(&empty).unwrap();
        assert!(!reply.full && reply.shards.is_empty());
    }

    #[test]
    fn a_batch_travels_as_its_own_bytes() {
        let batch = r#"{"nodes":[{"name":"n1"}],  "deleted":[]}"#;
        let put = PutNodes {
            now_ms: 5,
            batch: RawValue::from_string(batch.to_string()).unwrap(),
        };
        let text = serde_json::to_string(&put).unwrap();
        let back: PutNodes = serde_json::from_str(&text).unwrap();
        assert_eq!((back.now_ms, back.batch.get()), (5, batch));
        let asked: SnapshotRequest = serde_json::from_str(r#"{"since":null}"#).unwrap();
        assert_eq!(asked, SnapshotRequest::default());
    }
}
