//! `aco-sim explain`: a remembered decision's explanation from a running Worker.

use clap::Args;

use crate::explain;
use crate::trace::Error;

#[derive(Args)]
pub struct ExplainArgs {
    /// The Worker's base URL (`wrangler dev` serves http://127.0.0.1:8787).
    #[arg(long, default_value = "http://127.0.0.1:8787")]
    pub url: String,
    /// The Worker's ADMIN_TOKEN (no default: a deployment's is a secret; scripts/demo's is random).
    #[arg(long, env = "ACO_ADMIN_TOKEN", hide_env_values = true)]
    pub token: String,
    /// The cluster the decision was made for (`/c/<cluster>` routes; none: the default
    /// cluster).
    #[arg(long)]
    pub cluster: Option<String>,
    /// The tenant whose colony made the decision.
    #[arg(long)]
    pub tenant: String,
    /// The pod's UID (or namespace/name for a pod without one).
    #[arg(long)]
    pub pod: String,
    /// Print the JSON reply instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn main(args: ExplainArgs) -> Result<(), Error> {
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()?;
    let e = explain::fetch(
        &client,
        &args.url,
        &args.token,
        args.cluster.as_deref(),
        &args.tenant,
        &args.pod,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&e)?);
    } else {
        print!("{}", explain::render(&e));
    }
    Ok(())
}
