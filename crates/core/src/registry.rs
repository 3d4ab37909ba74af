//! Which named clusters and which colonies (cluster × tenant) exist: the one place their number
//! is bounded. An allowlist (`CLUSTERS`/`CLUSTER_PATTERN`, `TENANTS`/`TENANT_PATTERN`) says which
//! names *may* exist; it does not say how many, and without one any valid name may. So a name is
//! admitted here, by the Registry Durable Object (one global instance, its single writer), before
//! the Worker creates anything for it — a Facts object, a Colony object, a telemetry series —
//! and refused once `MAX_CLUSTERS` / `MAX_COLONIES` are taken. It also lists them, a page at a
//! time (`/names`).
//!
//! Pure: the object loads the rows, asks [`Registry::admit`] what to write, writes it and calls
//! [`Registry::commit`]. Tested natively.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use std::ops::Bound;

use crate::cluster::{
    colony_name, split_colony_name, validate_cluster, validate_tenant, DEFAULT_CLUSTER,
};

/// The table the object keeps (one row per admitted name; `WITHOUT ROWID`, so an insert is one
/// row written, not a table row plus an index entry).
pub const CREATE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS names(kind TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY(kind, name)) WITHOUT ROWID";
pub const SELECT_ALL: &str = "SELECT kind, name FROM names";
pub const INSERT: &str = "INSERT OR IGNORE INTO names(kind, name) VALUES(?, ?)";

/// Names a page of `GET /names` holds at most: a reply stays far below any body limit (a
/// colony name is ≤ 63 + 1 + 253 bytes) and `/metrics` reads 1,000 colonies in a few requests.
pub const PAGE_LIMIT: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NameKind {
    /// A named cluster (`/c/<cluster>/…`); the default cluster always exists and is not counted.
    Cluster,
    /// A colony, by its object name (`aco_core::cluster::colony_name`).
    Colony,
}

impl NameKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NameKind::Cluster => "cluster",
            NameKind::Colony => "colony",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "cluster" => Some(NameKind::Cluster),
            "colony" => Some(NameKind::Colony),
            _ => None,
        }
    }
}

/// How many names of each kind may exist (`MAX_CLUSTERS`, `MAX_COLONIES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_clusters: usize,
    pub max_colonies: usize,
}

impl Limits {
    fn of(self, kind: NameKind) -> usize {
        match kind {
            NameKind::Cluster => self.max_clusters,
            NameKind::Colony => self.max_colonies,
        }
    }
}

/// The request `/admit`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmitRequest {
    pub kind: NameKind,
    pub name: String,
}

/// What `admit` decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Admitted before: nothing to write.
    Known,
    /// Admitted now: the row to write.
    Admitted,
    /// Every place is taken; the name stays out.
    Full,
}

/// Reply to `/admit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmitReply {
    pub verdict: Verdict,
    /// Names of this kind admitted, after this request.
    pub count: usize,
    pub limit: usize,
}

impl AdmitReply {
    pub fn admitted(&self) -> bool {
        self.verdict != Verdict::Full
    }
}

/// How long a caller takes "full" for an answer before asking again (a place may have been
/// made by raising the limit).
pub const FULL_RECHECK_MS: u64 = 60_000;

/// What a caller of the registry remembers of its answers: an admitted name stays admitted (kept
/// for good), and "full" per kind for [`FULL_RECHECK_MS`], so that a caller inventing names costs
/// no registry request per name once the registry is full. Bounded by the registry's own limits
/// (`MAX_CLUSTERS` + `MAX_COLONIES` names of ≤ 253 bytes: ≤ 2.8 MB at the largest).
#[derive(Debug, Default)]
pub struct AdmittedNames {
    admitted: HashSet<(NameKind, String)>,
    full_until_ms: BTreeMap<NameKind, u64>,
}

impl AdmittedNames {
    /// The answer already known: `Some(true)` admitted before, `Some(false)` the registry said
    /// full less than [`FULL_RECHECK_MS`] ago, `None` ask it.
    pub fn known(&self, kind: NameKind, name: &str, now_ms: u64) -> Option<bool> {
        if self.admitted.contains(&(kind, name.to_string())) {
            Some(true)
        } else if self
            .full_until_ms
            .get(&kind)
            .is_some_and(|until| now_ms < *until)
        {
            Some(false)
        } else {
            None
        }
    }

    /// The registry's answer for `name`, kept.
    pub fn answered(&mut self, kind: NameKind, name: &str, reply: &AdmitReply, now_ms: u64) {
        if reply.admitted() {
            self.admitted.insert((kind, name.to_string()));
            self.full_until_ms.remove(&kind);
        } else {
            self.full_until_ms.insert(kind, now_ms + FULL_RECHECK_MS);
        }
    }
}

/// The request `/names`: a page of names of `kind` in order after `after`, or (`cluster` given,
/// `kind` colony) that cluster's tenants after the tenant `after`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRequest {
    pub kind: NameKind,
    pub cluster: Option<String>,
    pub after: Option<String>,
    pub limit: usize,
}

/// Reply to `/names`: names in order, `next` the `after` of the next page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    pub names: Vec<String>,
    pub next: Option<String>,
}

/// A name that is not one the Worker could have made: refused before it is counted.
pub fn validate(kind: NameKind, name: &str) -> Result<(), String> {
    match kind {
        NameKind::Cluster if name == DEFAULT_CLUSTER => {
            Err("the default cluster is not registered".into())
        }
        NameKind::Cluster => validate_cluster(name),
        NameKind::Colony => {
            let (cluster, tenant) = split_colony_name(name);
            if name.contains('/') {
                validate_cluster(cluster)?;
            }
            validate_tenant(tenant)
        }
    }
}

/// Every admitted name, in memory (a few hundred KB at the default limits).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    clusters: BTreeSet<String>,
    colonies: BTreeSet<String>,
}

impl Registry {
    /// From the stored rows; a row of an unknown kind (a later version's) is skipped.
    pub fn from_rows<'a>(rows: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut r = Registry::default();
        for (kind, name) in rows {
            if let Some(kind) = NameKind::parse(kind) {
                r.set_mut(kind).insert(name.to_string());
            }
        }
        r
    }

    fn set(&self, kind: NameKind) -> &BTreeSet<String> {
        match kind {
            NameKind::Cluster => &self.clusters,
            NameKind::Colony => &self.colonies,
        }
    }

    fn set_mut(&mut self, kind: NameKind) -> &mut BTreeSet<String> {
        match kind {
            NameKind::Cluster => &mut self.clusters,
            NameKind::Colony => &mut self.colonies,
        }
    }

    pub fn count(&self, kind: NameKind) -> usize {
        self.set(kind).len()
    }

    /// What admitting `name` would do. A name already admitted stays admitted when the limit
    /// is lowered later (nothing is forgotten; only new names are refused).
    pub fn admit(&self, kind: NameKind, name: &str, limits: Limits) -> Verdict {
        let set = self.set(kind);
        if set.contains(name) {
            Verdict::Known
        } else if set.len() >= limits.of(kind) {
            Verdict::Full
        } else {
            Verdict::Admitted
        }
    }

    /// After the row of an `Admitted` verdict is written.
    pub fn commit(&mut self, kind: NameKind, name: &str) {
        self.set_mut(kind).insert(name.to_string());
    }

    pub fn reply(&self, kind: NameKind, verdict: Verdict, limits: Limits) -> AdmitReply {
        AdmitReply {
            verdict,
            count: self.count(kind),
            limit: limits.of(kind),
        }
    }

    /// The page a [`PageRequest`] asks for.
    pub fn answer(&self, request: &PageRequest) -> Page {
        let after = request.after.as_deref();
        match (request.kind, &request.cluster) {
            (NameKind::Colony, Some(cluster)) => self.tenants(cluster, after, request.limit),
            (kind, _) => self.page(kind, after, request.limit),
        }
    }

    /// Names of `kind` after `after` (exclusive; `None`: from the first), at most `limit`
    /// (capped at [`PAGE_LIMIT`]).
    pub fn page(&self, kind: NameKind, after: Option<&str>, limit: usize) -> Page {
        let lower = match after {
            Some(a) => Bound::Excluded(a.to_string()),
            None => Bound::Unbounded,
        };
        paged(
            self.set(kind)
                .range::<String, _>((lower, Bound::Unbounded))
                .cloned(),
            limit,
        )
    }

    /// The tenants with a colony in `cluster`, in order, after the tenant `after`.
    pub fn tenants(&self, cluster: &str, after: Option<&str>, limit: usize) -> Page {
        let default = cluster == DEFAULT_CLUSTER;
        let lower = match after {
            Some(t) => Bound::Excluded(colony_name(cluster, t)),
            None if default => Bound::Unbounded,
            None => Bound::Included(format!("{cluster}/")),
        };
        let names = self
            .colonies
            .range::<String, _>((lower, Bound::Unbounded))
            .map(|n| split_colony_name(n))
            // A named cluster's colonies are contiguous (`cluster/…`); the default cluster's
            // bare names lie between the others.
            .take_while(|(c, _)| default || *c == cluster)
            .filter(|(c, _)| *c == cluster)
            .map(|(_, t)| t.to_string());
        paged(names, limit)
    }
}

/// At most `limit` (1..=[`PAGE_LIMIT`]) names of `names`, and whether more follow.
fn paged(mut names: impl Iterator<Item = String>, limit: usize) -> Page {
    let limit = limit.clamp(1, PAGE_LIMIT);
    let page: Vec<String> = names.by_ref().take(limit).collect();
    let next = match names.next() {
        Some(_) => page.last().cloned(),
        None => None,
    };
    Page { names: page, next }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_clusters: 2,
        max_colonies: 3,
    };

    #[test]
    fn a_caller_keeps_admitted_names_for_good_and_full_for_a_while() {
        let reply = |verdict| AdmitReply {
            verdict,
            count: 1,
            limit: 1,
        };
        let mut names = AdmittedNames::default();
        assert_eq!(names.known(NameKind::Cluster, "a", 0), None);
        names.answered(NameKind::Cluster, "a", &reply(Verdict::Admitted), 0);
        names.answered(NameKind::Cluster, "b", &reply(Verdict::Full), 0);
        assert_eq!(names.known(NameKind::Cluster, "a", u64::MAX), Some(true));
        assert_eq!(names.known(NameKind::Cluster, "c", 1), Some(false));
        assert_eq!(names.known(NameKind::Colony, "c", 1), None, "per kind");
        assert_eq!(names.known(NameKind::Cluster, "c", FULL_RECHECK_MS), None);
        names.answered(NameKind::Cluster, "b", &reply(Verdict::Known), 2);
        assert_eq!(
            names.known(NameKind::Cluster, "c", 3),
            None,
            "a place was made"
        );
    }

    fn admit(r: &mut Registry, kind: NameKind, name: &str) -> Verdict {
        let v = r.admit(kind, name, LIMITS);
        if v == Verdict::Admitted {
            r.commit(kind, name);
        }
        v
    }

    #[test]
    fn names_are_admitted_until_the_limit_then_refused_and_known_ones_stay() {
        let mut r = Registry::default();
        assert_eq!(admit(&mut r, NameKind::Cluster, "a"), Verdict::Admitted);
        assert_eq!(admit(&mut r, NameKind::Cluster, "a"), Verdict::Known);
        assert_eq!(admit(&mut r, NameKind::Cluster, "b"), Verdict::Admitted);
        assert_eq!(admit(&mut r, NameKind::Cluster, "c"), Verdict::Full);
        assert_eq!(r.count(NameKind::Cluster), 2);
        // Kinds have their own limits.
        for t in ["ml", "a/ml", "b/web"] {
            assert_eq!(admit(&mut r, NameKind::Colony, t), Verdict::Admitted);
        }
        assert_eq!(admit(&mut r, NameKind::Colony, "web"), Verdict::Full);
        assert_eq!(admit(&mut r, NameKind::Colony, "ml"), Verdict::Known);
        // A lower limit later refuses new names only.
        let lower = Limits {
            max_clusters: 1,
            max_colonies: 1,
        };
        assert_eq!(r.admit(NameKind::Cluster, "b", lower), Verdict::Known);
        assert_eq!(r.admit(NameKind::Cluster, "z", lower), Verdict::Full);
    }

    #[test]
    fn rows_round_trip_and_unknown_kinds_are_skipped() {
        let r = Registry::from_rows([("cluster", "a"), ("colony", "a/ml"), ("later", "x")]);
        assert_eq!(r.count(NameKind::Cluster), 1);
        assert_eq!(r.count(NameKind::Colony), 1);
        assert_eq!(r.admit(NameKind::Colony, "a/ml", LIMITS), Verdict::Known);
    }

    #[test]
    fn pages_cover_every_name_once_in_order() {
        let names: Vec<String> = (0..1234).map(|i| format!("t{i:05}")).collect();
        let r = Registry::from_rows(names.iter().map(|n| ("colony", n.as_str())));
        let mut seen = Vec::new();
        let mut after: Option<String> = None;
        let mut pages = 0;
        loop {
            let p = r.page(NameKind::Colony, after.as_deref(), 10_000);
            assert!(p.names.len() <= PAGE_LIMIT);
            seen.extend(p.names);
            pages += 1;
            match p.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, names);
        assert_eq!(pages, 3);
        let empty = Registry::default().page(NameKind::Cluster, None, 10);
        assert_eq!((empty.names.len(), empty.next), (0, None));
    }

    #[test]
    fn a_clusters_tenants_are_paged_apart_from_the_others() {
        let r = Registry::from_rows(
            [
                "ml", "eu-1/ml", "eu/a", "eu/b", "eu/c", "eu0/z", "web", "eu-1/web",
            ]
            .iter()
            .map(|n| ("colony", *n)),
        );
        let all = |cluster: &str| {
            let (mut seen, mut after) = (Vec::new(), None::<String>);
            loop {
                let p = r.tenants(cluster, after.as_deref(), 2);
                seen.extend(p.names);
                match p.next {
                    Some(n) => after = Some(n),
                    None => return seen,
                }
            }
        };
        assert_eq!(all("eu"), ["a", "b", "c"]);
        assert_eq!(all("eu-1"), ["ml", "web"]);
        assert_eq!(all(DEFAULT_CLUSTER), ["ml", "web"]);
        assert!(all("nowhere").is_empty());
    }

    #[test]
    fn only_names_the_worker_could_make_are_valid() {
        for (kind, name, ok) in [
            (NameKind::Cluster, "eu-1", true),
            (NameKind::Cluster, "default", false),
            (NameKind::Cluster, "Bad_Id", false),
            (NameKind::Colony, "ml", true),
            (NameKind::Colony, "eu-1/ml", true),
            (NameKind::Colony, "EU/ml", false),
            (NameKind::Colony, "eu-1/", false),
            (NameKind::Colony, "", false),
        ] {
            assert_eq!(validate(kind, name).is_ok(), ok, "{kind:?} {name:?}");
        }
    }
}
