//! Pure core of aco-edge-extender.
//!
//! Nothing in this crate performs I/O, reads a clock or owns a randomness source:
//! time arrives as `now_ms` arguments and randomness as `&mut impl rand::Rng`, so the
//! same code runs natively (tests, simulator, benchmarks) and unchanged in wasm (the Worker).

pub mod access;
pub mod api;
pub mod assumed;
pub mod cluster;
pub mod colony;
pub mod colony_store;
pub mod config;
pub mod config_doc;
pub mod demand;
pub mod extender;
pub mod facts;
pub mod facts_shards;
pub mod facts_wire;
pub mod filter;
pub mod heuristic;
pub mod k8s;
pub mod metrics;
pub mod names;
pub mod node_labels;
pub mod node_state;
pub mod pipeline;
pub mod predict;
pub mod quantity;
pub mod registry;
pub mod request_log;
pub mod route;
pub mod run_time;
pub mod shadow;
pub mod telemetry;
pub mod wire;
