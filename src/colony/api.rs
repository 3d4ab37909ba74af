//! The Colony object's internal API: every call is a request type that names its route and its
//! reply type ([`ColonyCall`]), so the object's router (`object.rs`) and its client
//! (`client.rs`) cannot disagree on a path or a body. Bodies are the core's
//! (`aco_core::colony_store::wire`); the tenant travels once, as the [`ColonyName`] in a header.

use aco_core::api::colony_export::{ExportedState, ImportReply};
use aco_core::api::pheromones::{PheromoneTableReply, ResetReply};
use aco_core::cluster::colony_name;
use aco_core::colony_store::wire::{
    ColonySnapshot, CopyRequest, DecisionBatch, DecisionLookup, DecisionsReply, LookupRequest,
    PlacementsReply, PlacementsRequest, ShadowReply, ShadowRequest,
};
use aco_core::shadow::ShadowSummary;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub const BINDING: &str = "COLONY";
/// Class label of the binding counters (`aco_do_rows_written_total{class}`).
pub const CLASS: &str = "Colony";
/// Header carrying the colony's name (cluster and tenant) on every call.
pub const NAME_HEADER: &str = "x-aco-colony";

/// A tenant's colony in a cluster: names its Durable Object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ColonyName {
    pub cluster: String,
    pub tenant: String,
}

impl ColonyName {
    pub fn new(cluster: &str, tenant: &str) -> Self {
        Self {
            cluster: cluster.to_string(),
            tenant: tenant.to_string(),
        }
    }

    /// The Durable Object's name (the default cluster's are the bare tenant names).
    pub fn object_name(&self) -> String {
        colony_name(&self.cluster, &self.tenant)
    }
}

/// The object's routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Copy,
    Decisions,
    Placements,
    Shadow,
    ShadowSummary,
    Table,
    Reset,
    Lookup,
    Export,
    Import,
}

const ROUTES: [(Route, &str); 10] = [
    (Route::Copy, "/copy"),
    (Route::Decisions, "/decisions"),
    (Route::Placements, "/placements"),
    (Route::Shadow, "/shadow"),
    (Route::ShadowSummary, "/shadow-summary"),
    (Route::Table, "/table"),
    (Route::Reset, "/reset"),
    (Route::Lookup, "/lookup"),
    (Route::Export, "/export"),
    (Route::Import, "/import"),
];

impl Route {
    pub fn path(self) -> &'static str {
        ROUTES
            .iter()
            .find(|(r, _)| *r == self)
            .map_or("/", |(_, p)| p)
    }

    pub fn parse(path: &str) -> Option<Self> {
        ROUTES.iter().find(|(_, p)| *p == path).map(|(r, _)| *r)
    }
}

/// A call to the object: POSTed as JSON to `ROUTE`, answered with `Reply` in an [`Envelope`].
pub trait ColonyCall: Serialize + DeserializeOwned {
    const ROUTE: Route;
    type Reply: Serialize + DeserializeOwned;
}

/// Every reply of the object: the route's own, and the colony's report for the Telemetry
/// object when it changed since the last one (`aco_core::telemetry`).
#[derive(Debug, Clone, Deserialize)]
pub struct Envelope<R> {
    pub reply: R,
    pub report: Option<aco_core::telemetry::StampedReport>,
}

/// `Table`: the pheromone table and counters (the admin view), reliability as of `now_ms`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableRequest {
    #[serde(default)]
    pub now_ms: u64,
}
/// `Reset`: forget the colony.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ResetRequest {
    pub now_ms: u64,
}
/// `Export`: the learned state an export file carries, and the colony's version.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExportRequest {}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportReply {
    pub version: u64,
    pub state: ExportedState,
}

/// `Import`: replace the colony by this (checked) state, in one commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportRequest {
    pub state: ExportedState,
    pub now_ms: u64,
}

/// `ShadowSummary`: shadow mode's summary.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ShadowSummaryRequest {}

impl ColonyCall for CopyRequest {
    const ROUTE: Route = Route::Copy;
    type Reply = ColonySnapshot;
}
impl ColonyCall for DecisionBatch {
    const ROUTE: Route = Route::Decisions;
    type Reply = DecisionsReply;
}
impl ColonyCall for PlacementsRequest {
    const ROUTE: Route = Route::Placements;
    type Reply = PlacementsReply;
}
impl ColonyCall for ShadowRequest {
    const ROUTE: Route = Route::Shadow;
    type Reply = ShadowReply;
}
impl ColonyCall for ShadowSummaryRequest {
    const ROUTE: Route = Route::ShadowSummary;
    type Reply = ShadowSummary;
}
impl ColonyCall for TableRequest {
    const ROUTE: Route = Route::Table;
    type Reply = PheromoneTableReply;
}
impl ColonyCall for ResetRequest {
    const ROUTE: Route = Route::Reset;
    type Reply = ResetReply;
}
impl ColonyCall for ExportRequest {
    const ROUTE: Route = Route::Export;
    type Reply = ExportReply;
}
impl ColonyCall for ImportRequest {
    const ROUTE: Route = Route::Import;
    type Reply = ImportReply;
}
impl ColonyCall for LookupRequest {
    const ROUTE: Route = Route::Lookup;
    type Reply = DecisionLookup;
}

#[cfg(test)]
mod tests {
    use super::*;
    use aco_core::cluster::DEFAULT_CLUSTER;

    #[test]
    fn every_route_has_one_path_and_parses_back() {
        for (route, path) in ROUTES {
            assert_eq!(route.path(), path);
            assert_eq!(Route::parse(path), Some(route));
        }
        assert_eq!(Route::parse("/nope"), None);
    }

    #[test]
    fn colony_names_name_their_objects() {
        assert_eq!(ColonyName::new("eu-1", "ml").object_name(), "eu-1/ml");
        assert_eq!(ColonyName::new(DEFAULT_CLUSTER, "ml").object_name(), "ml");
    }
}
