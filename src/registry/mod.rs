//! How many clusters and colonies exist: the Registry Durable Object (`object.rs`, one global
//! instance, a thin adapter over `aco_core::registry::Registry`), its typed internal API
//! (`api.rs`) and the Worker's side
//! (`client.rs`: admission with this isolate's memory of what was admitted, and the pages
//! `/metrics` reads).

pub mod api;
pub mod client;
mod object;

pub use api::BINDING;
pub use object::Registry;
