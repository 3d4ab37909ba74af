//! The kube-scheduler configuration of a test: `k8s/scheduler-config.yaml`, the file the shipped
//! Secret `aco-scheduler-config` is generated from (or its mTLS variant,
//! `k8s/scheduler-config-mtls.yaml`), with only the local differences applied
//! ([`SchedulerConfig::render`]).

use std::path::Path;

use super::base64::encode as base64;
use super::SCHEDULER_NAME;
use crate::repo_root;

/// The shipped configuration (path-token urlPrefix).
pub const SHIPPED: &str = "k8s/scheduler-config.yaml";
/// The shipped configuration for `EXTENDER_AUTH=mtls` (client certificate in tlsConfig).
pub const SHIPPED_MTLS: &str = "k8s/scheduler-config-mtls.yaml";
/// The shipped two-verb variant: [`SHIPPED`] plus `filterVerb: filter`.
pub const SHIPPED_FILTER: &str = "k8s/scheduler-config-filter.yaml";

/// Where the extender stanza of `k8s/scheduler-config.yaml` points in a test.
#[derive(Clone, Debug)]
pub enum Extender {
    /// No extender at all: kube-scheduler alone (the baseline).
    Off,
    /// The Worker at `url_prefix` (e.g. `https://127.0.0.1:1234/t/<token>/v1`), trusted through
    /// `ca_pem`.
    Worker {
        url_prefix: String,
        ca_pem: Vec<u8>,
        node_cache_capable: bool,
    },
}

#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    pub extender: Extender,
    /// Overrides `httpTimeout` (None: keep the shipped value).
    pub http_timeout: Option<String>,
    /// Overrides `clientConnection.qps` (burst = 2 x qps). kube-scheduler's default of 50 caps
    /// bindings at ~50 pods/s, which hides everything else in a throughput benchmark.
    pub client_qps: Option<u32>,
    /// Overrides the profile's `schedulerName` (None: the shipped `aco-scheduler`), e.g.
    /// `default-scheduler` with [`Extender::Off`]: the cluster's default scheduler, alone.
    pub scheduler_name: Option<String>,
    /// Points every verb the file names (`filterVerb` if it has one, `prioritizeVerb`) at this
    /// route instead, e.g. the Worker's `echo`: the protocol's floor with no verb work
    /// (kube-scheduler reads the echoed `NodeNames` as every node passing, and the echoed
    /// arguments as a prioritize reply it cannot decode, which an ignorable extender skips).
    pub verbs: Option<String>,
    /// Keys set on the profile (e.g. `pluginConfig`, `percentageOfNodesToScore`), replacing the
    /// shipped values of those keys, but for `plugins`, whose `enabled`/`disabled` lists are
    /// added to the shipped ones per extension point; empty: the shipped profile.
    pub profile: serde_yaml::Mapping,
    /// false: the shipped profile's `plugins` are dropped first (kube-scheduler's default
    /// plugins and weights, as a cluster without our configuration runs).
    pub shipped_plugins: bool,
    /// Keys set at the top of the configuration (e.g. `podInitialBackoffSeconds`).
    pub top_level: serde_yaml::Mapping,
    /// Overrides the extender's `weight` (None: the shipped one).
    pub extender_weight: Option<i64>,
    /// The shipped file rendered, relative to the repository ([`SHIPPED`] unless told).
    pub file: &'static str,
    /// `(cert.pem, key.pem)` kube-scheduler presents to the Worker (`tlsConfig.certData`/`keyData`).
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
}

impl SchedulerConfig {
    pub fn worker(url_prefix: String, ca_pem: Vec<u8>, node_cache_capable: bool) -> Self {
        SchedulerConfig {
            extender: Extender::Worker {
                url_prefix,
                ca_pem,
                node_cache_capable,
            },
            http_timeout: None,
            client_qps: None,
            scheduler_name: None,
            verbs: None,
            profile: serde_yaml::Mapping::new(),
            shipped_plugins: true,
            top_level: serde_yaml::Mapping::new(),
            extender_weight: None,
            file: SHIPPED,
            client_cert: None,
        }
    }
    pub fn off() -> Self {
        SchedulerConfig {
            extender: Extender::Off,
            http_timeout: None,
            client_qps: None,
            scheduler_name: None,
            verbs: None,
            profile: serde_yaml::Mapping::new(),
            shipped_plugins: true,
            top_level: serde_yaml::Mapping::new(),
            extender_weight: None,
            file: SHIPPED,
            client_cert: None,
        }
    }

    /// Kube-scheduler alone as the cluster's `default-scheduler` (no extender): what binds pods
    /// that name no scheduler, with kube-scheduler's default plugins (not the aco-scheduler
    /// profile's, which turns the spreading scores off).
    pub fn default_scheduler() -> Self {
        SchedulerConfig {
            scheduler_name: Some("default-scheduler".into()),
            shipped_plugins: false,
            ..SchedulerConfig::off()
        }
    }

    /// The shipped `k8s/scheduler-config.yaml` (or [`SchedulerConfig::file`]), unchanged but
    /// for: kubeconfig (a file instead of the in-cluster service account), and for the extender
    /// urlPrefix, nodeCacheCapable and a private CA (`enableHTTPS: true` +
    /// `tlsConfig.caData`, beside the shipped `tlsConfig`), a client certificate if given — or
    /// no extender for the baseline.
    pub fn render(&self, kubeconfig: &Path) -> String {
        let text = std::fs::read_to_string(repo_root().join(self.file)).unwrap();
        let mut doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        if self.file == SHIPPED || self.file == SHIPPED_FILTER {
            let shipped = doc["extenders"][0]["urlPrefix"]
                .as_str()
                .unwrap_or_default();
            assert!(
                is_path_token_prefix(shipped),
                "{SHIPPED}: urlPrefix {shipped:?} is not https://<host>[/c/<cluster>]/t/<token>/v1, \
                 the only path EXTENDER_AUTH=path-token serves"
            );
        }
        doc["clientConnection"]["kubeconfig"] = kubeconfig.to_string_lossy().into_owned().into();
        if let Some(qps) = self.client_qps {
            doc["clientConnection"]["qps"] = qps.into();
            doc["clientConnection"]["burst"] = (2 * qps).into();
        }
        let profiles = doc["profiles"].as_sequence().expect("profiles");
        assert_eq!(profiles[0]["schedulerName"].as_str(), Some(SCHEDULER_NAME));
        if let Some(name) = &self.scheduler_name {
            doc["profiles"][0]["schedulerName"] = name.clone().into();
        }
        let profile = doc["profiles"][0].as_mapping_mut().expect("profile");
        if !self.shipped_plugins {
            profile.remove("plugins");
        }
        for (key, value) in &self.profile {
            if key.as_str() == Some("plugins") {
                let plugins = profile
                    .entry(key.clone())
                    .or_insert_with(|| serde_yaml::Mapping::new().into());
                add_plugin_sets(plugins, value);
            } else {
                profile.insert(key.clone(), value.clone());
            }
        }
        for (key, value) in &self.top_level {
            doc[key] = value.clone();
        }
        match &self.extender {
            Extender::Off => {
                doc.as_mapping_mut().unwrap().remove("extenders");
            }
            Extender::Worker {
                url_prefix,
                ca_pem,
                node_cache_capable,
            } => {
                let ext = &mut doc["extenders"][0];
                assert_eq!(
                    ext["ignorable"].as_bool(),
                    Some(true),
                    "shipped extender must be ignorable"
                );
                ext["urlPrefix"] = url_prefix.clone().into();
                ext["nodeCacheCapable"] = (*node_cache_capable).into();
                ext["enableHTTPS"] = true.into();
                let mut tls = ext["tlsConfig"].as_mapping().cloned().unwrap_or_default();
                tls.insert("caData".into(), base64(ca_pem).into());
                if let Some((cert, key)) = &self.client_cert {
                    tls.insert("certData".into(), base64(cert).into());
                    tls.insert("keyData".into(), base64(key).into());
                }
                ext["tlsConfig"] = serde_yaml::Value::Mapping(tls);
                if let Some(t) = &self.http_timeout {
                    ext["httpTimeout"] = t.clone().into();
                }
                if let Some(weight) = self.extender_weight {
                    ext["weight"] = weight.into();
                }
                if let Some(route) = &self.verbs {
                    for verb in ["filterVerb", "prioritizeVerb"] {
                        if ext.get(verb).is_some() {
                            ext[verb] = route.clone().into();
                        }
                    }
                }
            }
        }
        serde_yaml::to_string(&doc).unwrap()
    }
}

/// Adds `more`'s plugin sets (`{<extension point>: {enabled: [...], disabled: [...]}}`) to
/// `plugins`, list by list.
fn add_plugin_sets(plugins: &mut serde_yaml::Value, more: &serde_yaml::Value) {
    let Some(more) = more.as_mapping() else {
        return;
    };
    for (point, sets) in more {
        let Some(sets) = sets.as_mapping() else {
            continue;
        };
        for (set, names) in sets {
            let target =
                &mut plugins[point.as_str().unwrap_or_default()][set.as_str().unwrap_or_default()];
            if !target.is_sequence() {
                *target = serde_yaml::Value::Sequence(Vec::new());
            }
            let list = target.as_sequence_mut().unwrap();
            list.extend(names.as_sequence().into_iter().flatten().cloned());
        }
    }
}

/// `https://<host>/t/<token>/v1` or `https://<host>/c/<cluster>/t/<token>/v1`: where the Worker
/// serves the extender verbs under `EXTENDER_AUTH=path-token`.
pub fn is_path_token_prefix(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let ok = |s: &str| !s.is_empty();
    match parts.as_slice() {
        [host, "t", token, "v1"] => ok(host) && ok(token),
        [host, "c", cluster, "t", token, "v1"] => ok(host) && ok(cluster) && ok(token),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{is_path_token_prefix, SHIPPED, SHIPPED_FILTER, SHIPPED_MTLS};
    use crate::repo_root;

    fn shipped(file: &str) -> serde_yaml::Value {
        serde_yaml::from_str(&std::fs::read_to_string(repo_root().join(file)).unwrap()).unwrap()
    }

    /// The default install asks only prioritize; the two-verb file is the same configuration
    /// plus `filterVerb: filter`, and the mTLS one differs only where the extender is reached
    /// (urlPrefix, tlsConfig): a change to the profile or the extender's settings must be made
    /// in all three.
    #[test]
    fn the_shipped_variants_differ_only_where_they_say() {
        let one = shipped(SHIPPED);
        let ext = &one["extenders"][0];
        assert!(
            ext.get("filterVerb").is_none(),
            "{SHIPPED} asks only prioritize"
        );
        assert_eq!(ext["prioritizeVerb"].as_str(), Some("prioritize"));

        let mut two = shipped(SHIPPED_FILTER);
        let filter = two["extenders"][0]
            .as_mapping_mut()
            .unwrap()
            .remove("filterVerb");
        assert_eq!(filter.as_ref().and_then(|f| f.as_str()), Some("filter"));
        assert_eq!(two, one, "{SHIPPED_FILTER} = {SHIPPED} + filterVerb");

        let mut mtls = shipped(SHIPPED_MTLS);
        let mut same = one.clone();
        for doc in [&mut mtls, &mut same] {
            let ext = doc["extenders"][0].as_mapping_mut().unwrap();
            ext.remove("urlPrefix");
            ext.remove("tlsConfig");
        }
        assert_eq!(
            mtls, same,
            "{SHIPPED_MTLS} = {SHIPPED} but urlPrefix and tlsConfig"
        );
    }

    #[test]
    fn path_token_prefixes_are_the_two_shapes_the_worker_serves() {
        for good in [
            "https://aco.example.workers.dev/t/abc/v1",
            "https://aco.example.com/c/prod/t/abc/v1",
        ] {
            assert!(is_path_token_prefix(good), "{good}");
        }
        for bad in [
            "https://aco.example.workers.dev/abc/v1",
            "https://aco.example.workers.dev/v1",
            "https://aco.example.workers.dev/t//v1",
            "https://aco.example.workers.dev/t/abc/v1/",
            "http://aco.example.workers.dev/t/abc/v1",
            "https://aco.example.com/c/prod/abc/v1",
        ] {
            assert!(!is_path_token_prefix(bad), "{bad}");
        }
    }
}
