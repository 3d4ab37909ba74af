//! Every tunable in one typed struct with the defaults of DESIGN.md §4, read from the Worker's
//! `[vars]` (string values) and validated once at start. Unknown keys are ignored so that
//! unrelated vars (e.g. `ADMIN_TOKEN`) can live beside them.

use std::str::FromStr;

/// Where a pod's tenant comes from. The label lets one namespace host several tenants; the
/// namespace is the safe choice when pods of one team must not be able to steer another
/// team's trail (any pod can set any label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenantSource {
    /// The tenant label when present, else the namespace (default).
    LabelThenNamespace,
    Namespace,
    Label,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    // --- node labels ---
    /// Node labels naming the GPU model, first present wins.
    pub gpu_type_labels: Vec<String>,
    /// Resource names that count as GPUs.
    pub gpu_resources: Vec<String>,
    pub cost_label: String,
    /// Node labels carrying network latency in µs, first present wins (fresh reported facts win over labels).
    pub latency_labels: Vec<String>,
    pub instance_type_label: String,
    /// `label=value` pairs that mark spot capacity (value compared case-insensitively).
    pub spot_labels: Vec<(String, String)>,
    // --- pod labels / annotations ---
    pub tenant_label: String,
    pub tenant_source: TenantSource,
    pub workload_label: String,
    pub latency_target_annotations: Vec<String>,
    pub gpu_models_annotation: String,
    // --- colony (MAX–MIN ant system) ---
    /// The trail's weight in `τ^α·η^β`. 0 by default: on the OpenB variants, with node
    /// performance varying as Sinha et al. measured, the trail earned < 10% over η alone and
    /// cost LS QoS (docs/simulation.md "v5"); the trail still learns, so raising it later
    /// starts from what the colony has seen.
    pub alpha: f64,
    pub beta: f64,
    pub rho: f64,
    pub deposit_q: f64,
    pub tau_initial: f64,
    pub tau_min: f64,
    pub tau_max: f64,
    /// ACS rule: probability of exploiting; 1.0 turns exploration off (default).
    pub q0: f64,
    // --- heuristic η ---
    /// Which factors of η count (`ETA_FACTORS`, default all); a factor left out is 1.0. For
    /// ablations and for clusters where a factor's facts mislead.
    pub eta_factors: EtaFactorSet,
    pub cost_reference: f64,
    /// Cost assumed for nodes without a cost label.
    pub default_cost_per_hour: f64,
    pub reliability_prior_successes: f64,
    pub reliability_prior_failures: f64,
    /// Share of an idle node's remaining capacity expected to stay unused while a pod that opens
    /// it keeps it running (`cost.rs`).
    pub open_node_idle_fraction: f64,
    /// What one SLA breach of a latency-critical pod costs, in $ (`SLA_VIOLATION_COST`): the
    /// price η's risk terms put on a breach or a reclamation of such a pod.
    pub sla_violation_cost: f64,
    /// How long a pod is expected to stay, in hours (`EXPECTED_STAY_HOURS`): the horizon over
    /// which a spot reclamation or a failure can hit it, and over which one-off risks are
    /// spread into $/h.
    pub expected_stay_hours: f64,
    /// Node label carrying the spot pool's interruption band (`spot_risk.rs`).
    pub spot_band_label: String,
    /// Monthly share of a spot pool reclaimed, in percent, for spot nodes without a band label.
    pub spot_default_interruption_percent: f64,
    /// Exposure (node-hours) the band prior is worth against what the cluster shows.
    pub spot_prior_node_hours: f64,
    /// Node labels whose values name a spot pool (joined with `/`).
    pub spot_pool_labels: Vec<String>,
    pub latency_critical_min_headroom: f64,
    pub spike_threshold: f64,
    pub spike_band: f64,
    pub ema_alpha: f64,
    pub eta_floor: f64,
    // --- state and limits ---
    pub facts_ttl_ms: u64,
    pub facts_cache_ms: u64,
    pub decision_ttl_ms: u64,
    pub decision_keep_top: usize,
    /// How long a confirmed placement is remembered, so that replayed reports and the pod's later
    /// outcome count once. Bounded: one row per pod placed in that window.
    pub confirmed_ttl_ms: u64,
    pub max_body_bytes: usize,
    /// How long an isolate keeps request counters before sending them to the Telemetry Durable
    /// Object in one batch (0: after every request). `/metrics` is exact for the isolate that
    /// serves it and at most this far behind for the others. At most 20 s: the flush runs in the
    /// request's `waitUntil`, which the platform keeps alive 30 s after the response.
    pub telemetry_flush_ms: u64,
    /// How old an isolate's copy of a tenant's colony (τ table and outcome history) may be for
    /// prioritize to score locally, without waiting for the colony Durable Object (0: always
    /// ask the colony). Every local decision is sent to the colony after the response, and its
    /// reply refreshes the copy when the colony changed.
    pub colony_snapshot_ms: u64,
    /// Keep a pod UID → tenant index in KV at every prioritize, so that the `bind` verb (whose
    /// arguments carry no labels) finds label-chosen tenants. Off by default: it costs a KV write
    /// per decision; without it `bind` uses the pod's namespace as its tenant.
    pub bind_index: bool,
    /// At most this many remembered decisions per tenant; beyond it the oldest is evicted (and
    /// counted). Bounds what an unauthenticated prioritize caller can make a colony store.
    pub max_decisions_per_tenant: u64,
    /// Which tenant names may have a colony (`TENANTS` list and/or `TENANT_PATTERN`); `None`: any
    /// valid name. Pods of another tenant are scored by η alone and their placements refused.
    pub tenant_policy: Option<TenantPolicy>,
    /// Which named clusters (`/c/<cluster>/…`) are served (`CLUSTERS` list and/or
    /// `CLUSTER_PATTERN`); `None`: any valid id. Another id is refused (404) before any object,
    /// row or telemetry label exists for it.
    pub cluster_policy: Option<TenantPolicy>,
}

/// An allowlist of tenant names and/or a regular expression a name must match entirely.
#[derive(Debug, Clone)]
pub struct TenantPolicy {
    pub names: Vec<String>,
    pub pattern: Option<(String, regex_lite::Regex)>,
}

impl PartialEq for TenantPolicy {
    fn eq(&self, other: &Self) -> bool {
        self.names == other.names
            && self.pattern.as_ref().map(|p| &p.0) == other.pattern.as_ref().map(|p| &p.0)
    }
}

impl TenantPolicy {
    /// A name is allowed if it is listed or matches the pattern.
    pub fn allows(&self, tenant: &str) -> bool {
        self.names.iter().any(|n| n == tenant)
            || self
                .pattern
                .as_ref()
                .is_some_and(|(_, re)| re.is_match(tenant))
    }
}

impl Default for Config {
    fn default() -> Self {
        let s = |v: &str| v.to_string();
        Self {
            gpu_type_labels: vec![
                s("aco/gpu-type"),
                s("nvidia.com/gpu.product"),
                s("alibabacloud.com/gpu-card-model"),
            ],
            // Alibaba's GPU-share resource (thousandths of a GPU) counts as a GPU request too.
            gpu_resources: vec![
                s("nvidia.com/gpu"),
                s("alibabacloud.com/gpu-count"),
                s("alibabacloud.com/gpu-milli"),
            ],
            cost_label: s("aco/cost-per-hour"),
            latency_labels: vec![s("aco/latency-us"), s("nodeLatencyUs")],
            instance_type_label: s("aco/instance-type"),
            spot_labels: vec![
                (s("karpenter.sh/capacity-type"), s("spot")),
                (s("eks.amazonaws.com/capacityType"), s("SPOT")),
                (s("cloud.google.com/gke-spot"), s("true")),
            ],
            tenant_label: s("scheduling.aco/tenant-id"),
            tenant_source: TenantSource::LabelThenNamespace,
            workload_label: s("aco/workload-type"),
            latency_target_annotations: vec![
                s("scheduling.aco/latency-target-us"),
                s("latency-target-us"),
            ],
            gpu_models_annotation: s("scheduling.aco/gpu-models"),
            alpha: 0.0,
            beta: 2.0,
            rho: 0.05,
            deposit_q: 1.0,
            tau_initial: 1.0,
            tau_min: 0.1,
            tau_max: 10.0,
            q0: 1.0,
            eta_factors: EtaFactorSet::ALL,
            cost_reference: 1.0,
            default_cost_per_hour: 1.0,
            reliability_prior_successes: 9.0,
            reliability_prior_failures: 1.0,
            open_node_idle_fraction: 0.5,
            sla_violation_cost: 50.0,
            expected_stay_hours: 1.0,
            spot_band_label: s("aco/spot-interruption-band"),
            spot_default_interruption_percent: 10.0,
            spot_prior_node_hours: 720.0,
            spot_pool_labels: vec![
                s("node.kubernetes.io/instance-type"),
                s("topology.kubernetes.io/zone"),
            ],
            latency_critical_min_headroom: 0.2,
            spike_threshold: 0.9,
            spike_band: 0.1,
            ema_alpha: 0.5,
            eta_floor: 0.001,
            facts_ttl_ms: 300_000,
            facts_cache_ms: 5_000,
            decision_ttl_ms: 3_600_000,
            decision_keep_top: 64,
            confirmed_ttl_ms: 21_600_000,
            // 16 MiB, about 2,200 real-shaped nodes in full-object mode. The Worker's wasm memory
            // peaks at 3–5× the body (docs/benchmarks.md "Worker memory": 64.6 MiB at 16.6 MB,
            // 185.6 MiB at the 37 MB of 5,000 nodes, beyond the isolate's 128 MB), so larger
            // clusters use names mode (nodeCacheCapable) rather than a larger limit.
            max_body_bytes: 16 << 20,
            telemetry_flush_ms: 5_000,
            colony_snapshot_ms: 30_000,
            bind_index: false,
            max_decisions_per_tenant: 10_000,
            tenant_policy: None,
            cluster_policy: None,
        }
    }
}

/// The terms of η's cost that count (`ETA_FACTORS`): a comma-separated subset of
/// `reliability` (failure and reclamation risk), `cost` (the pod's share of the bill),
/// `headroom` (SLA breach risk from load), `spike` (its spike part), `fragmentation`
/// (stranded GPUs), `performance` (learned slowdown), or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtaFactorSet {
    pub reliability: bool,
    pub cost: bool,
    pub headroom: bool,
    pub spike: bool,
    pub fragmentation: bool,
    pub performance: bool,
}

impl EtaFactorSet {
    pub const ALL: EtaFactorSet = EtaFactorSet {
        reliability: true,
        cost: true,
        headroom: true,
        spike: true,
        fragmentation: true,
        performance: true,
    };
    pub const NAMES: [&'static str; 6] = [
        "reliability",
        "cost",
        "headroom",
        "spike",
        "fragmentation",
        "performance",
    ];

    pub fn parse(v: &str) -> Result<Self, String> {
        let mut set = EtaFactorSet {
            reliability: false,
            cost: false,
            headroom: false,
            spike: false,
            fragmentation: false,
            performance: false,
        };
        for name in list(v) {
            match name.as_str() {
                "all" => set = Self::ALL,
                "reliability" => set.reliability = true,
                "cost" => set.cost = true,
                "headroom" => set.headroom = true,
                "spike" => set.spike = true,
                "fragmentation" => set.fragmentation = true,
                "performance" => set.performance = true,
                other => {
                    return Err(format!(
                        "unknown factor {other:?}; expected a comma-separated subset of {} or all",
                        Self::NAMES.join(", ")
                    ))
                }
            }
        }
        Ok(set)
    }

    /// All factors but `name` (for ablations); `None` for an unknown name.
    pub fn without(name: &str) -> Option<Self> {
        let mut set = Self::ALL;
        match name {
            "reliability" => set.reliability = false,
            "cost" => set.cost = false,
            "headroom" => set.headroom = false,
            "spike" => set.spike = false,
            "fragmentation" => set.fragmentation = false,
            "performance" => set.performance = false,
            _ => return None,
        }
        Some(set)
    }
}

/// A var that does not parse or is out of range; names the var.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config var {key}={value:?}: {reason}")]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

/// Vars of earlier versions, refused with what replaced them (silently ignoring one would
/// change scoring without a word).
const REPLACED_VARS: [(&str, &str); 3] = [
    (
        "SPOT_PENALTY",
        "spot capacity is priced by its pool's interruption rate (SPOT_INTERRUPTION_BAND_LABEL, \
         SPOT_DEFAULT_INTERRUPTION_PERCENT) × SLA_VIOLATION_COST",
    ),
    (
        "SPIKE_WEIGHT",
        "a predicted spike is a breach probability priced at SLA_VIOLATION_COST",
    ),
    (
        "LATENCY_CRITICAL_HEADROOM_PENALTY",
        "low headroom is a breach probability priced at SLA_VIOLATION_COST",
    ),
];

/// Below a minute, a replayed placement could outlive its confirmation and deposit twice.
pub const MIN_CONFIRMED_TTL_MS: u64 = 60_000;
/// Counters wait at most this long in an isolate (the platform ends `waitUntil` work 30 s after
/// the response).
pub const MAX_TELEMETRY_FLUSH_MS: u64 = 20_000;
/// An isolate scores from a colony copy at most this old.
pub const MAX_COLONY_SNAPSHOT_MS: u64 = 600_000;
/// 30 days: the confirmed table holds one row per pod placed within the TTL.
pub const MAX_CONFIRMED_TTL_MS: u64 = 30 * 24 * 3_600_000;

/// The largest `MAX_DECISIONS_PER_TENANT` accepted.
pub const MAX_DECISIONS_LIMIT: u64 = 1_000_000;

/// An allowlist var and a pattern var (`TENANTS`, `TENANT_PATTERN`) read into a policy; `None`
/// when neither is set. Every listed name must itself be valid (`validate`).
fn name_policy(
    lookup: &impl Fn(&str) -> Option<String>,
    (list_var, pattern_var): (&str, &str),
    validate: fn(&str) -> Result<(), String>,
) -> Result<Option<TenantPolicy>, ConfigError> {
    let err = |key: &str, value: &str, reason: &str| ConfigError {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    };
    let names = lookup(list_var).map(|v| list(&v)).unwrap_or_default();
    for n in &names {
        validate(n).map_err(|reason| err(list_var, n, &reason))?;
    }
    let pattern = match lookup(pattern_var)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
    {
        Some(p) => {
            if p.len() > 1024 {
                return Err(err(pattern_var, &p, "longer than 1024 characters"));
            }
            let re = regex_lite::Regex::new(&format!("^(?:{p})$"))
                .map_err(|e| err(pattern_var, &p, &e.to_string()))?;
            Some((p, re))
        }
        None => None,
    };
    Ok((!names.is_empty() || pattern.is_some()).then_some(TenantPolicy { names, pattern }))
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl Config {
    /// Builds the config from `[vars]`: `lookup("RHO")` returns the var's text if set.
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut c = Config::default();
        let err = |key: &str, value: &str, reason: &str| ConfigError {
            key: key.into(),
            value: value.into(),
            reason: reason.into(),
        };
        macro_rules! num {
            ($key:literal, $field:ident) => {
                if let Some(v) = lookup($key) {
                    c.$field =
                        FromStr::from_str(v.trim()).map_err(|_| err($key, &v, "not a number"))?;
                }
            };
        }
        macro_rules! text_list {
            ($key:literal, $field:ident) => {
                if let Some(v) = lookup($key) {
                    c.$field = list(&v);
                }
            };
        }
        macro_rules! text {
            ($key:literal, $field:ident) => {
                if let Some(v) = lookup($key) {
                    c.$field = v.trim().to_string();
                }
            };
        }
        text_list!("GPU_TYPE_LABELS", gpu_type_labels);
        text_list!("GPU_RESOURCES", gpu_resources);
        text!("COST_LABEL", cost_label);
        text_list!("LATENCY_LABELS", latency_labels);
        text!("INSTANCE_TYPE_LABEL", instance_type_label);
        if let Some(v) = lookup("SPOT_LABELS") {
            c.spot_labels = list(&v)
                .into_iter()
                .map(|pair| match pair.split_once('=') {
                    Some((k, val)) if !k.is_empty() => Ok((k.to_string(), val.to_string())),
                    _ => Err(err(
                        "SPOT_LABELS",
                        &v,
                        "expected comma-separated label=value pairs",
                    )),
                })
                .collect::<Result<_, _>>()?;
        }
        text!("TENANT_LABEL", tenant_label);
        if let Some(v) = lookup("TENANT_SOURCE") {
            c.tenant_source = match v.trim() {
                "label-then-namespace" => TenantSource::LabelThenNamespace,
                "namespace" => TenantSource::Namespace,
                "label" => TenantSource::Label,
                _ => {
                    return Err(err(
                        "TENANT_SOURCE",
                        &v,
                        "expected label-then-namespace, namespace or label",
                    ))
                }
            };
        }
        text!("WORKLOAD_LABEL", workload_label);
        text_list!("LATENCY_TARGET_ANNOTATIONS", latency_target_annotations);
        text!("GPU_MODELS_ANNOTATION", gpu_models_annotation);
        num!("ALPHA", alpha);
        num!("BETA", beta);
        num!("RHO", rho);
        num!("DEPOSIT_Q", deposit_q);
        num!("TAU_INITIAL", tau_initial);
        num!("TAU_MIN", tau_min);
        num!("TAU_MAX", tau_max);
        num!("Q0", q0);
        num!("COST_REFERENCE", cost_reference);
        if let Some(v) = lookup("ETA_FACTORS") {
            c.eta_factors =
                EtaFactorSet::parse(&v).map_err(|reason| err("ETA_FACTORS", &v, &reason))?;
        }
        num!("DEFAULT_COST_PER_HOUR", default_cost_per_hour);
        num!("RELIABILITY_PRIOR_SUCCESSES", reliability_prior_successes);
        num!("RELIABILITY_PRIOR_FAILURES", reliability_prior_failures);
        for (old, now) in REPLACED_VARS {
            if let Some(v) = lookup(old) {
                return Err(err(old, &v, &format!("no longer read: {now}")));
            }
        }
        num!("OPEN_NODE_IDLE_FRACTION", open_node_idle_fraction);
        num!("SLA_VIOLATION_COST", sla_violation_cost);
        num!("EXPECTED_STAY_HOURS", expected_stay_hours);
        text!("SPOT_INTERRUPTION_BAND_LABEL", spot_band_label);
        num!(
            "SPOT_DEFAULT_INTERRUPTION_PERCENT",
            spot_default_interruption_percent
        );
        num!("SPOT_PRIOR_NODE_HOURS", spot_prior_node_hours);
        text_list!("SPOT_POOL_LABELS", spot_pool_labels);
        num!(
            "LATENCY_CRITICAL_MIN_HEADROOM",
            latency_critical_min_headroom
        );
        num!("SPIKE_THRESHOLD", spike_threshold);
        num!("SPIKE_BAND", spike_band);
        num!("EMA_ALPHA", ema_alpha);
        num!("ETA_FLOOR", eta_floor);
        num!("FACTS_TTL_MS", facts_ttl_ms);
        num!("FACTS_CACHE_MS", facts_cache_ms);
        num!("DECISION_TTL_MS", decision_ttl_ms);
        num!("DECISION_KEEP_TOP", decision_keep_top);
        num!("CONFIRMED_TTL_MS", confirmed_ttl_ms);
        num!("MAX_BODY_BYTES", max_body_bytes);
        num!("TELEMETRY_FLUSH_MS", telemetry_flush_ms);
        num!("COLONY_SNAPSHOT_MS", colony_snapshot_ms);
        if let Some(v) = lookup("BIND_INDEX") {
            c.bind_index = match v.trim() {
                "true" => true,
                "false" => false,
                _ => return Err(err("BIND_INDEX", &v, "expected true or false")),
            };
        }
        num!("MAX_DECISIONS_PER_TENANT", max_decisions_per_tenant);
        c.tenant_policy = name_policy(
            &lookup,
            ("TENANTS", "TENANT_PATTERN"),
            crate::cluster::validate_tenant,
        )?;
        c.cluster_policy = name_policy(
            &lookup,
            ("CLUSTERS", "CLUSTER_PATTERN"),
            crate::cluster::validate_cluster,
        )?;
        c.validate()?;
        Ok(c)
    }

    /// Whether `/c/<cluster>/…` is served: the default cluster always, a named one if
    /// `CLUSTERS`/`CLUSTER_PATTERN` allow it (any valid id when neither is set).
    pub fn cluster_allowed(&self, cluster: &str) -> bool {
        cluster == crate::cluster::DEFAULT_CLUSTER
            || self
                .cluster_policy
                .as_ref()
                .is_none_or(|p| p.allows(cluster))
    }

    /// Whether `tenant` may have a colony (see [`TenantPolicy`]).
    pub fn tenant_allowed(&self, tenant: &str) -> bool {
        self.tenant_policy.as_ref().is_none_or(|p| p.allows(tenant))
    }

    /// Checks ranges and relations (`τ_min ≤ τ_initial ≤ τ_max`, probabilities in [0, 1], …).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, value: f64, reason: &str| {
            Err(ConfigError {
                key: key.into(),
                value: value.to_string(),
                reason: reason.into(),
            })
        };
        let unit = [
            ("RHO", self.rho),
            ("Q0", self.q0),
            ("OPEN_NODE_IDLE_FRACTION", self.open_node_idle_fraction),
            (
                "LATENCY_CRITICAL_MIN_HEADROOM",
                self.latency_critical_min_headroom,
            ),
            ("SPIKE_THRESHOLD", self.spike_threshold),
        ];
        for (key, v) in unit {
            if !(0.0..=1.0).contains(&v) {
                return bad(key, v, "must be within 0..=1");
            }
        }
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return bad(
                "ALPHA",
                self.alpha,
                "must be a finite number ≥ 0 (0 = the trail is ignored, η alone)",
            );
        }
        let positive = [
            ("BETA", self.beta),
            ("DEPOSIT_Q", self.deposit_q),
            ("TAU_MIN", self.tau_min),
            ("COST_REFERENCE", self.cost_reference),
            (
                "RELIABILITY_PRIOR_SUCCESSES",
                self.reliability_prior_successes,
            ),
            (
                "RELIABILITY_PRIOR_FAILURES",
                self.reliability_prior_failures,
            ),
            ("SPIKE_BAND", self.spike_band),
            ("EXPECTED_STAY_HOURS", self.expected_stay_hours),
            ("SPOT_PRIOR_NODE_HOURS", self.spot_prior_node_hours),
            ("ETA_FLOOR", self.eta_floor),
        ];
        for (key, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return bad(key, v, "must be a positive finite number");
            }
        }
        if !(self.ema_alpha > 0.0 && self.ema_alpha <= 1.0) {
            return bad("EMA_ALPHA", self.ema_alpha, "must be within (0, 1]");
        }
        if !(self.rho > 0.0 && self.rho < 1.0) {
            return bad("RHO", self.rho, "must be within (0, 1)");
        }
        if !(self.sla_violation_cost.is_finite() && self.sla_violation_cost >= 0.0) {
            return bad(
                "SLA_VIOLATION_COST",
                self.sla_violation_cost,
                "must be a finite number of $ ≥ 0",
            );
        }
        if !(0.0..=100.0).contains(&self.spot_default_interruption_percent) {
            return bad(
                "SPOT_DEFAULT_INTERRUPTION_PERCENT",
                self.spot_default_interruption_percent,
                "must be a percentage within 0..=100",
            );
        }
        if !(self.default_cost_per_hour.is_finite() && self.default_cost_per_hour >= 0.0) {
            return bad(
                "DEFAULT_COST_PER_HOUR",
                self.default_cost_per_hour,
                "must be ≥ 0",
            );
        }
        if !(self.tau_min <= self.tau_initial
            && self.tau_initial <= self.tau_max
            && self.tau_max.is_finite())
        {
            return bad(
                "TAU_INITIAL",
                self.tau_initial,
                "need TAU_MIN ≤ TAU_INITIAL ≤ TAU_MAX (finite)",
            );
        }
        if self.tau_max / self.tau_min > 1e6 {
            return bad(
                "TAU_MAX",
                self.tau_max,
                "TAU_MAX/TAU_MIN above 1e6 lets one node take every pod",
            );
        }
        if self.eta_floor > 1.0 {
            return bad("ETA_FLOOR", self.eta_floor, "must be ≤ 1");
        }
        if self.decision_keep_top == 0 {
            return bad("DECISION_KEEP_TOP", 0.0, "must be ≥ 1");
        }
        if !(MIN_CONFIRMED_TTL_MS..=MAX_CONFIRMED_TTL_MS).contains(&self.confirmed_ttl_ms) {
            return bad(
                "CONFIRMED_TTL_MS",
                self.confirmed_ttl_ms as f64,
                "must be within 60000..=2592000000 (1 minute to 30 days)",
            );
        }
        if !(MIN_CONFIRMED_TTL_MS..=MAX_CONFIRMED_TTL_MS).contains(&self.decision_ttl_ms) {
            return bad(
                "DECISION_TTL_MS",
                self.decision_ttl_ms as f64,
                "must be within 60000..=2592000000 (1 minute to 30 days)",
            );
        }
        if !(1..=MAX_DECISIONS_LIMIT).contains(&self.max_decisions_per_tenant) {
            return bad(
                "MAX_DECISIONS_PER_TENANT",
                self.max_decisions_per_tenant as f64,
                "must be within 1..=1000000",
            );
        }
        if self.telemetry_flush_ms > MAX_TELEMETRY_FLUSH_MS {
            return bad(
                "TELEMETRY_FLUSH_MS",
                self.telemetry_flush_ms as f64,
                "must be within 0..=20000 (the flush runs in waitUntil)",
            );
        }
        if self.colony_snapshot_ms > MAX_COLONY_SNAPSHOT_MS {
            return bad(
                "COLONY_SNAPSHOT_MS",
                self.colony_snapshot_ms as f64,
                "must be within 0..=600000 (10 minutes)",
            );
        }
        if self.max_body_bytes < 1024 {
            return bad(
                "MAX_BODY_BYTES",
                self.max_body_bytes as f64,
                "must be ≥ 1024",
            );
        }
        if self.gpu_resources.is_empty() {
            return Err(ConfigError {
                key: "GPU_RESOURCES".into(),
                value: String::new(),
                reason: "must name at least one resource".into(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn tenant_policy_allows_listed_names_and_whole_pattern_matches() {
        assert!(from(&[]).unwrap().tenant_allowed("anything"));
        let c = from(&[("TENANTS", "ml, web"), ("TENANT_PATTERN", "team-[a-z]+")]).unwrap();
        for (t, ok) in [
            ("ml", true),
            ("web", true),
            ("team-a", true),
            ("team-a1", false),
            ("xteam-a", false),
            ("other", false),
        ] {
            assert_eq!(c.tenant_allowed(t), ok, "{t}");
        }
        assert!(!from(&[("TENANTS", "ml")]).unwrap().tenant_allowed("web"));
    }

    #[test]
    fn cluster_policy_allows_listed_ids_and_pattern_matches_and_always_the_default() {
        assert!(from(&[]).unwrap().cluster_allowed("anything"));
        let c = from(&[("CLUSTERS", "prod"), ("CLUSTER_PATTERN", "eu-[0-9]+")]).unwrap();
        for (id, ok) in [
            ("prod", true),
            ("eu-1", true),
            ("default", true),
            ("x1", false),
            ("eu-1a", false),
        ] {
            assert_eq!(c.cluster_allowed(id), ok, "{id}");
        }
        assert_eq!(from(&[("CLUSTERS", "Prod")]).unwrap_err().key, "CLUSTERS");
        assert_eq!(
            from(&[("CLUSTER_PATTERN", "(")]).unwrap_err().key,
            "CLUSTER_PATTERN"
        );
    }

    fn from(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn eta_factors_parse_a_subset_and_name_the_var_on_a_typo_and_alpha_may_be_zero() {
        let c = from(&[("ETA_FACTORS", "cost, headroom"), ("ALPHA", "0")]).unwrap();
        assert_eq!(
            c.eta_factors,
            EtaFactorSet {
                reliability: false,
                cost: true,
                headroom: true,
                spike: false,
                fragmentation: false,
                performance: false,
            }
        );
        assert_eq!(c.alpha, 0.0);
        assert_eq!(
            from(&[("ETA_FACTORS", "all")]).unwrap().eta_factors,
            EtaFactorSet::ALL
        );
        assert_eq!(Config::default().eta_factors, EtaFactorSet::ALL);
        let e = from(&[("ETA_FACTORS", "cost,prize")]).unwrap_err();
        assert_eq!(e.key, "ETA_FACTORS");
        assert!(e.reason.contains("\"prize\""), "{e}");
        assert_eq!(from(&[("ALPHA", "-1")]).unwrap_err().key, "ALPHA");
    }

    #[test]
    fn telemetry_flush_and_colony_snapshot_ages_are_bounded() {
        assert_eq!(
            from(&[("TELEMETRY_FLUSH_MS", "0"), ("COLONY_SNAPSHOT_MS", "0")])
                .unwrap()
                .colony_snapshot_ms,
            0
        );
        assert_eq!(
            from(&[("TELEMETRY_FLUSH_MS", "20001")]).unwrap_err().key,
            "TELEMETRY_FLUSH_MS"
        );
        assert_eq!(
            from(&[("COLONY_SNAPSHOT_MS", "600001")]).unwrap_err().key,
            "COLONY_SNAPSHOT_MS"
        );
        assert_eq!(
            from(&[("COLONY_SNAPSHOT_MS", "-1")]).unwrap_err().key,
            "COLONY_SNAPSHOT_MS"
        );
    }

    #[test]
    fn defaults_are_valid_and_match_the_design() {
        let c = from(&[]).unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(
            (c.alpha, c.beta, c.rho, c.ema_alpha, c.q0),
            (0.0, 2.0, 0.05, 0.5, 1.0)
        );
    }

    #[test]
    fn overrides_parse_and_lists_split_on_commas() {
        let c = from(&[
            ("RHO", "0.1"),
            ("GPU_RESOURCES", "nvidia.com/gpu, amd.com/gpu"),
            ("TENANT_SOURCE", "namespace"),
            ("SPOT_LABELS", "a=b,c=d"),
        ])
        .unwrap();
        assert_eq!(c.rho, 0.1);
        assert_eq!(c.gpu_resources, vec!["nvidia.com/gpu", "amd.com/gpu"]);
        assert_eq!(c.tenant_source, TenantSource::Namespace);
        assert_eq!(
            c.spot_labels,
            vec![("a".into(), "b".into()), ("c".into(), "d".into())]
        );
        assert_eq!(Config::default().confirmed_ttl_ms, 21_600_000);
        assert_eq!(
            from(&[("CONFIRMED_TTL_MS", "2592000000")])
                .unwrap()
                .confirmed_ttl_ms,
            MAX_CONFIRMED_TTL_MS
        );
    }

    #[test]
    fn bad_values_name_the_var() {
        for (pairs, key) in [
            (vec![("RHO", "fast")], "RHO"),
            (vec![("RHO", "1.5")], "RHO"),
            (vec![("TAU_MIN", "5"), ("TAU_INITIAL", "1")], "TAU_INITIAL"),
            (vec![("TENANT_SOURCE", "pod")], "TENANT_SOURCE"),
            (vec![("SPOT_LABELS", "novalue")], "SPOT_LABELS"),
            (vec![("FACTS_TTL_MS", "-1")], "FACTS_TTL_MS"),
            (vec![("ALPHA", "NaN")], "ALPHA"),
            (vec![("BIND_INDEX", "yes")], "BIND_INDEX"),
            (vec![("CONFIRMED_TTL_MS", "0")], "CONFIRMED_TTL_MS"),
            (vec![("CONFIRMED_TTL_MS", "2592000001")], "CONFIRMED_TTL_MS"),
            (vec![("CONFIRMED_TTL_MS", "six hours")], "CONFIRMED_TTL_MS"),
            (
                vec![("DECISION_TTL_MS", "18446744073709551615")],
                "DECISION_TTL_MS",
            ),
            (vec![("DECISION_TTL_MS", "10")], "DECISION_TTL_MS"),
            (
                vec![("MAX_DECISIONS_PER_TENANT", "0")],
                "MAX_DECISIONS_PER_TENANT",
            ),
            (vec![("TENANTS", "ok,../bad")], "TENANTS"),
            (vec![("TENANT_PATTERN", "team-(")], "TENANT_PATTERN"),
        ] {
            let e = from(&pairs).unwrap_err();
            assert_eq!(e.key, key, "{pairs:?} → {e}");
        }
    }
}
