//! The part of the Worker's configuration the reporter must read the same way: which node labels
//! carry the GPU model, price, latency and spot capacity, which pod labels and annotations name
//! the tenant, workload class, latency target and GPU models, what counts as a GPU, and how long
//! a decision waits for its placement. The reporter reads these vars from its own environment
//! (its admission webhook must answer while the Worker is away), so the two could disagree; a
//! reporter that read other labels would send facts the Worker misreads without any error.
//!
//! `GET /v1/config/reporter` answers the Worker's [`ReporterView`]; the reporter compares it with
//! its own at start and now and then, and refuses to run on a difference, naming each var.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::Config;

/// The vars both must agree on.
pub const REPORTER_KEYS: &[&str] = &[
    "GPU_TYPE_LABELS",
    "GPU_RESOURCES",
    "COST_LABEL",
    "LATENCY_LABELS",
    "INSTANCE_TYPE_LABEL",
    "SPOT_LABELS",
    "TENANT_LABEL",
    "TENANT_SOURCE",
    "WORKLOAD_LABEL",
    "LATENCY_TARGET_ANNOTATIONS",
    "GPU_MODELS_ANNOTATION",
    "DECISION_TTL_MS",
];

/// Those vars' values as one side reads them, and their fingerprint (SHA-256 of the canonical
/// JSON of `vars`, the first 16 hex digits: for logs and a quick compare).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReporterView {
    pub fingerprint: String,
    pub vars: BTreeMap<String, String>,
}

impl ReporterView {
    /// Takes the whole Config: the view is a chosen set of its vars, across groups.
    pub fn of(config: &Config) -> ReporterView {
        let vars: BTreeMap<String, String> = config
            .var_values()
            .into_iter()
            .filter(|(key, _)| REPORTER_KEYS.contains(key))
            .map(|(key, value)| (key.to_string(), value))
            .collect();
        let canonical = serde_json::to_vec(&vars).unwrap_or_default();
        let digest = Sha256::digest(&canonical);
        let fingerprint = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        ReporterView { fingerprint, vars }
    }

    /// Each var that differs, as `KEY: here "…", Worker "…"` (empty when they agree).
    pub fn differences(&self, worker: &ReporterView) -> Vec<String> {
        let keys: std::collections::BTreeSet<&String> =
            self.vars.keys().chain(worker.vars.keys()).collect();
        keys.into_iter()
            .filter(|k| self.vars.get(*k) != worker.vars.get(*k))
            .map(|k| {
                let shown =
                    |v: Option<&String>| v.map_or("(not read)".into(), |v| format!("{v:?}"));
                format!(
                    "{k}: here {}, Worker {}",
                    shown(self.vars.get(k)),
                    shown(worker.vars.get(k))
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Config {
        Config::from_vars(|k| {
            vars.iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v.to_string())
        })
        .unwrap()
    }

    #[test]
    fn every_key_is_a_var_of_the_declaration() {
        let view = ReporterView::of(&Config::default());
        let read: Vec<&str> = view.vars.keys().map(String::as_str).collect();
        let mut expected = REPORTER_KEYS.to_vec();
        expected.sort();
        assert_eq!(read, expected, "a var was renamed or removed");
    }

    #[test]
    fn the_same_reading_agrees_and_another_label_is_named() {
        let worker = ReporterView::of(&config(&[("ALPHA", "1")]));
        assert!(
            ReporterView::of(&Config::default())
                .differences(&worker)
                .is_empty(),
            "ALPHA is the Worker's own"
        );
        let here = ReporterView::of(&config(&[("COST_LABEL", "price")]));
        assert_ne!(here.fingerprint, worker.fingerprint);
        assert_eq!(
            here.differences(&worker),
            [r#"COST_LABEL: here "price", Worker "aco/cost-per-hour""#]
        );
        let json = serde_json::to_string(&here).unwrap();
        assert_eq!(serde_json::from_str::<ReporterView>(&json).unwrap(), here);
    }
}
