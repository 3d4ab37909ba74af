// Request paths must not panic (a panic aborts the isolate / stops delivery): no unwrap or
// expect outside tests. Tests may.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = aco_reporter::config::Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,kube=warn,hyper=warn".into());
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    if args.log_format == "json" {
        subscriber.json().init();
    } else {
        subscriber.init();
    }
    match aco_reporter::run::run(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "aco-reporter stopped");
            std::process::ExitCode::FAILURE
        }
    }
}
