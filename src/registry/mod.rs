//! How many clusters and colonies exist: the Registry Durable Object (`object.rs`, one global
//! instance, a thin adapter over `aco_core::registry::Registry`) and the Worker's side
//! (`client.rs`: admission with this isolate's memory of what was admitted, and the pages
//! `/metrics` reads).

pub mod client;
mod object;

pub use object::{Registry, BINDING, CLASS, INSTANCE};
