//! The `aco-sim` command line: one file per subcommand (`run.rs`, `ablate.rs`, `saturate.rs`,
//! `replay.rs`, `explain.rs`), the flags the trace-driven ones share (`input.rs`) and the writer
//! of their files (`output.rs`).

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use crate::trace::Error;

pub mod ablate;
pub mod explain;
pub mod input;
pub mod output;
pub mod replay;
pub mod run;
pub mod saturate;

#[derive(Parser)]
#[command(
    name = "aco-sim",
    about = "OpenB trace simulator, scheduling benchmark and Worker replay for aco-edge-extender"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Run policies over a trace and write Markdown/JSON tables and SVG plots.
    Run(run::RunArgs),
    /// What each part of the extender is worth, over several seeds: `eta` (factors of η, the
    /// trail under each kind of outcome report, beside η alone and the baselines), `predictors`
    /// (the load predictor feeding η) or `predictors-real` (the predictors on real load dynamics).
    Ablate(ablate::AblateArgs),
    /// The ATC '23 saturation protocol: GPU nodes only, no departures, shuffled + resampled pods
    /// up to 130% of GPU capacity; GPU allocation ratio vs arrived workload per policy.
    /// One or many variants (`--openb gpuspec10,cpu050` or `all`, `--openb-dir` repeatable);
    /// with several, also one reproduction table.
    Saturate(saturate::SaturateArgs),
    /// Drive a running Worker with the trace (the demo): facts, filter, prioritize, placements.
    Replay(replay::ReplayArgs),
    /// Print a remembered decision's explanation from a running Worker
    /// (`GET [/c/<cluster>]/v1/tenants/{tenant}/decisions/{pod}`).
    Explain(explain::ExplainArgs),
}

/// Runs one subcommand.
pub fn main(cmd: Cmd) -> Result<(), Error> {
    match cmd {
        Cmd::Run(args) => run::main(args),
        Cmd::Ablate(args) => ablate::main(args),
        Cmd::Saturate(args) => saturate::run(&args, &parse_seeds(&args.seeds)?, repo_path),
        Cmd::Replay(args) => replay::main(args),
        Cmd::Explain(args) => explain::main(args),
    }
}

/// A path given on the command line: as given if it exists (or is absolute), else relative to
/// the repository root, so the commands work from the repository and from `crates/sim`.
pub fn repo_path(p: &Path) -> PathBuf {
    if p.exists() || p.is_absolute() {
        return p.to_path_buf();
    }
    let alt = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p);
    if alt.exists() {
        alt
    } else {
        p.to_path_buf()
    }
}

/// Seeds as a range `42-51` or a list `42,43`.
pub fn parse_seeds(seeds: &str) -> Result<Vec<u64>, Error> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|e| format!("--seeds {seeds:?}: {e}"))
    };
    Ok(match seeds.split_once('-') {
        Some((a, b)) => (number(a)?..=number(b)?).collect(),
        None => seeds.split(',').map(number).collect::<Result<_, _>>()?,
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// clap's own checks of every subcommand (two flags with one id made `predictors` refuse
    /// every invocation once).
    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn seeds_are_a_range_or_a_list() {
        assert_eq!(parse_seeds("1-3").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_seeds("42, 44").unwrap(), vec![42, 44]);
        assert!(parse_seeds("x")
            .unwrap_err()
            .to_string()
            .contains("--seeds"));
    }
}
