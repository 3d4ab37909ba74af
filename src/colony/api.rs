//! The Colony object's internal API: every call is a request type that names its route and its
//! reply type (`crate::object_call::ObjectCall`), so the object's router (`object.rs`) and its
//! client (`client.rs`) cannot disagree on a path or a body. Bodies are the core's
//! (`aco_core::colony_store::wire`); the tenant travels once, as the [`ColonyName`] in a header.

use aco_core::api::colony_export::{ExportedState, ImportReply};
use aco_core::api::pheromones::{PheromoneTableReply, ResetReply};
use aco_core::cluster::{colony_name, ClusterId, TenantId};
use aco_core::colony_store::wire::{ColonyFailure, FailureBody};
use aco_core::colony_store::wire::{
    ColonySnapshot, CopyRequest, DecisionBatch, DecisionLookup, DecisionsReply, LookupRequest,
    PlacementsReply, PlacementsRequest, ShadowReply, ShadowRequest,
};
use aco_core::shadow::ShadowSummary;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use worker::Request;

use crate::clock;
use crate::http::ApiError;
use crate::object_call::{object_calls, object_routes, ObjectApi};
use crate::telemetry;

pub const BINDING: &str = "COLONY";
/// Class label of the binding counters (`aco_do_rows_written_total{class}`).
pub const CLASS: &str = "Colony";
/// Header carrying the colony's name (cluster and tenant) on every call.
pub const NAME_HEADER: &str = "x-aco-colony";

/// A tenant's colony in a cluster: names its Durable Object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ColonyName {
    pub cluster: ClusterId,
    pub tenant: TenantId,
}

impl ColonyName {
    pub fn new(cluster: &ClusterId, tenant: &TenantId) -> Self {
        Self {
            cluster: cluster.clone(),
            tenant: tenant.clone(),
        }
    }

    /// The Durable Object's name (the default cluster's are the bare tenant names).
    pub fn object_name(&self) -> String {
        colony_name(self.cluster.as_str(), self.tenant.as_str())
    }
}

object_routes!(Route {
    Copy => "/copy",
    Decisions => "/decisions",
    Placements => "/placements",
    Shadow => "/shadow",
    ShadowSummary => "/shadow-summary",
    Table => "/table",
    Reset => "/reset",
    Lookup => "/lookup",
    Export => "/export",
    Import => "/import",
});

/// The Colony object's API (`crate::object_call`): the colony's name travels in
/// [`NAME_HEADER`], each reply in an [`Envelope`] whose report goes to this isolate's telemetry,
/// a failure is the object's [`FailureBody`] and counted as the colony's.
pub struct ColonyApi;

impl ObjectApi for ColonyApi {
    const BINDING: &'static str = BINDING;
    const CLASS: &'static str = CLASS;
    type Route = Route;
    const ROUTES: &'static [(Route, &'static str)] = Route::PATHS;

    fn prepare(request: &Request, instance: &str) -> Result<(), worker::Error> {
        request.headers().set(NAME_HEADER, instance)?;
        clock::forward(request.headers())
    }

    fn read_reply<R: DeserializeOwned>(text: &str) -> serde_json::Result<R> {
        let envelope: Envelope<R> = serde_json::from_str(text)?;
        if let Some(report) = envelope.report {
            telemetry::colony_report(report);
        }
        Ok(envelope.reply)
    }

    /// A 503 naming the colony, with `colony_failure` set for the failure counters
    /// (`corrupt_state`, `error`); a body that is not the object's (the runtime's own error
    /// page) is an `error`.
    fn failure(instance: &str, status: u16, text: &str) -> ApiError {
        let reason =
            serde_json::from_str::<FailureBody>(text).map_or(ColonyFailure::Error, |f| f.reason);
        let tenant = aco_core::cluster::split_colony_name(instance).1;
        ApiError {
            colony_failure: Some(reason),
            ..ApiError::new(
                503,
                format!("colony Durable Object of tenant {tenant:?} answered {status}: {text}"),
            )
        }
    }

    fn unreachable(e: ApiError) -> ApiError {
        e
    }
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

object_calls!(ColonyApi {
    CopyRequest => Copy: ColonySnapshot,
    DecisionBatch => Decisions: DecisionsReply,
    PlacementsRequest => Placements: PlacementsReply,
    ShadowRequest => Shadow: ShadowReply,
    ShadowSummaryRequest => ShadowSummary: ShadowSummary,
    TableRequest => Table: PheromoneTableReply,
    ResetRequest => Reset: ResetReply,
    ExportRequest => Export: ExportReply,
    ImportRequest => Import: ImportReply,
    LookupRequest => Lookup: DecisionLookup,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_one_path_and_parses_back() {
        crate::object_call::tests::routes_round_trip::<ColonyApi>();
    }

    #[test]
    fn colony_names_name_their_objects() {
        let ml = TenantId::parse("ml").unwrap();
        let eu = ClusterId::parse("eu-1").unwrap();
        assert_eq!(ColonyName::new(&eu, &ml).object_name(), "eu-1/ml");
        assert_eq!(
            ColonyName::new(&ClusterId::default_cluster(), &ml).object_name(),
            "ml"
        );
    }
}
