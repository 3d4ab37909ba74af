//! A cluster's node facts: the Facts Durable Object (`object.rs`, the single writer, a thin
//! adapter over `aco_core::facts_shards::FactsTable`), its typed internal API (`api.rs`) and the
//! Worker's client with this
//! isolate's copy of the cluster's shards (`client.rs`).

pub mod api;
pub mod client;
mod object;

pub use api::BINDING;
pub use object::Facts;
