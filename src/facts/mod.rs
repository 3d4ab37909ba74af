//! A cluster's node facts: the Facts Durable Object (`object.rs`, the single writer, a thin
//! adapter over `aco_core::facts_shards::FactsTable`) and the Worker's client with this
//! isolate's copy of the cluster's shards (`client.rs`).

pub mod client;
mod object;

pub use object::{Facts, SnapshotReply, BINDING, CLASS};
