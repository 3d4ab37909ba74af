//! Trace simulator for aco-edge-extender: replays the OpenB GPU trace (Weng et al., "Beware of
//! Fragmentation", USENIX ATC 2023) through scheduling policies that all use the same pure core
//! (`aco-core`) as the Worker, and drives the live Worker over HTTP with the same trace.
//!
//! Layout: [`trace`] reads the CSVs, [`prices`] the price table, [`cluster`] turns trace rows into
//! real-shaped `v1.Node`/`v1.Pod` JSON, [`load`] is the seeded utilisation model, [`policy`] the
//! scoring policies, [`engine`] the discrete-event simulation and its metrics, [`replay`] the HTTP
//! scheduler ([`shadow`] its shadow mode), [`report`] the Markdown/JSON/SVG output; [`recording`] notes a replay into a
//! [`replay_record::ReplayRecord`] that [`html_report`] draws as the demo's HTML report.
//! [`saturate`] is the ATC '23 saturation protocol, [`ablate`] the ablations, and [`cli`] the
//! `aco-sim` command line (one file per subcommand); [`progress`] draws the long subcommands'
//! progress bars and [`import`] turns a cluster's own objects into a replayable trace.

pub mod ablate;
pub mod alloc;
pub mod churn;
pub mod cli;
pub mod cluster;
pub mod engine;
pub mod explain;
pub mod facts_report;
pub mod faults;
pub mod gpu_accounts;
pub mod html_report;
pub mod import;
pub mod indexed_facts;
pub mod load;
pub mod native;
pub mod parallel;
pub mod performance;
pub mod policy;
pub mod predictor;
pub mod prices;
pub mod progress;
pub mod recording;
pub mod replay;
pub mod replay_record;
pub mod report;
pub mod rng;
pub mod saturate;
pub mod scheduler;
pub mod shadow;
pub mod spot;
pub mod spot_pool;
pub mod trace;
pub mod usage;
