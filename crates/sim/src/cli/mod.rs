//! The `aco-sim` command line: one file per subcommand (`run.rs`, `ablate.rs`, `saturate.rs`,
//! `replay.rs`, `explain.rs`, `import.rs`), the flags the trace-driven ones share (`input.rs`),
//! where relative paths and outputs go (`paths.rs`), the data sets found or refused
//! (`data.rs`), and the writer of their files (`output.rs`).

use clap::{Parser, Subcommand};

use crate::trace::Error;

pub mod ablate;
pub mod data;
pub mod explain;
pub mod import;
pub mod input;
pub mod output;
pub mod paths;
pub mod replay;
pub mod run;
pub mod saturate;

pub use paths::repo_path;

#[derive(Parser)]
#[command(
    name = "aco-sim",
    about = "OpenB trace simulator, scheduling benchmark and Worker replay for aco-edge-extender"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
    /// No progress bars (they are drawn on stderr only when it is a terminal; the per-run
    /// summary lines stay).
    #[arg(long, short, global = true)]
    pub quiet: bool,
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
    /// Turn a cluster's own state into a replayable trace: nodes and pods of a
    /// `kubectl get nodes,pods -o json` dump (a v1.List) with their requests, labels, prices
    /// and start/end times, as OpenB CSVs that `run --openb-dir DIR` and `saturate
    /// --openb-dir DIR` replay ("what would the colony have done on my cluster?").
    Import(import::ImportArgs),
}

/// Runs one subcommand. A data set that is needed and missing is a [`data::MissingData`]
/// error (the binary exits 2 on it).
pub fn main(cli: Cli) -> Result<(), Error> {
    let progress = crate::progress::Display::new(!cli.quiet);
    match cli.cmd {
        Cmd::Run(args) => run::main(args, progress),
        Cmd::Ablate(args) => ablate::main(args, progress),
        Cmd::Saturate(args) => saturate::run(&args, &parse_seeds(&args.seeds)?, progress),
        Cmd::Replay(args) => replay::main(args),
        Cmd::Explain(args) => explain::main(args),
        Cmd::Import(args) => import::main(args),
    }
}

/// The exit status for an error of [`main`]: 2 when a data set is missing, else 1.
pub fn exit_status(e: &Error) -> i32 {
    if e.downcast_ref::<data::MissingData>().is_some() {
        2
    } else {
        1
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

    /// Every flag of `aco-sim` and of every subcommand (at every depth) says what it is for.
    #[test]
    fn every_flag_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>, seen: &mut usize) {
            for arg in cmd.get_arguments() {
                *seen += 1;
                let id = arg.get_id().as_str();
                if id != "help" && id != "version" && arg.get_help().is_none() {
                    missing.push(format!("{path} --{}", arg.get_long().unwrap_or(id)));
                }
            }
            for sub in cmd.get_subcommands() {
                assert!(
                    sub.get_about().is_some(),
                    "{path} {} has no description",
                    sub.get_name()
                );
                walk(sub, &format!("{path} {}", sub.get_name()), missing, seen);
            }
        }
        let mut cmd = Cli::command();
        cmd.build();
        let (mut missing, mut seen) = (Vec::new(), 0);
        walk(&cmd, "aco-sim", &mut missing, &mut seen);
        assert!(missing.is_empty(), "flags without help: {missing:?}");
        // Every subcommand's shared flags are counted: the walk really reached them.
        assert!(seen > 150, "{seen} args walked");
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
