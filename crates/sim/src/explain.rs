//! Fetches a decision's explanation (`GET /v1/tenants/{t}/decisions/{podUid}` of the Worker):
//! `aco-sim explain` fetches one, `aco-sim replay --explain N` the first N scored pods' (fetched
//! between prioritize and the placement report, so that every one is shown as scored, before a
//! bound node; the Worker keeps it after the confirmation too, `CONFIRMED_EXPLANATIONS_*`).

use aco_core::colony::DecisionExplanation;

use crate::trace::Error;

/// The explanation as a plain-text table (the core's, shared with `acoctl`).
pub use aco_core::colony::explain_text::render;

/// `GET [/c/<cluster>]/v1/tenants/{tenant}/decisions/{pod}` with the admin token.
pub fn fetch(
    client: &reqwest::blocking::Client,
    base_url: &str,
    token: &str,
    cluster: Option<&str>,
    tenant: &str,
    pod: &str,
) -> Result<DecisionExplanation, Error> {
    let prefix = cluster.map(|c| format!("/c/{c}")).unwrap_or_default();
    let url = format!(
        "{}{prefix}/v1/tenants/{tenant}/decisions/{pod}",
        base_url.trim_end_matches('/')
    );
    let res = client.get(&url).bearer_auth(token).send()?;
    let status = res.status();
    let text = res.text()?;
    if !status.is_success() {
        return Err(format!("GET {url}: HTTP {status}: {text}").into());
    }
    serde_json::from_str(&text).map_err(|e| format!("explanation reply: {e}: {text}").into())
}
