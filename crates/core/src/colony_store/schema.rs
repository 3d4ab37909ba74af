//! The Colony object's SQLite schema and the statements a commit runs, as data: the Worker only
//! executes them. Every table has an INTEGER PRIMARY KEY and no other index, so a row written
//! is one row as workerd counts it (a TEXT key or a secondary index would add one per insert).
//!
//! - `ledger(slot, seq, body)`: one row per commit, a ring of [`LEDGER_SLOTS`] slots overwritten
//!   in place (`slot = seq mod LEDGER_SLOTS`; an upsert is one row, a delete would be another).
//!   Only entries newer than the snapshot are read back.
//! - `snapshot(part, seq, parts, body)`: the whole state (colony, counters, pending decisions)
//!   as of ledger entry `seq`, its JSON cut into parts below the 2 MB row limit.
//! - `segments(id, newest_ms, body)`: the confirmed-pod index, one immutable row per snapshot
//!   holding the index changes since the previous one; deleted once every pod in it expired.
//! - `explained(id, newest_ms, keys, body)`: confirmed pods' explanations (`explained.rs`), one
//!   immutable row per ~1 MB of them, the pods' key hashes beside them (read at load; the body
//!   only by a lookup); deleted whole, oldest first.

/// Ring size of the ledger. A snapshot is forced long before the ring wraps onto an entry newer
/// than the snapshot ([`super::SNAPSHOT_EVERY_COMMITS`] is half of it).
pub const LEDGER_SLOTS: u64 = 512;
/// Largest text written into one row: SQLite's limit is 2,000,000 bytes per row.
pub const MAX_PART_BYTES: usize = 1_900_000;

pub const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS ledger(slot INTEGER PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS snapshot(part INTEGER PRIMARY KEY, seq INTEGER NOT NULL, parts INTEGER NOT NULL, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS segments(id INTEGER PRIMARY KEY, newest_ms INTEGER NOT NULL, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS explained(id INTEGER PRIMARY KEY, newest_ms INTEGER NOT NULL, keys TEXT NOT NULL, body TEXT NOT NULL);
";

pub const SELECT_SNAPSHOT: &str = "SELECT part, seq, parts, body FROM snapshot ORDER BY part";
pub const SELECT_SEGMENTS: &str = "SELECT id, newest_ms, body FROM segments ORDER BY id";
/// Ledger entries newer than the snapshot (bind: the snapshot's seq), oldest first.
pub const SELECT_LEDGER: &str = "SELECT seq, body FROM ledger WHERE seq > ? ORDER BY seq";
/// Which pods each `explained` row explains (not the bodies), oldest first.
pub const SELECT_EXPLAINED_KEYS: &str = "SELECT id, newest_ms, keys FROM explained ORDER BY id";
/// One `explained` row's explanations (bind: its id).
pub const SELECT_EXPLAINED_BODY: &str = "SELECT body FROM explained WHERE id = ?";

const UPSERT_LEDGER: &str = "INSERT INTO ledger(slot, seq, body) VALUES(?, ?, ?) ON CONFLICT(slot) DO UPDATE SET seq = excluded.seq, body = excluded.body";
const UPSERT_SNAPSHOT: &str = "INSERT INTO snapshot(part, seq, parts, body) VALUES(?, ?, ?, ?) ON CONFLICT(part) DO UPDATE SET seq = excluded.seq, parts = excluded.parts, body = excluded.body";
const DELETE_SNAPSHOT_BEYOND: &str = "DELETE FROM snapshot WHERE part >= ?";
const INSERT_SEGMENT: &str = "INSERT OR REPLACE INTO segments(id, newest_ms, body) VALUES(?, ?, ?)";
const DELETE_SEGMENTS_BEFORE: &str = "DELETE FROM segments WHERE newest_ms < ?";
const DELETE_ALL_SEGMENTS: &str = "DELETE FROM segments";
const DELETE_LEDGER: &str = "DELETE FROM ledger";
const INSERT_EXPLAINED: &str =
    "INSERT OR REPLACE INTO explained(id, newest_ms, keys, body) VALUES(?, ?, ?, ?)";
const DELETE_EXPLAINED_THROUGH: &str = "DELETE FROM explained WHERE id <= ?";
const DELETE_ALL_EXPLAINED: &str = "DELETE FROM explained";

/// One value bound to a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlArg {
    Int(i64),
    Text(String),
}

/// One statement of a commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub sql: &'static str,
    pub args: Vec<SqlArg>,
}

fn int(v: u64) -> SqlArg {
    SqlArg::Int(v.min(i64::MAX as u64) as i64)
}

impl Statement {
    pub fn ledger(seq: u64, body: String) -> Self {
        Self {
            sql: UPSERT_LEDGER,
            args: vec![int(seq % LEDGER_SLOTS), int(seq), SqlArg::Text(body)],
        }
    }

    /// The snapshot's parts, and the removal of parts an older, longer snapshot left.
    pub fn snapshot(seq: u64, body: &str) -> Vec<Self> {
        let parts = split(body, MAX_PART_BYTES);
        let n = parts.len() as u64;
        let mut out: Vec<Self> = parts
            .into_iter()
            .enumerate()
            .map(|(i, text)| Self {
                sql: UPSERT_SNAPSHOT,
                args: vec![
                    int(i as u64),
                    int(seq),
                    int(n),
                    SqlArg::Text(text.to_string()),
                ],
            })
            .collect();
        out.push(Self {
            sql: DELETE_SNAPSHOT_BEYOND,
            args: vec![int(n)],
        });
        out
    }

    pub fn segment(id: u64, newest_ms: u64, body: String) -> Self {
        Self {
            sql: INSERT_SEGMENT,
            args: vec![int(id), int(newest_ms), SqlArg::Text(body)],
        }
    }

    pub fn expire_segments(before_ms: u64) -> Self {
        Self {
            sql: DELETE_SEGMENTS_BEFORE,
            args: vec![int(before_ms)],
        }
    }

    pub fn delete_ledger() -> Self {
        Self {
            sql: DELETE_LEDGER,
            args: vec![],
        }
    }

    pub fn delete_all_segments() -> Self {
        Self {
            sql: DELETE_ALL_SEGMENTS,
            args: vec![],
        }
    }

    pub fn explained(id: i64, newest_ms: u64, keys: String, body: String) -> Self {
        Self {
            sql: INSERT_EXPLAINED,
            args: vec![
                SqlArg::Int(id),
                int(newest_ms),
                SqlArg::Text(keys),
                SqlArg::Text(body),
            ],
        }
    }

    /// The `explained` rows up to `id` (they are made in id order, oldest first).
    pub fn delete_explained_through(id: i64) -> Self {
        Self {
            sql: DELETE_EXPLAINED_THROUGH,
            args: vec![SqlArg::Int(id)],
        }
    }

    pub fn delete_all_explained() -> Self {
        Self {
            sql: DELETE_ALL_EXPLAINED,
            args: vec![],
        }
    }
}

/// `text` cut into pieces of at most `max` bytes, at character boundaries.
pub fn split(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

/// A `snapshot` row as read back.
#[derive(Debug, Clone)]
pub struct SnapshotRow {
    pub part: i64,
    pub seq: i64,
    pub parts: i64,
    pub body: String,
}

/// A `segments` row as read back.
#[derive(Debug, Clone)]
pub struct SegmentRow {
    pub id: i64,
    pub body: String,
}

/// A `ledger` row as read back.
#[derive(Debug, Clone)]
pub struct LedgerRow {
    pub seq: i64,
    pub body: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_snapshot_is_cut_into_parts_below_the_row_limit_and_rejoins() {
        let text = "é".repeat(MAX_PART_BYTES); // 2 bytes each: 2 full parts
        let statements = Statement::snapshot(7, &text);
        assert_eq!(statements.len(), 3, "two parts and the cleanup");
        let mut joined = String::new();
        for s in &statements[..2] {
            let SqlArg::Text(body) = &s.args[3] else {
                panic!()
            };
            assert!(body.len() <= MAX_PART_BYTES);
            joined.push_str(body);
            assert_eq!(s.args[2], SqlArg::Int(2));
        }
        assert_eq!(joined, text);
        assert_eq!(statements[2].args, vec![SqlArg::Int(2)]);
    }

    #[test]
    fn the_ledger_is_a_ring_of_slots() {
        let s = Statement::ledger(LEDGER_SLOTS + 3, "{}".into());
        assert_eq!(s.args[0], SqlArg::Int(3));
        assert_eq!(s.args[1], SqlArg::Int(LEDGER_SLOTS as i64 + 3));
    }
}
