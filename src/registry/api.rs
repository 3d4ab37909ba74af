//! The Registry object's internal API (`crate::object_call`): one global instance; bodies are
//! the core's (`aco_core::registry`).

use aco_core::registry::{AdmitReply, AdmitRequest, Page, PageRequest};

use crate::object_call::{object_calls, object_routes, ObjectApi};

pub const BINDING: &str = "REGISTRY";
pub const CLASS: &str = "Registry";
pub const INSTANCE: &str = "global";

object_routes!(Route {
    Admit => "/admit",
    Names => "/names",
});

pub struct RegistryApi;

impl ObjectApi for RegistryApi {
    const BINDING: &'static str = BINDING;
    const CLASS: &'static str = CLASS;
    type Route = Route;
    const ROUTES: &'static [(Route, &'static str)] = Route::PATHS;
}

object_calls!(RegistryApi {
    AdmitRequest => Admit: AdmitReply,
    PageRequest => Names: Page,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_one_path_and_parses_back() {
        crate::object_call::tests::routes_round_trip::<RegistryApi>();
    }
}
