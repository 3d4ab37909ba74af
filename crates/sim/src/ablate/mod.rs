//! `aco-sim ablate <mode>`: what each part of the extender is worth, every row a configuration
//! run over several seeds (mean ± sd).
//!
//! - [`eta`]: the colony with each factor of η left out, the trail on under each kind of outcome
//!   report, prices varied, beside η alone and the baselines (cost and LS QoS).
//! - [`predictors`]: which load predictor feeds η (the colony's safe-node routing).
//! - [`predictors_real`]: the same predictors on real load dynamics, with their forecast error.

pub mod eta;
pub mod predictors;
pub mod predictors_real;
