//! The store against an in-memory stand-in for the object's SQLite tables that counts rows as
//! workerd does (an upsert or insert into a rowid table is one row, each deleted row one).

use std::collections::BTreeMap;

use rand::{rngs::SmallRng, SeedableRng};

use super::schema::{SqlArg, Statement, LEDGER_SLOTS};
use super::*;
use crate::colony::{Outcome, OutcomeLabel};
use crate::config::Config;
use crate::demand::WorkloadClass;
use crate::heuristic::NodeFeatures;
use crate::names::NodeName;
use wire::PlacementsRequest;

#[derive(Default, Clone)]
struct Tables {
    ledger: BTreeMap<i64, (i64, String)>,
    snapshot: BTreeMap<i64, (i64, i64, String)>,
    segments: BTreeMap<i64, (i64, String)>,
    /// id → (newest_ms, keys, body)
    explained: BTreeMap<i64, (i64, String, String)>,
    rows_written: u64,
}

fn int(a: &SqlArg) -> i64 {
    match a {
        SqlArg::Int(i) => *i,
        SqlArg::Text(t) => panic!("int expected, got {t}"),
    }
}

fn text(a: &SqlArg) -> String {
    match a {
        SqlArg::Text(t) => t.clone(),
        SqlArg::Int(i) => panic!("text expected, got {i}"),
    }
}

impl Tables {
    fn run(&mut self, statements: &[Statement]) {
        for s in statements {
            let a = &s.args;
            if s.sql.starts_with("INSERT INTO ledger") {
                self.ledger.insert(int(&a[0]), (int(&a[1]), text(&a[2])));
                self.rows_written += 1;
            } else if s.sql.starts_with("INSERT INTO snapshot") {
                self.snapshot
                    .insert(int(&a[0]), (int(&a[1]), int(&a[2]), text(&a[3])));
                self.rows_written += 1;
            } else if s.sql.starts_with("DELETE FROM snapshot") {
                let before = self.snapshot.len();
                self.snapshot.retain(|p, _| *p < int(&a[0]));
                self.rows_written += (before - self.snapshot.len()) as u64;
            } else if s.sql.starts_with("INSERT OR REPLACE INTO segments") {
                self.segments.insert(int(&a[0]), (int(&a[1]), text(&a[2])));
                self.rows_written += 1;
            } else if s.sql.starts_with("DELETE FROM segments WHERE") {
                let before = self.segments.len();
                self.segments.retain(|_, (newest, _)| *newest >= int(&a[0]));
                self.rows_written += (before - self.segments.len()) as u64;
            } else if s.sql == "DELETE FROM ledger" {
                self.rows_written += self.ledger.len() as u64;
                self.ledger.clear();
            } else if s.sql == "DELETE FROM segments" {
                self.rows_written += self.segments.len() as u64;
                self.segments.clear();
            } else if s.sql.starts_with("INSERT OR REPLACE INTO explained") {
                self.explained
                    .insert(int(&a[0]), (int(&a[1]), text(&a[2]), text(&a[3])));
                self.rows_written += 1;
            } else if s.sql.starts_with("DELETE FROM explained WHERE id <=") {
                let before = self.explained.len();
                self.explained.retain(|id, _| *id > int(&a[0]));
                self.rows_written += (before - self.explained.len()) as u64;
            } else if s.sql == "DELETE FROM explained" {
                self.rows_written += self.explained.len() as u64;
                self.explained.clear();
            } else {
                panic!("unexpected statement {}", s.sql);
            }
        }
    }

    fn load(
        &self,
        incarnation: u64,
        now_ms: u64,
        config: &Config,
    ) -> Result<ColonyStore, CorruptState> {
        let snapshot: Vec<SnapshotRow> = self
            .snapshot
            .iter()
            .map(|(part, (seq, parts, body))| SnapshotRow {
                part: *part,
                seq: *seq,
                parts: *parts,
                body: body.clone(),
            })
            .collect();
        let after = ColonyStore::ledger_after(&snapshot);
        let mut ledger: Vec<LedgerRow> = self
            .ledger
            .values()
            .filter(|(seq, _)| *seq > after)
            .map(|(seq, body)| LedgerRow {
                seq: *seq,
                body: body.clone(),
            })
            .collect();
        ledger.sort_by_key(|r| r.seq);
        let segments = self
            .segments
            .iter()
            .map(|(id, (_, body))| SegmentRow {
                id: *id,
                body: body.clone(),
            })
            .collect();
        let explained = self
            .explained
            .iter()
            .map(|(id, (newest_ms, keys, _))| ExplainedRow {
                id: *id,
                newest_ms: *newest_ms,
                keys: keys.clone(),
            })
            .collect();
        ColonyStore::load(
            snapshot,
            segments,
            ledger,
            explained,
            incarnation,
            now_ms,
            &config.retention,
            &config.bounds,
        )
    }

    /// What a lookup of the Worker answers: the store's, with a row read if it says so.
    fn lookup(
        &self,
        store: &ColonyStore,
        key: &str,
        now_ms: u64,
        config: &Config,
    ) -> DecisionLookup {
        let mut out = store.lookup(key, now_ms, &config.retention);
        if out.explained.is_none() {
            if let Some(id) = store.explained_row(key, now_ms, &config.retention) {
                let body = &self.explained[&id].2;
                out.explained =
                    ColonyStore::explained_in_row(id, body, key, now_ms, &config.retention)
                        .unwrap();
            }
        }
        out
    }
}

/// The store's batch calls with the groups each reads taken from one `config`.
impl ColonyStore {
    fn record_with(
        &mut self,
        records: Vec<DecisionRecord>,
        from_copy: bool,
        now_ms: u64,
        config: &Config,
    ) -> BTreeMap<DropReason, u64> {
        let (retention, bounds, cost) = (&config.retention, &config.bounds, &config.cost);
        self.record_decisions(records, from_copy, now_ms, retention, bounds, cost)
    }

    fn placements_with(
        &mut self,
        items: &[PlacementItem],
        now_ms: u64,
        config: &Config,
    ) -> PlacementsReply {
        self.placements(items, now_ms, &config.retention, &config.cost)
    }
}

fn commit(store: &mut ColonyStore, db: &mut Tables, now_ms: u64, config: &Config) -> u64 {
    let before = db.rows_written;
    let c = store.plan_commit(now_ms, &config.retention).unwrap();
    db.run(&c.statements);
    store.committed(c, &config.retention);
    db.rows_written - before
}

fn node(name: &str, cost: f64) -> NodeFeatures<'static> {
    NodeFeatures {
        node: name.to_owned().into(),
        cost_per_hour: Some(cost),
        ..NodeFeatures::default()
    }
}

fn decision_for(key: &str, now_ms: u64, config: &Config) -> DecisionRecord {
    let mut rng = SmallRng::seed_from_u64(1);
    let p = TenantColony::default().score(
        &[node("a", 1.0), node("b", 2.0)],
        WorkloadClass::Batch,
        key,
        now_ms,
        config,
        &mut rng,
    );
    DecisionRecord {
        key: PodKey::parse(key).unwrap(),
        decision: p.decision,
        explored: false,
    }
}

fn place(key: &str, node: &str) -> PlacementItem {
    PlacementItem {
        key: PodKey::parse(key).unwrap(),
        node: NodeName::parse(node).unwrap(),
        outcome: None,
    }
}

fn place_ended(key: &str, node: &str, label: OutcomeLabel) -> PlacementItem {
    PlacementItem {
        outcome: Some(Outcome::Label(label)),
        ..place(key, node)
    }
}

/// A colony that scored pod p and learned its failure on node a (at 20 ms).
fn failed_once_on_a(config: &Config) -> ColonyStore {
    let mut store = ColonyStore::new(1);
    store.record_with(vec![decision_for("p", 10, config)], true, 10, config);
    store.placements_with(&[place_ended("p", "a", OutcomeLabel::Failed)], 20, config);
    store
}

#[test]
fn a_commit_is_one_row_and_a_reload_is_the_same_colony() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = ColonyStore::new(1);
    store.name_tenant("t", 0);
    // The first commit is a snapshot (there is always one to start from).
    assert!(commit(&mut store, &mut db, 0, &config) >= 1);
    let decisions: Vec<_> = (0..10)
        .map(|i| decision_for(&format!("p{i}"), 10, &config))
        .collect();
    store.record_with(decisions, true, 10, &config);
    assert_eq!(
        commit(&mut store, &mut db, 1_010, &config),
        1,
        "ten decisions, one row"
    );
    let items: Vec<_> = (0..6).map(|i| place(&format!("p{i}"), "a")).collect();
    let reply = store.placements_with(&items, 1_020, &config);
    assert_eq!(reply.deposited, 6);
    assert_eq!(
        commit(&mut store, &mut db, 1_020, &config),
        1,
        "six placements, one row"
    );

    let loaded = db.load(2, 1_030, &config).unwrap();
    assert_eq!(loaded.colony(), store.colony());
    assert_eq!(loaded.version(), store.version());
    assert_eq!(loaded.pending_decisions(), 4);
    assert_eq!(loaded.remembered_pods(), 6);
    assert_eq!(loaded.meta().tenant, "t");
    // After the reload: replays are duplicates, the remaining decisions still deposit.
    let mut loaded = loaded;
    let again = loaded.placements_with(&[place("p0", "a"), place("p7", "b")], 1_040, &config);
    assert_eq!((again.duplicates, again.deposited), (1, 1));
}

#[test]
fn a_decision_replayed_after_its_confirmation_changes_nothing_and_survives_snapshots() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = ColonyStore::new(1);
    let d = decision_for("p", 10, &config);
    store.record_with(vec![d.clone()], true, 10, &config);
    store.placements_with(&[place("p", "a")], 20, &config);
    commit(&mut store, &mut db, 20, &config);
    store.record_with(vec![d.clone()], true, 30, &config);
    assert!(!store.is_dirty(), "a replayed decision is not news");
    // Snapshots move the confirmation into a segment: it is still known after a reload.
    for t in [SNAPSHOT_EVERY_MS + 100, 2 * SNAPSHOT_EVERY_MS + 200] {
        store.name_tenant(&format!("t{t}"), t);
        commit(&mut store, &mut db, t, &config);
    }
    assert!(!db.segments.is_empty());
    let mut loaded = db.load(2, 2 * SNAPSHOT_EVERY_MS + 300, &config).unwrap();
    loaded.record_with(vec![d], true, 2 * SNAPSHOT_EVERY_MS + 300, &config);
    assert!(!loaded.is_dirty());
    let replay = loaded.placements_with(&[place("p", "a")], 2 * SNAPSHOT_EVERY_MS + 300, &config);
    assert_eq!((replay.deposited, replay.duplicates), (0, 1));
}

#[test]
fn a_decision_redelivered_after_its_eviction_is_not_counted_again() {
    let config = Config::default().with(|c| c.bounds.max_decisions_per_tenant = 2);
    let mut store = ColonyStore::new(1);
    let first: Vec<_> = (0..3)
        .map(|i| decision_for(&format!("p{i}"), 10 + i, &config))
        .collect();
    store.record_with(first.clone(), true, 20, &config);
    // The copy sends everything not yet durable again (a placement batch, a read).
    store.record_with(first, true, 30, &config);
    let counters = &store.colony().counters;
    assert_eq!((counters.decisions, counters.evicted_decisions), (3, 1));
    assert_eq!(store.pending_decisions(), 2);
}

#[test]
fn a_late_outcome_counts_once_across_a_reload() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = ColonyStore::new(1);
    store.record_with(vec![decision_for("p", 10, &config)], true, 10, &config);
    store.placements_with(&[place("p", "a")], 20, &config);
    commit(&mut store, &mut db, 20, &config);
    let failed = place_ended("p", "a", OutcomeLabel::Failed);
    assert_eq!(
        store
            .placements_with(std::slice::from_ref(&failed), 30, &config)
            .outcomes,
        1
    );
    commit(&mut store, &mut db, 1_030, &config);
    let mut loaded = db.load(2, 1_040, &config).unwrap();
    assert_eq!(loaded.colony(), store.colony());
    let again = loaded.placements_with(&[failed], 1_050, &config);
    assert_eq!((again.outcomes, again.duplicates), (0, 1));
    assert_eq!(loaded.colony().pheromones.trails["a"].failures, 1.0);
}

#[test]
fn an_invalid_item_is_dropped_and_counted_and_the_rest_of_the_batch_proceeds() {
    let config = Config::default();
    let mut store = ColonyStore::new(1);
    let mut huge = decision_for("big", 10, &config);
    huge.decision.etas[0].0 = "n".repeat(2_200_000);
    let mut bad_candidate = decision_for("k", 10, &config);
    bad_candidate.decision.etas[0].0 = "Not_A_Node".into();
    let dropped = store.record_with(
        vec![huge, decision_for("ok", 10, &config), bad_candidate],
        true,
        10,
        &config,
    );
    assert_eq!(dropped, BTreeMap::from([(DropReason::InvalidDecision, 2)]));
    assert_eq!(store.pending_decisions(), 1);
    let bad_outcome = PlacementItem {
        outcome: Some(Outcome::Quality(7.0)),
        ..place("ok", "a")
    };
    let negative = PlacementItem {
        outcome: Some(Outcome::Quality(-1.0)),
        ..place("x", "a")
    };
    let reply = store.placements_with(&[bad_outcome, negative, place("ok", "a")], 20, &config);
    assert_eq!(reply.deposited, 1);
    assert_eq!(reply.dropped[&DropReason::InvalidPlacement], 2);
    assert_eq!(store.meta().dropped[&DropReason::InvalidPlacement], 2);
    assert_eq!(store.meta().dropped[&DropReason::InvalidDecision], 2);
}

#[test]
fn a_body_naming_an_invalid_key_or_node_is_refused_as_it_is_read() {
    // Keys and nodes are typed: a colony never holds an invalid one to drop.
    let item = |key: &str, node: &str| serde_json::json!({"items": [{"key": key, "node": node, "outcome": null}], "nowMs": 1});
    let read = |v: serde_json::Value| serde_json::from_value::<PlacementsRequest>(v);
    assert!(read(item("p", "a")).is_ok());
    let e = read(item(&"u".repeat(MAX_POD_KEY_LEN + 1), "a")).unwrap_err();
    assert!(e.to_string().contains("is not a pod UID"), "{e}");
    let e = read(item("p", &"n".repeat(300))).unwrap_err();
    assert!(
        e.to_string().contains("is not a valid Kubernetes name"),
        "{e}"
    );
}

#[test]
fn what_was_not_committed_is_lost_by_a_reload_and_the_incarnation_says_so() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = ColonyStore::new(7);
    commit(&mut store, &mut db, 0, &config);
    store.record_with(vec![decision_for("p", 10, &config)], true, 10, &config);
    let d = store.durability();
    assert_eq!(
        (d.incarnation, d.accepted_seq, d.is_durable()),
        (7, 2, false)
    );
    assert!(
        !store.commit_due(500),
        "within the interval of the last commit"
    );
    assert_eq!(store.backstop_at(), Some(10 + COMMIT_BACKSTOP_MS));
    let reloaded = db.load(8, 600, &config).unwrap();
    assert_eq!(reloaded.pending_decisions(), 0);
    assert_eq!(reloaded.durability().incarnation, 8);
    assert!(store.commit_due(1_000));
    commit(&mut store, &mut db, 1_000, &config);
    assert!(store.durability().is_durable());
    assert_eq!(db.load(9, 1_100, &config).unwrap().pending_decisions(), 1);
}

#[test]
fn reset_forgets_everything_but_the_name_and_a_reload_agrees() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = ColonyStore::new(1);
    store.name_tenant("t", 0);
    store.record_with(vec![decision_for("p", 10, &config)], true, 10, &config);
    store.placements_with(&[place("p", "a")], 20, &config);
    commit(&mut store, &mut db, 20, &config);
    commit_with_snapshot(&mut store, &mut db, SNAPSHOT_EVERY_MS + 30, &config);
    assert_eq!(db.segments.len(), 1);
    let version = store.version();
    store.reset(SNAPSHOT_EVERY_MS + 40);
    commit(&mut store, &mut db, SNAPSHOT_EVERY_MS + 40, &config);
    assert!(db.segments.is_empty());
    let loaded = db.load(2, SNAPSHOT_EVERY_MS + 50, &config).unwrap();
    assert_eq!(loaded.colony(), &TenantColony::default());
    assert_eq!(
        (loaded.meta().tenant.as_str(), loaded.version()),
        ("t", version + 1)
    );
    assert_eq!(loaded.remembered_pods(), 0);
}

fn commit_with_snapshot(store: &mut ColonyStore, db: &mut Tables, now_ms: u64, config: &Config) {
    store.name_tenant(&format!("t-{now_ms}"), now_ms);
    let c = store.plan_commit(now_ms, &config.retention).unwrap();
    assert!(c.snapshot);
    db.run(&c.statements);
    store.committed(c, &config.retention);
    store.name_tenant("t", now_ms);
    commit(store, db, now_ms, config);
}

#[test]
fn stored_rows_that_do_not_parse_or_leave_a_gap_are_named() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = ColonyStore::new(1);
    commit(&mut store, &mut db, 0, &config);
    for t in [1_000, 2_000, 3_000] {
        store.name_tenant(&format!("t{t}"), t);
        commit(&mut store, &mut db, t, &config);
    }
    let mut bad = db.clone();
    bad.ledger.get_mut(&2).unwrap().1 = "not json".into();
    assert_eq!(bad.load(2, 4_000, &config).unwrap_err().what, "ledger[2]");
    let mut gap = db.clone();
    gap.ledger.remove(&3);
    let e = gap.load(2, 4_000, &config).unwrap_err();
    assert_eq!(e.what, "ledger[4]", "{e}");
    let mut torn = db.clone();
    torn.snapshot.get_mut(&0).unwrap().1 = 99;
    assert!(torn
        .load(2, 4_000, &config)
        .unwrap_err()
        .what
        .starts_with("snapshot"));
}

/// The aim's load, one tenant's share: 10 pods/s (100 pods/s over 10 tenants) for 10 minutes,
/// decisions sent by 4 isolates as they score, placements once a second, the object committing
/// by its rules (`commit_due`, every placement batch, the backstop alarm). Prints the figure.
#[test]
fn rows_per_pod_at_ten_pods_a_second_from_four_isolates() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = ColonyStore::new(1);
    let (seconds, per_second, isolates) = (600u64, 10u64, 4u64);
    let mut alarm_at: Option<u64> = None;
    let mut set_alarms = 0u64;
    let mut pod = 0u64;
    for s in 0..seconds {
        for k in 0..per_second {
            let now = s * 1_000 + k * 100;
            // Whichever of the isolates scored the pod sends its decision right after the
            // answer: the colony's rules, not the number of senders, decide the commits.
            store.record_with(
                vec![decision_for(&format!("p{pod}"), now, &config)],
                true,
                now,
                &config,
            );
            if store.commit_due(now) {
                commit(&mut store, &mut db, now, &config);
            } else if let Some(at) = store.backstop_at() {
                if alarm_at.is_none_or(|a| a > at) {
                    alarm_at = Some(at);
                    set_alarms += 1;
                }
            }
            if alarm_at.is_some_and(|a| a <= now) {
                alarm_at = None;
                if store.is_dirty() {
                    commit(&mut store, &mut db, now, &config);
                }
            }
            pod += 1;
        }
        // The reporter's batch for this second: the pods scored a second earlier.
        let now = s * 1_000 + 950;
        let items: Vec<_> = (pod.saturating_sub(2 * per_second)..pod.saturating_sub(per_second))
            .map(|p| place(&format!("p{p}"), "a"))
            .collect();
        store.placements_with(&items, now, &config);
        commit(&mut store, &mut db, now, &config);
    }
    let rows = db.rows_written + set_alarms;
    let per_pod = rows as f64 / pod as f64;
    eprintln!(
        "rows per pod at {per_second} pods/s, {isolates} isolates: {rows} rows ({set_alarms} setAlarm) for {pod} pods = {per_pod:.3}"
    );
    assert!(per_pod <= 0.25, "{per_pod}");
    assert!(db.ledger.len() as u64 <= LEDGER_SLOTS);
    let loaded = db.load(2, seconds * 1_000, &config).unwrap();
    assert_eq!(loaded.colony(), store.colony());
    assert_eq!(loaded.remembered_pods(), store.remembered_pods());
}

#[test]
fn a_placement_before_its_decision_is_held_and_applied_when_the_decision_comes() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = ColonyStore::new(1);
    commit(&mut store, &mut db, 0, &config);
    let failed = place_ended("p", "a", OutcomeLabel::Failed);
    let early = store.placements_with(&[place("p", "a")], 10, &config);
    assert_eq!((early.held, early.unknown_pod, early.deposited), (1, 0, 0));
    // The reporter's retry of the same report, and the pod's later outcome, before the decision.
    let retried = store.placements_with(&[place("p", "a"), failed.clone()], 20, &config);
    assert_eq!((retried.held, retried.duplicates), (1, 1));
    assert_eq!(store.colony().counters.duplicate_reports, 1);
    assert_eq!(store.report(&config.cost, 0).held_placements, 2);
    let version = store.version();

    store.record_with(vec![decision_for("p", 5, &config)], true, 30, &config);
    let counters = &store.colony().counters;
    assert_eq!(
        (
            counters.decisions,
            counters.deposits,
            counters.unknown_placements
        ),
        (1, 1, 0)
    );
    assert_eq!(store.pending_decisions(), 0, "confirmed at once");
    assert_eq!(store.report(&config.cost, 0).held_placements, 0);
    assert!(store.version() > version, "copies learn of the deposit");
    // The outcome was applied after the placement: a replay of either is a duplicate now.
    let replay = store.placements_with(&[place("p", "a"), failed], 40, &config);
    assert_eq!(
        (replay.duplicates, replay.held, replay.deposited),
        (2, 0, 0)
    );
    // Committed like any placement: a reload knows the pod.
    commit(&mut store, &mut db, 1_100, &config);
    let loaded = db.load(2, 1_200, &config).unwrap();
    assert_eq!(loaded.colony(), store.colony());
    assert_eq!(loaded.remembered_pods(), 1);
}

#[test]
fn a_held_placement_whose_decision_never_comes_counts_as_unknown_once() {
    let config = Config::default();
    let mut store = ColonyStore::new(1);
    let early = store.placements_with(&[place("never", "a"), place("late", "a")], 10, &config);
    assert_eq!(early.held, 2);
    assert_eq!(store.colony().counters.unknown_placements, 0);
    // Any request after the hold expires them.
    store.placements_with(&[], 10 + HOLD_MS + 1, &config);
    assert_eq!(store.colony().counters.unknown_placements, 2);
    assert!(store.is_dirty(), "the counter is committed");
    // A decision after that finds nothing held: no deposit until the placement comes again.
    store.record_with(
        vec![decision_for("late", 10 + HOLD_MS, &config)],
        true,
        10 + HOLD_MS + 2,
        &config,
    );
    assert_eq!(store.colony().counters.deposits, 0);
    assert_eq!(store.pending_decisions(), 1);
    store.placements_with(&[], 20 + 2 * HOLD_MS, &config);
    assert_eq!(
        store.colony().counters.unknown_placements,
        2,
        "counted once"
    );
}

#[test]
fn a_placement_whose_decision_is_known_gone_is_unknown_at_once() {
    let config = Config::default().with(|c| c.bounds.max_decisions_per_tenant = 1);
    let mut store = ColonyStore::new(1);
    store.record_with(
        vec![
            decision_for("old", 10, &config),
            decision_for("new", 11, &config),
        ],
        true,
        20,
        &config,
    );
    // "old" was evicted: its decision will not come again, so holding it would only delay.
    let r = store.placements_with(&[place("old", "a")], 30, &config);
    assert_eq!((r.unknown_pod, r.held), (1, 0));
    // A reset forgets what is held.
    store.placements_with(&[place("other", "a")], 40, &config);
    store.reset(50);
    assert_eq!(store.report(&config.cost, 0).held_placements, 0);
}

proptest::proptest! {
    /// Decisions and placements of a few pods in any order, each delivered any number of
    /// times, within the hold: every pod with both deposits exactly once, the others never.
    #[test]
    fn in_any_order_and_redelivered_every_placed_pod_deposits_exactly_once(
        events in proptest::collection::vec((0usize..4, proptest::bool::ANY, 0u64..200), 1..40)
    ) {
        let config = Config::default();
        let mut store = ColonyStore::new(1);
        let mut now = 1_000;
        let (mut decided, mut placed) = ([false; 4], [false; 4]);
        let mut replied_deposits = 0;
        for (pod, is_decision, step) in events {
            now += step;
            let key = format!("p{pod}");
            if is_decision {
                decided[pod] = true;
                store.record_with(vec![decision_for(&key, 500 + pod as u64, &config)], true, now, &config);
            } else {
                placed[pod] = true;
                let r = store.placements_with(&[place(&key, "a")], now, &config);
                proptest::prop_assert_eq!(r.unknown_pod + r.not_a_candidate, 0);
                replied_deposits += r.deposited;
            }
        }
        let both = (0..4).filter(|&p| decided[p] && placed[p]).count() as u64;
        let counters = &store.colony().counters;
        proptest::prop_assert_eq!(counters.deposits, both);
        proptest::prop_assert_eq!(counters.unknown_placements, 0);
        proptest::prop_assert!(replied_deposits <= both);
        let held_alone = (0..4).filter(|&p| placed[p] && !decided[p]).count();
        proptest::prop_assert_eq!(store.held_placements(), held_alone);
    }
}

#[test]
fn a_held_placement_is_confirmed_no_earlier_than_its_decision_so_a_redelivery_stays_old() {
    let config = Config::default();
    let mut store = ColonyStore::new(1);
    store.placements_with(&[place("p", "a")], 10, &config);
    // A placement batch whose clock was read before a decision it carries was made.
    let d = decision_for("p", 50, &config);
    store.record_with(vec![d.clone()], true, 20, &config);
    assert_eq!(store.colony().counters.deposits, 1);
    // The same decision again (the isolate's scheduled send): old news, not a second chance.
    store.record_with(vec![d], true, 60, &config);
    assert_eq!(store.pending_decisions(), 0);
    let outcome = place_ended("p", "a", OutcomeLabel::Succeeded);
    let r = store.placements_with(&[outcome, place("p", "a")], 70, &config);
    assert_eq!((r.deposited, r.outcomes, r.duplicates), (0, 1, 1));
    assert_eq!(store.colony().counters.deposits, 1);
}

#[test]
fn a_decision_whose_held_placement_deposits_is_committed_before_the_reply() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = ColonyStore::new(1);
    commit(&mut store, &mut db, 0, &config);
    // A decision alone, right after a commit, waits for the interval.
    store.record_with(vec![decision_for("q", 5, &config)], true, 10, &config);
    assert!(!store.commit_due(10));
    // One whose held placement deposits moves the version: due at once.
    store.placements_with(&[place("p", "a")], 10, &config);
    store.record_with(vec![decision_for("p", 5, &config)], true, 20, &config);
    assert!(store.commit_due(20));
    commit(&mut store, &mut db, 20, &config);
    store.record_with(vec![decision_for("r", 25, &config)], true, 30, &config);
    assert!(!store.commit_due(30), "only until that commit");
    assert_eq!(db.load(2, 40, &config).unwrap().version(), store.version());
}

#[test]
fn a_placement_carried_with_a_newer_decision_is_confirmed_no_earlier_than_it() {
    let config = Config::default();
    let mut store = ColonyStore::new(1);
    // One request (clock 20) carries the isolate's decision (made at 50) and the placement.
    let d = decision_for("p", 50, &config);
    store.record_with(vec![d.clone()], true, 20, &config);
    let r = store.placements_with(&[place("p", "a")], 20, &config);
    assert_eq!(r.deposited, 1);
    // The scheduled send delivers the decision again: old news.
    store.record_with(vec![d], true, 60, &config);
    assert_eq!(store.pending_decisions(), 0);
    let again = store.placements_with(&[place("p", "a")], 70, &config);
    assert_eq!((again.deposited, again.duplicates), (0, 1));
}

#[test]
fn a_decision_of_a_retry_cycle_that_arrives_after_the_confirmation_is_refused() {
    let config = Config::default();
    let mut store = ColonyStore::new(1);
    // Cycle 1 scored the pod; its binding failed; cycle 2 scored it again (decision at 30) and
    // bound it, and the placement reached the colony (at 20 by its clock) before cycle 2's
    // decision left its isolate's window.
    store.record_with(vec![decision_for("uid-p", 10, &config)], true, 15, &config);
    let r = store.placements_with(&[place("uid-p", "a")], 20, &config);
    assert_eq!(r.deposited, 1);
    store.record_with(vec![decision_for("uid-p", 30, &config)], true, 40, &config);
    assert_eq!(
        store.pending_decisions(),
        0,
        "a bound pod is not scored again"
    );
    let outcome = place_ended("uid-p", "a", OutcomeLabel::Succeeded);
    let again = store.placements_with(&[place("uid-p", "a"), outcome], 50, &config);
    assert_eq!(
        (again.deposited, again.duplicates, again.outcomes),
        (0, 1, 1)
    );
    assert_eq!(store.colony().counters.deposits, 1);
    // A namespace/name key may name a new pod of the same name: its newer decision counts.
    store.record_with(vec![decision_for("ns/p", 10, &config)], true, 15, &config);
    store.placements_with(&[place("ns/p", "a")], 20, &config);
    store.record_with(vec![decision_for("ns/p", 30, &config)], true, 40, &config);
    assert_eq!(store.pending_decisions(), 1);
}

/// A decision over 200 candidates with EKS-style names, as prioritize makes it: the best 64
/// kept, each with its cost terms, τ and score (what docs/explanations.md measures).
fn wide_decision_for(key: &str, now_ms: u64, config: &Config) -> DecisionRecord {
    let nodes: Vec<NodeFeatures> = (0..200)
        .map(|i| NodeFeatures {
            predicted_utilisation: Some((i % 17) as f64 / 20.0),
            committed_share: Some((i % 5) as f64 / 6.0),
            pod_share: Some(0.0625),
            ..node(
                &format!("ip-10-0-{}-{}.eu-west-1.compute.internal", i / 100, i % 100),
                0.4 + i as f64 * 0.037,
            )
        })
        .collect();
    let mut rng = SmallRng::seed_from_u64(now_ms);
    let p =
        TenantColony::default().score(&nodes, WorkloadClass::Batch, key, now_ms, config, &mut rng);
    DecisionRecord {
        key: PodKey::parse(key).unwrap(),
        decision: p.decision,
        explored: false,
    }
}

/// An hour of one pod every 5 s (decided, then placed 100 ms later on its second-best
/// candidate; the object commits every placement batch) after the pod `target` was confirmed at
/// `t0`, with a reload from the rows every 10 minutes. Returns the store, its rows and when the
/// hour ended.
fn an_hour_after_target(config: &Config) -> (ColonyStore, Tables, u64) {
    let mut db = Tables::default();
    let mut store = ColonyStore::new(1);
    store.name_tenant("t", 0);
    commit(&mut store, &mut db, 0, config);
    let mut now = 1_000;
    for (i, key) in std::iter::once("target".to_string())
        .chain((0..720).map(|i| format!("pod-{i}")))
        .enumerate()
    {
        let d = wide_decision_for(&key, now, config);
        let bound = d.decision.etas[1].0.clone();
        store.record_with(vec![d], true, now, config);
        let r = store.placements_with(&[place(&key, &bound)], now + 100, config);
        assert_eq!(r.deposited, 1);
        commit(&mut store, &mut db, now + 100, config);
        if i % 120 == 119 {
            store = db.load(i as u64, now + 200, config).unwrap();
        }
        now += 5_000;
    }
    (store, db, now)
}

/// The aim "an explanation asked an hour of trace time after the pod's confirmation names the
/// bound node", on the colony's own clock: the pod's decision is gone with its confirmation,
/// sixty snapshots and six reloads later its explanation is read from an `explained` row, with
/// every candidate, the node answered and the node bound. Prints what it cost in rows.
#[test]
fn a_confirmed_pods_explanation_is_answered_an_hour_later_naming_its_bound_node() {
    let config = Config::default();
    let (store, db, end) = an_hour_after_target(&config);
    assert!(end >= 3_600_000 + 1_000);
    let found = db.lookup(&store, "target", end, &config);
    assert!(
        found.decision.is_none(),
        "the decision went with the confirmation"
    );
    let explained = found.explained.expect("explained an hour later");
    assert!(
        store
            .explained_row("target", end, &config.retention)
            .is_some(),
        "read from a row, not memory"
    );
    let e = explained.explain("t");
    assert_eq!(e.candidates.len(), 64);
    assert!(e
        .candidates
        .iter()
        .all(|c| c.cost_per_hour.is_some() && c.score.is_some()));
    assert_eq!(e.bound_node.as_deref(), Some(e.candidates[1].node.as_str()));
    assert_eq!(
        e.answered_node.as_deref(),
        Some(e.candidates[0].node.as_str())
    );
    assert_eq!(e.confirmed_ms, found.confirmed.map(|c| c.confirmed_ms));
    assert!(
        e.notes.iter().any(|n| n.contains("overruled")),
        "{:?}",
        e.notes
    );
    // Past the window: no longer answered, and the next commit deletes every row.
    let later = 1_100 + config.retention.confirmed_explanations_ttl_ms + 1;
    assert!(db
        .lookup(&store, "target", later, &config)
        .explained
        .is_none());
    let (mut store, mut db) = (store, db);
    store.name_tenant("t-later", later + 3_600_000 * 25);
    commit(&mut store, &mut db, later + 3_600_000 * 25, &config);
    assert!(db.explained.is_empty(), "{} rows left", db.explained.len());

    // What keeping them cost: the same hour with none kept.
    let off = Config::default().with(|c| c.retention.confirmed_explanations_max = 0);
    let (_, db_off, _) = an_hour_after_target(&off);
    let (_, db_on, _) = an_hour_after_target(&config);
    let pods = 721.0;
    let bytes: usize = db_on
        .explained
        .values()
        .map(|(_, k, b)| k.len() + b.len())
        .sum();
    eprintln!(
        "an hour at one pod / 5 s, 64 candidates each: {} rows with explanations kept ({} explained rows, {bytes} bytes in them), {} without; {:.4} more rows per pod",
        db_on.rows_written,
        db_on.explained.len(),
        db_off.rows_written,
        (db_on.rows_written as f64 - db_off.rows_written as f64) / pods
    );
    assert!(db_on.rows_written - db_off.rows_written <= db_on.explained.len() as u64 + 2);
}

#[test]
fn an_import_replaces_the_colony_once_and_the_same_import_again_changes_nothing() {
    let config = Config::default();
    let mut db = Tables::default();
    let source = failed_once_on_a(&config);
    let state = source.export();
    assert!(!state.colony.pheromones.trails.is_empty());

    let mut target = ColonyStore::new(2);
    target.name_tenant("t", 0);
    target.record_with(vec![decision_for("q", 10, &config)], true, 10, &config);
    commit(&mut target, &mut db, 30, &config);
    let version = target.version();
    assert!(target.import(state.clone(), 40));
    assert!(target.version() > version, "copies drop what they hold");
    assert_eq!(
        target.pending_decisions(),
        0,
        "in-flight pods go, as with a reset"
    );
    let rows = commit(&mut target, &mut db, 40, &config);
    assert!(rows >= 1);
    assert_eq!(target.export(), state);
    // Once more: nothing to do, nothing written.
    assert!(!target.import(state.clone(), 50));
    assert!(!target.is_dirty());
    let loaded = db.load(3, 60, &config).unwrap();
    assert_eq!(loaded.export(), state);
    assert_eq!(loaded.meta().tenant, "t");
    assert_eq!(
        loaded.table(60, &config.cost).nodes.len(),
        state.colony.pheromones.trails.len()
    );
}

/// A colony stored when it kept a deposit table (`pheromones`: epochs and τ per node) beside its
/// outcome history, in the snapshot and in a ledger entry after it: it loads with the learned
/// counts (now the trail) and without the deposit table, writing nothing for it; the next
/// commit's patch removes the table from the stored state, in the ledger row it writes anyway.
#[test]
fn a_colony_stored_with_the_old_deposit_table_keeps_its_trail_and_drops_the_table() {
    let config = Config::default();
    let mut db = Tables::default();
    let mut store = failed_once_on_a(&config);
    commit(&mut store, &mut db, 20, &config);
    assert!(
        !db.snapshot.is_empty(),
        "the first commit writes a snapshot"
    );
    let old_table = r#""pheromones":{"epoch":4,"trails":{"a":{"tau":2.5,"epoch":3}}},"#;
    for (_, (_, _, body)) in db.snapshot.iter_mut() {
        assert!(body.contains(r#""colony":{"#), "{body}");
        *body = body.replacen(r#""colony":{"#, &format!(r#""colony":{{{old_table}"#), 1);
    }
    for (_, (_, body)) in db.ledger.iter_mut() {
        *body = body.replacen(r#""colony":{"#, &format!(r#""colony":{{{old_table}"#), 1);
    }
    let written = db.rows_written;
    let mut loaded = db.load(2, 30, &config).unwrap();
    assert_eq!(db.rows_written, written, "loading writes nothing");
    assert_eq!(loaded.colony(), store.colony());
    assert_eq!(loaded.colony().pheromones.trails["a"].failures, 1.0);
    // The next commit (a decision) writes its one ledger row; the state it leaves has no table.
    loaded.record_with(vec![decision_for("q", 40, &config)], true, 40, &config);
    let rows = commit(&mut loaded, &mut db, 40, &config);
    assert_eq!(rows, 1, "one ledger row, as any commit");
    let again = db.load(3, 50, &config).unwrap();
    assert_eq!(again.colony(), loaded.colony());
    assert!(
        loaded.committed_colony.get("pheromones").is_none()
            && again.committed_colony.get("pheromones").is_none(),
        "{}",
        again.committed_colony
    );
}
