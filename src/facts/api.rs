//! The Facts object's internal API (`crate::object_call`): one object per cluster, named by the
//! cluster id; bodies are the core's (`aco_core::facts_wire`).

use aco_core::api::error::ErrorBody;
use aco_core::api::nodes::NodesReply;
use aco_core::facts::NodeFacts;
use aco_core::facts_wire::{NodeRequest, PutNodes, SnapshotReply, SnapshotRequest};

use crate::http::ApiError;
use crate::object_call::{object_calls, object_routes, ObjectApi};

pub const BINDING: &str = "FACTS";
/// Class label of the binding counters (`aco_do_rows_written_total{class}`).
pub const CLASS: &str = "Facts";

object_routes!(Route {
    Put => "/nodes",
    Node => "/node",
    Snapshot => "/snapshot",
});

pub struct FactsApi;

impl ObjectApi for FactsApi {
    const BINDING: &'static str = BINDING;
    const CLASS: &'static str = CLASS;
    type Route = Route;
    const ROUTES: &'static [(Route, &'static str)] = Route::PATHS;

    /// The object's 4xx (a bad batch, [`ErrorBody`] naming the field) is the client's, anything
    /// else ours (503).
    fn failure(_instance: &str, status: u16, text: &str) -> ApiError {
        match ErrorBody::parse(text) {
            Some(r) if (400..500).contains(&status) => ApiError {
                field: r.field,
                item: r.item,
                ..ApiError::new(status, r.error)
            },
            _ => ApiError::new(
                503,
                format!("facts Durable Object answered {status}: {text}"),
            ),
        }
    }
}

object_calls!(FactsApi {
    PutNodes => Put: NodesReply,
    NodeRequest => Node: Option<NodeFacts>,
    SnapshotRequest => Snapshot: SnapshotReply<NodeFacts>,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_one_path_and_parses_back() {
        crate::object_call::tests::routes_round_trip::<FactsApi>();
    }
}
