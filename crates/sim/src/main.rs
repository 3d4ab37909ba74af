use clap::Parser;

fn main() {
    if let Err(e) = aco_sim::cli::main(aco_sim::cli::Cli::parse()) {
        eprintln!("aco-sim: {e}");
        std::process::exit(aco_sim::cli::exit_status(&e));
    }
}
