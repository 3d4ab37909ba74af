//! The reporter runs only while it reads the shared vars as the Worker does
//! (`aco_core::api::reporter_view`): at start it asks the Worker's view and refuses to run on a
//! difference, naming each var; then it asks again every [`RECHECK`], and stops on a difference
//! (a Worker redeployed with other label vars), so that Kubernetes restarts it into the refusal,
//! where `AcoReporterDown` fires, rather than it sending facts the Worker misreads.

use std::time::Duration;

use aco_core::api::reporter_view::ReporterView;
use tokio::sync::watch;

use crate::worker_client::WorkerClient;

pub const PATH: &str = "/v1/config/reporter";

/// How often a running reporter compares again.
pub const RECHECK: Duration = Duration::from_secs(300);

/// What the Worker's answer says about the two views.
#[derive(Debug, Clone, PartialEq)]
pub enum Agreement {
    Agree,
    /// The vars that differ (`ReporterView::differences`).
    Differ(Vec<String>),
    /// A Worker without the route (older than the reporter): nothing to compare.
    NotOffered,
    /// No answer to judge (unreachable, 5xx, 401 …): ask again later.
    Unknown(String),
}

/// Asks the Worker's view and compares it with `mine`.
pub async fn ask(worker: &WorkerClient, mine: &ReporterView) -> Agreement {
    let answer = worker.get(PATH).await;
    match answer.status {
        Some(200) => match serde_json::from_str::<ReporterView>(&answer.body) {
            Ok(theirs) => judge(mine, &theirs),
            Err(e) => Agreement::Unknown(format!("the Worker's view does not parse: {e}")),
        },
        Some(404) => Agreement::NotOffered,
        status => Agreement::Unknown(format!(
            "{}: {}",
            status.map_or("unreachable".into(), |s| format!("HTTP {s}")),
            answer.body.chars().take(200).collect::<String>()
        )),
    }
}

pub fn judge(mine: &ReporterView, theirs: &ReporterView) -> Agreement {
    let differences = mine.differences(theirs);
    if differences.is_empty() {
        Agreement::Agree
    } else {
        Agreement::Differ(differences)
    }
}

/// The error a difference is refused with.
pub fn refusal(differences: &[String]) -> anyhow::Error {
    anyhow::anyhow!(
        "the Worker reads these vars differently from this reporter; give the reporter's \
         environment the Worker's [vars] values: {}",
        differences.join("; ")
    )
}

/// At start: waits until the Worker answers (backing off to 30 s between tries), then `Ok(true)`
/// to run, `Err` on a difference; `Ok(false)` when shut down while waiting.
pub async fn agree_at_start(
    worker: &WorkerClient,
    mine: &ReporterView,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<bool> {
    let mut wait = Duration::from_secs(1);
    loop {
        match ask(worker, mine).await {
            Agreement::Agree => {
                tracing::info!(fingerprint = %mine.fingerprint, "the Worker reads the shared vars as this reporter does");
                return Ok(true);
            }
            Agreement::NotOffered => {
                tracing::warn!(
                    "the Worker does not offer {PATH}: the shared vars are not compared"
                );
                return Ok(true);
            }
            Agreement::Differ(d) => return Err(refusal(&d)),
            Agreement::Unknown(why) => {
                tracing::warn!(%why, "cannot compare the shared vars with the Worker yet; asking again");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.wait_for(|s| *s) => return Ok(false),
        }
        wait = (wait * 2).min(Duration::from_secs(30));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aco_core::config::Config;

    #[test]
    fn a_difference_is_refused_naming_the_var() {
        let mine = ReporterView::of(&Config::default());
        assert_eq!(judge(&mine, &mine), Agreement::Agree);
        let theirs = ReporterView::of(
            &Config::from_vars(|k| (k == "TENANT_SOURCE").then(|| "namespace".into())).unwrap(),
        );
        let Agreement::Differ(d) = judge(&mine, &theirs) else {
            panic!("must differ")
        };
        let message = refusal(&d).to_string();
        assert!(
            message.contains(r#"TENANT_SOURCE: here "label-then-namespace", Worker "namespace""#),
            "{message}"
        );
    }
}
