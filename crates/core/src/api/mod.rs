//! The Worker's own HTTP API: every body that crosses a process boundary between the
//! in-cluster reporter (or the simulator standing in for it) and the Worker, in both directions.
//! The operator's routes (`acoctl`: a tenant's trails, a colony's export) are here too.
//! One type per shape, `Serialize` for the sender and `Deserialize` (`deny_unknown_fields`) for
//! the Worker, so that the contract is written once and a field renamed on one side cannot
//! silently be dropped by the other. Golden JSON tests fix each shape's bytes.
//!
//! Kept apart from [`crate::wire`] on purpose: that module is kube-scheduler's extender protocol
//! (Go's field names and case rules, golden bytes from `types_test.go`), a contract we follow;
//! this one is ours. The Colony object's internal bodies (`colony_store::wire`) never leave the
//! Worker and stay with the store.
//!
//! Only shapes live here; what a body means (validation, how a report is folded into the
//! facts, how a placement deposits) stays with the code that applies it (`facts`,
//! `facts_shards`, the Worker's routes) — but for the export file's own checks (version,
//! checksum, values), which are part of its format.

pub mod batch_failure;
pub mod colony_export;
pub mod dropped;
pub mod error;
pub mod nodes;
pub mod pheromones;
pub mod placements;
pub mod reporter_view;
pub mod shadow;
