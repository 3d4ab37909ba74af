//! The Telemetry object's internal API (`crate::object_call`): one global instance; bodies are
//! the core's (`aco_core::telemetry`).

use aco_core::telemetry::{Ack, Delivery, ScrapeReply, ScrapeRequest};

use crate::object_call::{object_calls, object_routes, ObjectApi};

pub const BINDING: &str = "TELEMETRY";
pub const CLASS: &str = "Telemetry";
/// One global instance: it receives one request per isolate per flush interval.
pub const INSTANCE: &str = "global";

object_routes!(Route {
    Batches => "/batches",
    Scrape => "/scrape",
});

pub struct TelemetryApi;

impl ObjectApi for TelemetryApi {
    const BINDING: &'static str = BINDING;
    const CLASS: &'static str = CLASS;
    type Route = Route;
    const ROUTES: &'static [(Route, &'static str)] = Route::PATHS;
}

object_calls!(TelemetryApi {
    Delivery => Batches: Ack,
    ScrapeRequest => Scrape: ScrapeReply,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_one_path_and_parses_back() {
        crate::object_call::tests::routes_round_trip::<TelemetryApi>();
    }
}
