//! `acoctl`, the operator's command line of aco-edge-extender, over the Worker's admin routes
//! (`ADMIN_TOKEN`): which clusters and tenants exist, a tenant's trails and reliability per node,
//! why a pod landed where it did, a colony's export to a file and its import (into this Worker or
//! a fresh one), and a reset. Every reply is a type of `aco_core::api` (or the core's), printed
//! as a table or as JSON (`--output json`).
//!
//! The token comes from `ACO_ADMIN_TOKEN` or `--token-file`, never from a flag's value or a
//! default. Exit codes: 0 done, 1 the Worker refused or failed (its message and the field it
//! names are printed), 2 a usage error (clap's, or a missing token).

pub mod cli;
pub mod client;
pub mod commands;
pub mod table;

/// What a command failed with, and the exit code it means.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    /// The Worker or the network: exit 1.
    pub fn remote(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }

    /// The command line: exit 2.
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }
}
