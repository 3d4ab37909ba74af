//! Every tunable in one typed struct, read from the Worker's `[vars]` (string values) and
//! validated once at start. Each var is declared once, in the `config_keys!` table below: its
//! field, key, reader, default and checks (docs/configuration.md is generated from it). Unknown
//! keys are ignored so that unrelated vars (e.g. `ADMIN_TOKEN`) can live beside them.

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

/// Declares every config var once, in groups by concern: its field (with its doc), its `[vars]`
/// key, how its text is read, its default and the checks of its value. Yields one struct per
/// group (its rows' fields, in order), [`Config`] holding one of each (then the `@derived` fields
/// that no single key sets), their `Default`s, and the per-key halves of [`Config::from_vars`]
/// (`read_keys`) and [`Config::validate`] (`check_keys`), all in the order of the table: vars are
/// read, values checked and docs/configuration.md's rows written in that order.
///
/// A group: `/// doc` then `group field: Type { rows }`. A row: `field: Type = "KEY", reader,
/// default, check(ok, "reason"), …;` — `reader` is a function `(key, text) -> Result<Type,
/// ConfigError>` below, `ok` a predicate on the value.
macro_rules! config_keys {
    (
        $(
            $(#[doc = $gdoc:literal])*
            group $group:ident : $Group:ident {
                $(
                    $(#[doc = $doc:literal])*
                    $field:ident : $ty:ty = $key:literal, $read:ident, $default:expr
                    $(, check($ok:expr, $reason:expr))* ;
                )*
            }
        )*
        @derived {
            $(
                $(#[doc = $xdoc:literal])*
                $xfield:ident : $xty:ty = $xdefault:expr, from($($xkey:literal),+), $xread:ident ;
            )*
        }
    ) => {
        $(
            $(#[doc = $gdoc])*
            #[derive(Debug, Clone, PartialEq)]
            pub struct $Group {
                $( $(#[doc = $doc])* pub $field: $ty, )*
            }

            impl Default for $Group {
                fn default() -> Self {
                    Self { $( $field: $default, )* }
                }
            }
        )*

        /// Every tunable, one struct per concern: a function is passed the group it reads.
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct Config {
            $( $(#[doc = $gdoc])* pub $group: $Group, )*
            $( $(#[doc = $xdoc])* pub $xfield: $xty, )*
        }

        impl Config {
            /// Every key of the table that `lookup` has, read into `self`; then the derived
            /// fields, each from its keys.
            fn read_keys(
                &mut self,
                lookup: &impl Fn(&str) -> Option<String>,
            ) -> Result<(), ConfigError> {
                $( $(
                    if let Some(v) = lookup($key) {
                        self.$group.$field = $read($key, &v)?;
                    }
                )* )*
                $( self.$xfield = $xread(lookup, &[$($xkey),+])?; )*
                Ok(())
            }

            /// Every check of the table, on the values in `self`.
            fn check_keys(&self) -> Result<(), ConfigError> {
                $( $( $(
                    if !holds(self.$group.$field, $ok) {
                        return Err(ConfigError {
                            key: $key.into(),
                            value: self.$group.$field.shown(),
                            reason: $reason.into(),
                        });
                    }
                )* )* )*
                Ok(())
            }

            /// Every row's key and this config's value, written as its var would be.
            pub fn var_values(&self) -> Vec<(&'static str, String)> {
                use crate::config_doc::Documented;
                vec![ $( $( ($key, self.$group.$field.documented()), )* )* ]
            }

            /// Every row of the table (then the derived ones) as docs/configuration.md shows
            /// it: keys, default, how the text is read, checks and doc comment.
            pub fn documented_vars() -> Vec<crate::config_doc::VarDoc> {
                use crate::config_doc::{reader_format, Documented, VarDoc};
                let d = Config::default();
                vec![
                    $( $( VarDoc {
                        keys: &[$key],
                        default: d.$group.$field.documented(),
                        format: reader_format(stringify!($read)),
                        checks: &[$($reason),*],
                        doc: &[$($doc),*],
                    }, )* )*
                    $( VarDoc {
                        keys: &[$($xkey),+],
                        default: d.$xfield.documented(),
                        format: reader_format(stringify!($xread)),
                        checks: &[],
                        doc: &[$($xdoc),*],
                    }, )*
                ]
            }
        }
    };
}

config_keys! {
    /// Which node labels and resource names carry what the extender reads of a node: its GPU
    /// model and count, price, latency and spot capacity (the reporter reads them the same way).
    group node_keys: NodeKeys {
        /// Node labels naming the GPU model, first present wins.
        gpu_type_labels: Vec<String> = "GPU_TYPE_LABELS", text_list,
            strings(&["aco/gpu-type", "nvidia.com/gpu.product", "alibabacloud.com/gpu-card-model"]);
        /// Resource names that count as GPUs. Alibaba's GPU-share resource (thousandths of a GPU)
        /// counts as a GPU request too.
        gpu_resources: Vec<String> = "GPU_RESOURCES", text_list,
            strings(&["nvidia.com/gpu", "alibabacloud.com/gpu-count", "alibabacloud.com/gpu-milli"]);
        /// Node label carrying the node's price in $/h; unlabelled nodes are priced at
        /// `DEFAULT_COST_PER_HOUR`.
        cost_label: String = "COST_LABEL", text, "aco/cost-per-hour".into();
        /// Node labels carrying network latency in µs, first present wins (fresh reported facts win
        /// over labels).
        latency_labels: Vec<String> = "LATENCY_LABELS", text_list,
            strings(&["aco/latency-us", "nodeLatencyUs"]);
        /// Node label whose value `spot` marks spot capacity (beside `SPOT_LABELS`).
        instance_type_label: String = "INSTANCE_TYPE_LABEL", text, "aco/instance-type".into();
        /// `label=value` pairs that mark spot capacity (value compared case-insensitively).
        spot_labels: Vec<(String, String)> = "SPOT_LABELS", label_pairs, vec![
            ("karpenter.sh/capacity-type".into(), "spot".into()),
            ("eks.amazonaws.com/capacityType".into(), "SPOT".into()),
            ("cloud.google.com/gke-spot".into(), "true".into()),
        ];
    }
    /// Which pod labels and annotations name its tenant, workload class, latency target and GPU
    /// models (the reporter reads them the same way).
    group pod_keys: PodKeys {
        /// Pod label naming the pod's tenant (see `TENANT_SOURCE`).
        tenant_label: String = "TENANT_LABEL", text, "scheduling.aco/tenant-id".into();
        /// Where a pod's tenant comes from: the tenant label, else the namespace
        /// (`label-then-namespace`); `namespace` when pods of one team must not steer another team's
        /// trail (any pod can set any label); `label`: the label only.
        tenant_source: TenantSource = "TENANT_SOURCE", tenant_source_rule,
            TenantSource::LabelThenNamespace;
        /// Pod label naming the workload class: `latency-critical`, `stream-processing` or `batch`.
        workload_label: String = "WORKLOAD_LABEL", text, "aco/workload-type".into();
        /// Pod annotations carrying the pod's latency target in µs (the most network latency its node
        /// may have), first present wins. An unusable value rejects every node with the message, so the
        /// pod stays Pending and its events say why.
        latency_target_annotations: Vec<String> = "LATENCY_TARGET_ANNOTATIONS", text_list,
            strings(&["scheduling.aco/latency-target-us", "latency-target-us"]);
        /// Pod annotation listing the GPU models the pod accepts, `|`-separated (e.g.
        /// `V100M16|V100M32`).
        gpu_models_annotation: String = "GPU_MODELS_ANNOTATION", text,
            "scheduling.aco/gpu-models".into();
    }
    /// The colony's weights in `τ^α·η^β` and its exploration rule.
    group colony: ColonyWeights {
        /// The trail's weight in `τ^α·η^β`, where τ = `exp(−learned $/h / COST_REFERENCE)` is what
        /// the tenant's outcomes on the node taught (`colony/pheromone.rs`) and η the same of what
        /// the facts say. The default is `BETA`'s, 2: at `α = β` a learned dollar weighs what a seen
        /// one does, and that keeps what the learning earns. Where 3% of the nodes fail pods for
        /// reasons no fact shows, 53–90% fewer pods were failed by them than under η alone (`ALPHA`
        /// 0), at −0.2% to +1.7% of its cost; where nothing is hidden nothing is learned against any
        /// node and the colony places exactly as η alone; α of 1 or 4 changes these by a pod or a
        /// few (docs/simulation.md "The trail: what the colony learns"). The one place this reason
        /// is given; the README and the docs point here.
        alpha: f64 = "ALPHA", number, 2.0,
            check(
                finite_at_least_zero,
                "must be a finite number ≥ 0 (0 = the trail is ignored, η alone)"
            );
        /// The exponent of η in `τ^α·η^β`.
        beta: f64 = "BETA", number, 2.0, check(positive, "must be a positive finite number");
        /// ACS rule: probability of exploiting; 1.0 turns exploration off (default), below 1 a pod's
        /// top is sometimes drawn in proportion to desirability (randomness from `getrandom`).
        q0: f64 = "Q0", number, 1.0, check(unit, "must be within 0..=1");
    }
    /// What η prices a placement with: the $/h it is measured against, which terms count, node
    /// prices, the reliability prior and its fading, and what a breach costs over a pod's stay.
    group cost: CostModel {
        /// The $/h η is measured against: η = `exp(−expected $/h / COST_REFERENCE)`
        /// (`heuristic/placement_cost.rs`).
        cost_reference: f64 = "COST_REFERENCE", number, 1.0,
            check(positive, "must be a positive finite number");
        /// Which cost terms count: `reliability` (spot reclamation risk in η, the learned failure risk
        /// in τ), `cost` (the pod's share of the bill), `headroom` (SLA breach risk from load),
        /// `spike` (its predicted-spike part), `fragmentation` (stranded GPUs), `performance` (τ's
        /// learned slowdown: run time ÷ the workload's median). A term left out is $0. For ablations
        /// (`aco-sim ablate eta` measures each) and for clusters where a term's facts mislead.
        eta_factors: EtaFactorSet = "ETA_FACTORS", factor_set, EtaFactorSet::ALL;
        /// Price in $/h of nodes without a cost label.
        default_cost_per_hour: f64 = "DEFAULT_COST_PER_HOUR", number, 1.0,
            check(finite_at_least_zero, "must be ≥ 0");
        /// Beta prior of a node's reliability: the successes it starts with.
        reliability_prior_successes: f64 = "RELIABILITY_PRIOR_SUCCESSES", number, 9.0,
            check(positive, "must be a positive finite number");
        /// Beta prior of a node's reliability: the failures it starts with.
        reliability_prior_failures: f64 = "RELIABILITY_PRIOR_FAILURES", number, 1.0,
            check(positive, "must be a positive finite number");
        /// How fast a node's outcome history fades, in ms (0 = never): the successes and failures
        /// reliability counts, and the slowdowns η's performance term learns, halve every half-life, so
        /// a node is judged by what it showed over the last few stays, not by one hot spell long ago
        /// (`reliability.rs`).
        outcome_half_life_ms: u64 = "OUTCOME_HALF_LIFE_MS", number, 3_600_000;
        /// Share of an idle node's remaining capacity expected to stay unused while a pod that opens it
        /// keeps it running, charged to that pod × `(1 − GPU scarcity)³`: in a filling cluster every
        /// node is needed anyway (`cost.rs`).
        open_node_idle_fraction: f64 = "OPEN_NODE_IDLE_FRACTION", number, 0.5,
            check(unit, "must be within 0..=1");
        /// What one SLA breach of a latency-critical pod costs, in $ (`SLA_VIOLATION_COST`): the
        /// price η's risk terms put on a breach or a reclamation of such a pod.
        sla_violation_cost: f64 = "SLA_VIOLATION_COST", number, 50.0,
            check(finite_at_least_zero, "must be a finite number of $ ≥ 0");
        /// How long a pod is expected to stay, in hours (`EXPECTED_STAY_HOURS`): the horizon over
        /// which a spot reclamation or a failure can hit it, and over which one-off risks are
        /// spread into $/h.
        expected_stay_hours: f64 = "EXPECTED_STAY_HOURS", number, 1.0,
            check(positive, "must be a positive finite number");
    }
    /// How spot capacity's reclamation risk is judged: the pool labels and the band prior.
    group spot: SpotRisk {
        /// Node label carrying the spot pool's monthly interruption band (`lt5`, `5-10`, `10-15`,
        /// `15-20`, `gt20` as in the Spot Advisor, or a percent): the prior of the pool's reclamation
        /// rate (`spot_risk.rs`).
        spot_band_label: String = "SPOT_INTERRUPTION_BAND_LABEL", text,
            "aco/spot-interruption-band".into();
        /// Monthly share of a spot pool reclaimed, in percent, for spot nodes without a band label.
        spot_default_interruption_percent: f64 = "SPOT_DEFAULT_INTERRUPTION_PERCENT", number, 10.0,
            check(|v| (0.0..=100.0).contains(&v), "must be a percentage within 0..=100");
        /// Exposure (node-hours) the band prior is worth against the reclamations the cluster shows
        /// (reported in `PUT /v1/nodes` `reclaimed`).
        spot_prior_node_hours: f64 = "SPOT_PRIOR_NODE_HOURS", number, 720.0,
            check(positive, "must be a positive finite number");
        /// Node labels whose values name a spot pool (joined with `/`).
        spot_pool_labels: Vec<String> = "SPOT_POOL_LABELS", text_list,
            strings(&["node.kubernetes.io/instance-type", "topology.kubernetes.io/zone"]);
    }
    /// The load model: the headroom a latency-critical pod needs, the spike band and the
    /// predictor's smoothing.
    group load: LoadModel {
        /// Headroom a latency-critical pod needs: its SLA breach probability rises from 0 at load `1 −
        /// headroom − SPIKE_BAND` to 1 at `1 − headroom + SPIKE_BAND`.
        latency_critical_min_headroom: f64 = "LATENCY_CRITICAL_MIN_HEADROOM", number, 0.2,
            check(unit, "must be within 0..=1");
        /// Utilisation above which the load predictor calls a spike.
        spike_threshold: f64 = "SPIKE_THRESHOLD", number, 0.9, check(unit, "must be within 0..=1");
        /// Half-width of the load band over which a latency-critical pod's breach probability rises
        /// from 0 to 1 (see `LATENCY_CRITICAL_MIN_HEADROOM`).
        spike_band: f64 = "SPIKE_BAND", number, 0.1,
            check(positive, "must be a positive finite number");
        /// Smoothing of the load predictor's EMA of reported utilisation.
        ema_alpha: f64 = "EMA_ALPHA", number, 0.5,
            check(|v| v > 0.0 && v <= 1.0, "must be within (0, 1]");
    }
    /// The floor η (and a candidate's relative desirability) never drops below.
    group eta: EtaBounds {
        /// η never drops below this, so every feasible node stays reachable.
        eta_floor: f64 = "ETA_FLOOR", number, 0.001,
            check(positive, "must be a positive finite number"),
            check(|v| v <= 1.0, "must be ≤ 1");
    }
    /// How long reported node facts stay fresh, and how long an isolate serves its copy.
    group facts: FactsFreshness {
        /// How long a node's measurements stay fresh, in ms; older ones are ignored (fail open to
        /// labels, or neutral) and counted in `aco_stale_node_facts_total`. The Facts object persists
        /// an observation time at most min(60 s, `FACTS_TTL_MS`/4) behind the newest.
        facts_ttl_ms: u64 = "FACTS_TTL_MS", number, 300_000;
        /// How long an isolate serves its copy of the cluster's facts before one request for the shards
        /// changed since.
        facts_cache_ms: u64 = "FACTS_CACHE_MS", number, 5_000;
    }
    /// How long a placement the extender named counts on its node before the facts show it.
    group assumed: AssumedTiming {
        /// A placement the extender named (the top of prioritize, the only node filter passed) counts
        /// on its node until the node's `requested` is observed this long after it (`assumed.rs`):
        /// the time the reporter needs to see the binding.
        assumed_settle_ms: u64 = "ASSUMED_SETTLE_MS", number, 2_000,
            check(|v| v <= 600_000, "must be within 0..=600000 (10 minutes)");
        /// …and at most this long (a reporter that stopped, a binding that failed); 0 turns
        /// assumptions off, so every pod is scored on the facts alone.
        assumed_ttl_ms: u64 = "ASSUMED_TTL_MS", number, 120_000,
            check(|v| v <= 3_600_000, "must be within 0..=3600000 (an hour)");
    }
    /// What a colony remembers about a pod and for how long: decisions, confirmed placements and
    /// their explanations.
    group retention: Retention {
        /// How long a pod's decision (its candidates' η) is remembered, waiting for the pod's placement
        /// report.
        decision_ttl_ms: u64 = "DECISION_TTL_MS", number, 3_600_000,
            check(minute_to_30_days, MINUTE_TO_30_DAYS);
        /// How many of a decision's best candidates are remembered (and explained).
        decision_keep_top: usize = "DECISION_KEEP_TOP", number, 64, check(|v| v != 0, "must be ≥ 1");
        /// How long a confirmed placement is remembered, so that replayed reports and the pod's later
        /// outcome count once; an outcome arriving later is ignored as `unknownPod`. Bounded: one row
        /// per pod placed in that window.
        confirmed_ttl_ms: u64 = "CONFIRMED_TTL_MS", number, 21_600_000,
            check(minute_to_30_days, MINUTE_TO_30_DAYS);
        /// How long a confirmed pod's explanation is kept after its confirmation (0: none is kept), so
        /// that `GET …/decisions/{podUid}` still answers why it landed where it did, naming the node it
        /// was bound on (`colony_store::explained`; docs/explanations.md). Together with
        /// `CONFIRMED_EXPLANATIONS_MAX`.
        confirmed_explanations_ttl_ms: u64 = "CONFIRMED_EXPLANATIONS_TTL_MS", number, 86_400_000,
            check(|v| v <= MAX_CONFIRMED_TTL_MS, "must be within 0..=2592000000 (30 days)");
        /// At most this many confirmed pods' explanations per tenant (0: none), the newest; beyond
        /// it the oldest go, a segment row (~1 MB of them) at a time. Bounds their storage: ≈ 4–20 KB
        /// each at 64 candidates.
        confirmed_explanations_max: u64 = "CONFIRMED_EXPLANATIONS_MAX", number, 10_000,
            check(|v| v <= MAX_CONFIRMED_EXPLANATIONS_LIMIT, "must be within 0..=100000");
    }
    /// How the Worker serves: the body limit, its flush windows and colony copies, where its
    /// objects live, the bind index.
    group serving: Serving {
        /// Request body limit of every route: 413 above it, from Content-Length before any byte is
        /// kept. 40 MiB by default, about 5,600 real-shaped nodes in full-object mode. The verbs judge
        /// each node object as they read it and stream the filter reply from the body, so the Worker's
        /// wasm memory is the body plus 1–3 MiB (docs/benchmarks.md "Worker memory of large requests":
        /// 39 MiB for the 37 MB of 5,000 nodes, 77 MiB for 10,000); the isolate's 128 MB also holds the
        /// JavaScript side, so larger clusters use names mode (`nodeCacheCapable: true`). A `PUT
        /// /v1/nodes` of 10,000 reports is about 6 MB.
        max_body_bytes: usize = "MAX_BODY_BYTES", number, 40 << 20,
            check(|v| v >= 1024, "must be ≥ 1024");
        /// How long an isolate keeps request counters before sending them to the Telemetry Durable
        /// Object in one batch (0: after every request). `/metrics` is exact for the isolate that
        /// serves it and at most this far behind for the others. At most 20 s: the flush runs in the
        /// request's `waitUntil`, which the platform keeps alive 30 s after the response.
        telemetry_flush_ms: u64 = "TELEMETRY_FLUSH_MS", number, 5_000,
            check(
                |v| v <= MAX_TELEMETRY_FLUSH_MS,
                "must be within 0..=20000 (the flush runs in waitUntil)"
            );
        /// Where the Durable Objects are created (Cloudflare's `locationHint`: `wnam`, `enam`,
        /// `sam`, `weur`, `eeur`, `apac`, `oc`, `afr`, `me`), near the cluster rather than near
        /// whichever request made them first; empty: no hint. Only an object's first creation reads
        /// it: an existing object stays where it is.
        do_location_hint: String = "DO_LOCATION_HINT", location_hint, String::new();
        /// How long an isolate gathers the decisions it scored from its colony copies before
        /// sending them in one request per colony (0: after every prioritize). One Durable Object
        /// request per window instead of one per pod; a placement that reaches the colony first is
        /// held for its decision (`colony_store::HOLD_MS`, 10 s), hence the bound.
        decision_flush_ms: u64 = "DECISION_FLUSH_MS", number, 100,
            check(
                |v| v <= MAX_DECISION_FLUSH_MS,
                "must be within 0..=2000 (a placement waits at most 10 s for its decision)"
            );
        /// How old an isolate's copy of a tenant's colony (τ table and outcome history) may be for
        /// prioritize to score locally, without waiting for the colony Durable Object (0: always
        /// ask the colony). Every local decision is sent to the colony after the response, and its
        /// reply refreshes the copy when the colony changed.
        colony_snapshot_ms: u64 = "COLONY_SNAPSHOT_MS", number, 30_000,
            check(|v| v <= MAX_COLONY_SNAPSHOT_MS, "must be within 0..=600000 (10 minutes)");
        /// Keep a pod UID → tenant index in KV at every prioritize, so that the `bind` verb (whose
        /// arguments carry no labels) finds label-chosen tenants. Off by default: it costs a KV write
        /// per decision; without it `bind` uses the pod's namespace as its tenant.
        bind_index: bool = "BIND_INDEX", flag, false;
    }
    /// How much state anyone may make the Worker create: decisions per tenant, clusters, colonies.
    group bounds: StateBounds {
        /// At most this many remembered decisions per tenant; beyond it the oldest is evicted
        /// (`aco_colony_evicted_decisions_total`), and its pod's later placement is `unknownPod`.
        /// Bounds what an unauthenticated prioritize caller can make a colony store.
        max_decisions_per_tenant: u64 = "MAX_DECISIONS_PER_TENANT", number, 10_000,
            check(|v| (1..=MAX_DECISIONS_LIMIT).contains(&v), "must be within 1..=1000000");
        /// At most this many named clusters (`/c/<cluster>`) exist, admitted by the Registry object
        /// as they are first used by an authenticated request; beyond it a new id is refused (404
        /// naming `cluster`, `aco_clusters_refused_total`) before any object or label exists for it;
        /// an admitted cluster stays admitted. Bounds the Facts objects and `cluster` series anyone
        /// may create when no `CLUSTERS`/`CLUSTER_PATTERN` is set.
        max_clusters: u64 = "MAX_CLUSTERS", number, 100,
            check(|v| v <= MAX_CLUSTERS_LIMIT, "must be within 0..=10000");
        /// At most this many colonies (cluster × tenant, all clusters together) exist; a tenant
        /// beyond it is scored by η alone, its placements are `unknownPod`, admin reads 404 naming
        /// `tenant`, and its requests are counted under `aco_tenant_overflow_total{tenant="other"}`.
        /// Bounds the Colony objects and what one `/metrics` scrape asks.
        max_colonies: u64 = "MAX_COLONIES", number, 1_000,
            check(|v| (1..=MAX_COLONIES_LIMIT).contains(&v), "must be within 1..=9000 (the Telemetry object keeps every colony's report)");
    }
    /// Hooks for tests only.
    group testing: TestHooks {
        /// Each request's time from its `x-aco-test-now-ms` header instead of the wall clock, in
        /// the Worker and its objects, so that a trace replay runs the Worker on the trace's clock
        /// (`tests/replay_matches_native.rs`); a request without the header is a 400 naming it. The
        /// Worker refuses the var (503 naming it) unless `EXTENDER_AUTH=none`:
        /// anyone who can call the verbs could set the clock, and a production Worker
        /// authenticates them.
        test_clock_header: bool = "TEST_CLOCK_HEADER", flag, false;
    }
    @derived {
        /// Which tenant names may have a colony (`TENANTS` list and/or `TENANT_PATTERN`); unset:
        /// any valid name. Pods of another tenant are scored by η alone with no colony (no Durable
        /// Object, nothing stored; `aco_tenants_refused_total`), their placements are refused (400)
        /// and their tables 404.
        tenant_policy: Option<TenantPolicy> = None, from("TENANTS", "TENANT_PATTERN"), tenant_names;
        /// Which named clusters (`/c/<cluster>/…`) are served (`CLUSTERS` list and/or
        /// `CLUSTER_PATTERN`); unset: any valid id an authenticated caller names, until
        /// `MAX_CLUSTERS` exist. Another id is refused (404 naming `cluster`) before authentication
        /// and before any object, row or telemetry label exists for it; the `default` cluster is
        /// always served.
        cluster_policy: Option<TenantPolicy> = None, from("CLUSTERS", "CLUSTER_PATTERN"),
            cluster_names;
    }
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
pub const REPLACED_VARS: [(&str, &str); 8] = [
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
    ("RHO", TRAIL_FROM_OUTCOMES),
    ("DEPOSIT_Q", TRAIL_FROM_OUTCOMES),
    ("TAU_INITIAL", TRAIL_FROM_OUTCOMES),
    ("TAU_MIN", TRAIL_FROM_OUTCOMES),
    ("TAU_MAX", TRAIL_FROM_OUTCOMES),
];

/// Why the deposit-per-placement trail's vars are gone.
const TRAIL_FROM_OUTCOMES: &str =
    "the trail is learned from outcomes and evaporates with OUTCOME_HALF_LIFE_MS; ALPHA weighs it";

/// Below a minute, a replayed placement could outlive its confirmation and deposit twice.
pub const MIN_CONFIRMED_TTL_MS: u64 = 60_000;
/// Counters wait at most this long in an isolate (the platform ends `waitUntil` work 30 s after
/// the response).
pub const MAX_TELEMETRY_FLUSH_MS: u64 = 20_000;
/// Decisions wait at most this long in an isolate: far within the colony's hold of an early
/// placement (`colony_store::HOLD_MS`).
pub const MAX_DECISION_FLUSH_MS: u64 = 2_000;
/// An isolate scores from a colony copy at most this old.
pub const MAX_COLONY_SNAPSHOT_MS: u64 = 600_000;
/// 30 days: the confirmed table holds one row per pod placed within the TTL.
pub const MAX_CONFIRMED_TTL_MS: u64 = 30 * 24 * 3_600_000;

/// Cloudflare's Durable Object location hints (`DO_LOCATION_HINT`).
pub const LOCATION_HINTS: [&str; 9] = [
    "wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me",
];

/// The largest `MAX_DECISIONS_PER_TENANT` accepted.
pub const MAX_DECISIONS_LIMIT: u64 = 1_000_000;
/// The largest `CONFIRMED_EXPLANATIONS_MAX` accepted: ≈ 0.4–2 GB of explanations per tenant.
pub const MAX_CONFIRMED_EXPLANATIONS_LIMIT: u64 = 100_000;
/// The largest `MAX_CLUSTERS` accepted.
pub const MAX_CLUSTERS_LIMIT: u64 = 10_000;
/// The largest `MAX_COLONIES` accepted: the Telemetry object keeps every colony's latest report
/// in memory (a few KB each, `colony_store::wire::REPORT_NODE_BYTES`) and a scrape renders them
/// all, which must stay well inside an object's 128 MB.
pub const MAX_COLONIES_LIMIT: u64 = 9_000;

/// An allowlist var and a pattern var (`TENANTS`, `TENANT_PATTERN`) read into a policy; `None`
/// when neither is set. Every listed name must itself be valid (`validate`).
fn name_policy(
    lookup: &impl Fn(&str) -> Option<String>,
    (list_var, pattern_var): (&str, &str),
    validate: fn(&str) -> Result<(), String>,
) -> Result<Option<TenantPolicy>, ConfigError> {
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

/// `TENANTS` and `TENANT_PATTERN` (the keys of the derived row, in that order).
fn tenant_names(
    lookup: &impl Fn(&str) -> Option<String>,
    keys: &[&str],
) -> Result<Option<TenantPolicy>, ConfigError> {
    name_policy(lookup, (keys[0], keys[1]), crate::cluster::validate_tenant)
}

/// `CLUSTERS` and `CLUSTER_PATTERN` (the keys of the derived row, in that order).
fn cluster_names(
    lookup: &impl Fn(&str) -> Option<String>,
    keys: &[&str],
) -> Result<Option<TenantPolicy>, ConfigError> {
    name_policy(lookup, (keys[0], keys[1]), crate::cluster::validate_cluster)
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn err(key: &str, value: &str, reason: &str) -> ConfigError {
    ConfigError {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// --- readers: a var's text → its field ---

fn number<T: FromStr>(key: &str, v: &str) -> Result<T, ConfigError> {
    T::from_str(v.trim()).map_err(|_| err(key, v, "not a number"))
}

fn text(_: &str, v: &str) -> Result<String, ConfigError> {
    Ok(v.trim().to_string())
}

fn location_hint(key: &str, v: &str) -> Result<String, ConfigError> {
    let v = v.trim();
    if v.is_empty() || LOCATION_HINTS.contains(&v) {
        Ok(v.to_string())
    } else {
        Err(err(
            key,
            v,
            "must be empty or one of wnam, enam, sam, weur, eeur, apac, oc, afr, me",
        ))
    }
}

fn text_list(_: &str, v: &str) -> Result<Vec<String>, ConfigError> {
    Ok(list(v))
}

fn label_pairs(key: &str, v: &str) -> Result<Vec<(String, String)>, ConfigError> {
    list(v)
        .into_iter()
        .map(|pair| match pair.split_once('=') {
            Some((k, val)) if !k.is_empty() => Ok((k.to_string(), val.to_string())),
            _ => Err(err(key, v, "expected comma-separated label=value pairs")),
        })
        .collect()
}

fn tenant_source_rule(key: &str, v: &str) -> Result<TenantSource, ConfigError> {
    match v.trim() {
        "label-then-namespace" => Ok(TenantSource::LabelThenNamespace),
        "namespace" => Ok(TenantSource::Namespace),
        "label" => Ok(TenantSource::Label),
        _ => Err(err(
            key,
            v,
            "expected label-then-namespace, namespace or label",
        )),
    }
}

fn factor_set(key: &str, v: &str) -> Result<EtaFactorSet, ConfigError> {
    EtaFactorSet::parse(v).map_err(|reason| err(key, v, &reason))
}

fn flag(key: &str, v: &str) -> Result<bool, ConfigError> {
    match v.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(err(key, v, "expected true or false")),
    }
}

// --- checks: a value → whether it is allowed ---

fn holds<T: Copy>(value: T, ok: impl Fn(T) -> bool) -> bool {
    ok(value)
}

fn unit(v: f64) -> bool {
    (0.0..=1.0).contains(&v)
}

fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn finite_at_least_zero(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// The bounds of the TTLs of what a colony remembers about a pod.
fn minute_to_30_days(v: u64) -> bool {
    (MIN_CONFIRMED_TTL_MS..=MAX_CONFIRMED_TTL_MS).contains(&v)
}

const MINUTE_TO_30_DAYS: &str = "must be within 60000..=2592000000 (1 minute to 30 days)";

/// A checked value as an error shows it (integers through `f64`, as they always were).
trait Shown {
    fn shown(&self) -> String;
}

impl Shown for f64 {
    fn shown(&self) -> String {
        self.to_string()
    }
}

impl Shown for u64 {
    fn shown(&self) -> String {
        (*self as f64).to_string()
    }
}

impl Shown for usize {
    fn shown(&self) -> String {
        (*self as f64).to_string()
    }
}

impl Config {
    /// Builds the config from `[vars]`: `lookup("ALPHA")` returns the var's text if set.
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        for (old, now) in REPLACED_VARS {
            if let Some(v) = lookup(old) {
                return Err(err(old, &v, &format!("no longer read: {now}")));
            }
        }
        let mut c = Config::default();
        c.read_keys(&lookup)?;
        c.validate()?;
        Ok(c)
    }

    /// This config with `change` made to it: how tests and tools set a var or two,
    /// `Config::default().with(|c| c.colony.alpha = 0.0)`.
    pub fn with(mut self, change: impl FnOnce(&mut Config)) -> Config {
        change(&mut self);
        self
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

    /// How many clusters and colonies the Registry object admits.
    pub fn registry_limits(&self) -> crate::registry::Limits {
        crate::registry::Limits {
            max_clusters: self.bounds.max_clusters as usize,
            max_colonies: self.bounds.max_colonies as usize,
        }
    }

    /// Whether `tenant` may have a colony (see [`TenantPolicy`]).
    pub fn tenant_allowed(&self, tenant: &str) -> bool {
        self.tenant_policy.as_ref().is_none_or(|p| p.allows(tenant))
    }

    /// Checks ranges (each key's, in the table) and relations between keys.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check_keys()?;
        if self.node_keys.gpu_resources.is_empty() {
            return Err(err("GPU_RESOURCES", "", "must name at least one resource"));
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
            c.cost.eta_factors,
            EtaFactorSet {
                reliability: false,
                cost: true,
                headroom: true,
                spike: false,
                fragmentation: false,
                performance: false,
            }
        );
        assert_eq!(c.colony.alpha, 0.0);
        assert_eq!(
            from(&[("ETA_FACTORS", "all")]).unwrap().cost.eta_factors,
            EtaFactorSet::ALL
        );
        assert_eq!(Config::default().cost.eta_factors, EtaFactorSet::ALL);
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
                .serving
                .colony_snapshot_ms,
            0
        );
        assert_eq!(
            from(&[("TELEMETRY_FLUSH_MS", "20001")]).unwrap_err().key,
            "TELEMETRY_FLUSH_MS"
        );
        assert_eq!(
            from(&[("DECISION_FLUSH_MS", "2001")]).unwrap_err().key,
            "DECISION_FLUSH_MS"
        );
        assert_eq!(
            from(&[("DECISION_FLUSH_MS", "0")])
                .unwrap()
                .serving
                .decision_flush_ms,
            0
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
            (c.colony.alpha, c.colony.beta, c.load.ema_alpha, c.colony.q0),
            (2.0, 2.0, 0.5, 1.0)
        );
    }

    #[test]
    fn overrides_parse_and_lists_split_on_commas() {
        let c = from(&[
            ("Q0", "0.9"),
            ("GPU_RESOURCES", "nvidia.com/gpu, amd.com/gpu"),
            ("TENANT_SOURCE", "namespace"),
            ("SPOT_LABELS", "a=b,c=d"),
            ("DO_LOCATION_HINT", " weur "),
        ])
        .unwrap();
        assert_eq!(c.colony.q0, 0.9);
        assert_eq!(c.serving.do_location_hint, "weur");
        assert_eq!(Config::default().serving.do_location_hint, "");
        assert_eq!(
            c.node_keys.gpu_resources,
            vec!["nvidia.com/gpu", "amd.com/gpu"]
        );
        assert_eq!(c.pod_keys.tenant_source, TenantSource::Namespace);
        assert_eq!(
            c.node_keys.spot_labels,
            vec![("a".into(), "b".into()), ("c".into(), "d".into())]
        );
        assert_eq!(Config::default().retention.confirmed_ttl_ms, 21_600_000);
        assert_eq!(
            from(&[("CONFIRMED_TTL_MS", "2592000000")])
                .unwrap()
                .retention
                .confirmed_ttl_ms,
            MAX_CONFIRMED_TTL_MS
        );
    }

    #[test]
    fn bad_values_name_the_var() {
        for (pairs, key) in [
            (vec![("Q0", "fast")], "Q0"),
            (vec![("Q0", "1.5")], "Q0"),
            (vec![("RHO", "0.05")], "RHO"),
            (vec![("TAU_MAX", "10")], "TAU_MAX"),
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
            (vec![("MAX_CLUSTERS", "10001")], "MAX_CLUSTERS"),
            (vec![("MAX_COLONIES", "0")], "MAX_COLONIES"),
            (vec![("MAX_COLONIES", "9001")], "MAX_COLONIES"),
            (vec![("DO_LOCATION_HINT", "europe")], "DO_LOCATION_HINT"),
            (vec![("TENANTS", "ok,../bad")], "TENANTS"),
            (vec![("TENANT_PATTERN", "team-(")], "TENANT_PATTERN"),
        ] {
            let e = from(&pairs).unwrap_err();
            assert_eq!(e.key, key, "{pairs:?} → {e}");
        }
    }
}
