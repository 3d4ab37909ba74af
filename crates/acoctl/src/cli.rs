//! The command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "acoctl",
    version,
    about = "Operate an aco-edge-extender Worker: clusters, tenants, trails, explanations, export/import, reset",
    after_help = "The admin token is read from ACO_ADMIN_TOKEN or --token-file (never from a flag's value)."
)]
pub struct Args {
    /// The Worker's base URL, e.g. https://aco.example.workers.dev.
    #[arg(long, env = "ACO_WORKER_URL")]
    pub url: String,
    /// A file holding the Worker's ADMIN_TOKEN (a mounted Secret); else ACO_ADMIN_TOKEN.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// The cluster (`/c/<cluster>`); without it, the default cluster.
    #[arg(long, env = "ACO_CLUSTER")]
    pub cluster: Option<String>,
    /// How replies are printed.
    #[arg(long, short, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Seconds to wait for each reply.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The clusters the Worker serves: the default one and every named one in use.
    Clusters,
    /// The tenants with a colony in the cluster (--cluster).
    Tenants,
    /// A tenant's trails: τ, outcomes and reliability per node, and what its colony remembers.
    Trails { tenant: String },
    /// Why a pod's candidates scored what they did, where it was answered and where it was bound.
    Explain {
        tenant: String,
        /// The pod's UID, or namespace/name for a pod without one.
        pod: String,
    },
    /// Writes a colony's learned state (τ, outcome history, counters) to a file, versioned and
    /// checksummed.
    Export {
        tenant: String,
        /// Where to write it (`-`: standard output).
        #[arg(long, short, default_value = "-")]
        file: PathBuf,
    },
    /// Replaces a colony by an exported state. Refused, changing nothing, when the file is of
    /// another version, damaged, or of another cluster or tenant (unless --allow-rename).
    Import {
        tenant: String,
        /// The export file (`-`: standard input).
        #[arg(long, short)]
        file: PathBuf,
        /// Import a file exported from another cluster or tenant.
        #[arg(long)]
        allow_rename: bool,
    },
    /// Forgets a tenant's colony: trails, outcomes, remembered pods.
    Reset {
        tenant: String,
        /// Required: a reset cannot be undone (export first).
        #[arg(long)]
        yes: bool,
    },
}
