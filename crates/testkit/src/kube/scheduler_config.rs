//! The kube-scheduler configuration of a test: `k8s/scheduler-config.yaml`, the file the shipped
//! ConfigMap is generated from, with only the local differences applied
//! ([`SchedulerConfig::render`]).

use std::path::Path;

use super::SCHEDULER_NAME;
use crate::repo_root;

/// Where the extender stanza of `k8s/scheduler-config.yaml` points in a test.
#[derive(Clone, Debug)]
pub enum Extender {
    /// No extender at all: kube-scheduler alone (the baseline).
    Off,
    /// The Worker at `url_prefix` (e.g. `https://127.0.0.1:1234/v1`), trusted through `ca_pem`.
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
    /// Overrides the extender's `filterVerb` and `prioritizeVerb` (None: the shipped ones), e.g.
    /// the Worker's `echo` for both: the protocol's floor with no verb work (kube-scheduler reads
    /// the echoed `NodeNames` as every node passing, and the echoed arguments as a prioritize
    /// reply it cannot decode, which an ignorable extender skips).
    pub verbs: Option<(String, String)>,
    /// Keys set on the profile (e.g. `plugins`, `pluginConfig`, `percentageOfNodesToScore`),
    /// replacing the shipped values of those keys; empty: the shipped profile.
    pub profile: serde_yaml::Mapping,
    /// Overrides the extender's `weight` (None: the shipped one).
    pub extender_weight: Option<i64>,
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
            extender_weight: None,
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
            extender_weight: None,
        }
    }

    /// Kube-scheduler alone as the cluster's `default-scheduler` (no extender): what binds pods
    /// that name no scheduler.
    pub fn default_scheduler() -> Self {
        SchedulerConfig {
            scheduler_name: Some("default-scheduler".into()),
            ..SchedulerConfig::off()
        }
    }

    /// The shipped `k8s/scheduler-config.yaml`, unchanged but for: kubeconfig (a file instead of
    /// the in-cluster service account), and for the extender urlPrefix, nodeCacheCapable and a
    /// private CA (`enableHTTPS: true` + `tlsConfig.caData`) — or no extender for the baseline.
    pub fn render(&self, kubeconfig: &Path) -> String {
        let text = std::fs::read_to_string(repo_root().join("k8s/scheduler-config.yaml")).unwrap();
        let mut doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
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
        for (key, value) in &self.profile {
            doc["profiles"][0][key] = value.clone();
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
                let mut tls = serde_yaml::Mapping::new();
                tls.insert("caData".into(), base64(ca_pem).into());
                ext["tlsConfig"] = serde_yaml::Value::Mapping(tls);
                if let Some(t) = &self.http_timeout {
                    ext["httpTimeout"] = t.clone().into();
                }
                if let Some(weight) = self.extender_weight {
                    ext["weight"] = weight.into();
                }
                if let Some((filter, prioritize)) = &self.verbs {
                    ext["filterVerb"] = filter.clone().into();
                    ext["prioritizeVerb"] = prioritize.clone().into();
                }
            }
        }
        serde_yaml::to_string(&doc).unwrap()
    }
}

pub(crate) fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
