use clap::Parser;

fn main() {
    if let Err(e) = aco_sim::cli::main(aco_sim::cli::Cli::parse().cmd) {
        eprintln!("aco-sim: {e}");
        std::process::exit(1);
    }
}
