use clap::Parser;

fn main() {
    let args = acoctl::cli::Args::parse();
    match acoctl::commands::run(args) {
        Ok(text) => print!("{text}"),
        Err(f) => {
            eprintln!("acoctl: {}", f.message);
            std::process::exit(f.code);
        }
    }
}
