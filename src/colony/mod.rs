//! A tenant's colony: the Colony Durable Object (`object.rs`, a thin adapter over
//! `aco_core::colony_store`), its typed internal API (`api.rs`) and client (`client.rs`), and
//! what each isolate keeps of it — a copy to score from (`copy.rs`) and the decisions scored
//! from that copy until they are durable (`queue.rs`).

pub mod api;
pub mod client;
pub mod copy;
mod object;
pub mod queue;

pub use object::Colony;
