//! The kube-scheduler configurations of the real-kube trace replay, by name:
//!
//! - `alone`: kube-scheduler alone, with kube-scheduler's default plugins and no extender;
//! - `extender`: the shipped `k8s/scheduler-config.yaml` with the Worker as extender;
//! - `fgd`: FGD compiled into the same kube-scheduler as the only score plugin (the ATC '23
//!   authors' scheduler), every feasible node scored as their simulator does;
//! - `first-fit`: First-Fit compiled into the same kube-scheduler as the only score plugin
//!   (`AcoFirstFit`: the first feasible node by name), `percentageOfNodesToScore: 100` so that
//!   the first is the first of every feasible node and not of a sample from a rotating start.
//!
//! With a kube-scheduler build that has the device-accounting plugin, every configuration
//! enables it (device accounting is the cluster's, not a policy): best fit for a share's GPU in
//! `alone` and `extender`, FGD's choice in `fgd`. Changes follow a
//! `+`: `pct=N` (the profile's `percentageOfNodesToScore`), `scores=off` (every default score
//! plugin off), `scores=kube` (kube-scheduler's default score plugins instead of the shipped
//! profile's), `fit=most` (NodeResourcesFit scores MostAllocated instead of LeastAllocated),
//! `spread=off` (the spreading scores off: BalancedAllocation, PodTopologySpread,
//! InterPodAffinity), `weight=N` (the extender's weight), `gpu=<choice>` (the device plugin's
//! share choice), `objects` (the extender gets node objects, `nodeCacheCapable: false`), e.g.
//! `extender+pct=100`, `extender+fit=most+weight=10`.

use serde_yaml::{Mapping, Value};

use super::SchedulerConfig;

/// The device-accounting plugin (per-GPU shares from HAMi's annotations) and its argument.
pub const GPU_DEVICES_PLUGIN: &str = "AcoGpuDevices";
pub const SHARE_GPU_CHOICE_ARG: &str = "shareGpuChoice";
/// The FGD score plugin. Its argument, the typical pod shapes FGD measures fragmentation
/// against, is also the device plugin's when it picks a share's GPU by FGD.
pub const FGD_PLUGIN: &str = "AcoFGD";
pub const FGD_SHAPES_ARG: &str = "typicalShapes";
/// The First-Fit score plugin (no args).
pub const FIRST_FIT_PLUGIN: &str = "AcoFirstFit";

/// kube-scheduler's backoff before it retries a pod that did not fit (see `scheduler_config`).
pub const RETRY_AFTER_S: u64 = 3600;

/// A named configuration ([`ReplaySpec::parse`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ReplaySpec {
    /// As given, e.g. `extender+pct=100`.
    pub name: String,
    pub base: Base,
    pub percentage: Option<u32>,
    pub scores: Scores,
    pub weight: Option<i64>,
    pub share_gpu_choice: Option<String>,
    /// The extender gets node names (true) or node objects.
    pub node_cache_capable: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    Alone,
    Extender,
    Fgd,
    FirstFit,
}

/// What becomes of the profile's default score plugins (changes combine: `fit=most+spread=off`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scores {
    /// All off.
    pub off: bool,
    /// kube-scheduler's default score plugins and weights instead of the shipped profile's.
    pub kube_defaults: bool,
    /// NodeResourcesFit scores MostAllocated instead of LeastAllocated.
    pub most_allocated: bool,
    /// BalancedAllocation, PodTopologySpread and InterPodAffinity off.
    pub spread_off: bool,
}

impl ReplaySpec {
    pub fn parse(text: &str) -> Result<ReplaySpec, String> {
        let mut parts = text.split('+');
        let base = match parts.next().unwrap_or_default() {
            "alone" => Base::Alone,
            "extender" => Base::Extender,
            "fgd" => Base::Fgd,
            "first-fit" => Base::FirstFit,
            other => return Err(format!("{text}: unknown configuration {other:?}")),
        };
        let mut spec = ReplaySpec {
            name: text.to_owned(),
            base,
            percentage: matches!(base, Base::Fgd | Base::FirstFit).then_some(100),
            scores: Scores::default(),
            weight: None,
            share_gpu_choice: None,
            node_cache_capable: true,
        };
        for part in parts {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            let number = || {
                value
                    .parse::<i64>()
                    .map_err(|_| format!("{text}: {key} wants a number, not {value:?}"))
            };
            match (key, value) {
                ("pct", _) => spec.percentage = Some(number()?.clamp(0, 100) as u32),
                ("scores", "off") => spec.scores.off = true,
                ("scores", "kube") => spec.scores.kube_defaults = true,
                ("fit", "most") => spec.scores.most_allocated = true,
                ("spread", "off") => spec.scores.spread_off = true,
                ("weight", _) if base == Base::Extender => spec.weight = Some(number()?),
                ("gpu", choice) if !choice.is_empty() => {
                    spec.share_gpu_choice = Some(choice.to_owned())
                }
                ("objects", "") if base == Base::Extender => spec.node_cache_capable = false,
                _ => return Err(format!("{text}: unknown change {part:?}")),
            }
        }
        Ok(spec)
    }

    pub fn with_extender(&self) -> bool {
        self.base == Base::Extender
    }

    /// The share choice of the device plugin in this configuration.
    pub fn share_gpu_choice(&self) -> String {
        self.share_gpu_choice.clone().unwrap_or_else(|| {
            match self.base {
                Base::Fgd => "fgdFirstBestScore",
                _ => "bestFit",
            }
            .to_owned()
        })
    }

    /// The configuration (the extender stanza still to be pointed at the Worker: see
    /// `replay::run`). `plugins`: the scheduler build has the device and FGD plugins;
    /// `fgd_shapes`: the FGD plugin's typical pods (a YAML list).
    pub fn scheduler_config(&self, plugins: bool, fgd_shapes: &Value) -> SchedulerConfig {
        let mut config = SchedulerConfig::off();
        let mut profile = Mapping::new();
        let mut enabled_multi: Vec<Value> = Vec::new();
        let mut score_enabled: Vec<Value> = Vec::new();
        let mut score_disabled: Vec<Value> = Vec::new();
        let mut plugin_config: Vec<Value> = Vec::new();
        let mut pre_score: Option<Value> = None;
        if plugins {
            enabled_multi.push(named(GPU_DEVICES_PLUGIN));
            let choice = self.share_gpu_choice();
            let mut device_args = vec![(SHARE_GPU_CHOICE_ARG, Value::from(choice.clone()))];
            if choice != "bestFit" {
                device_args.push((FGD_SHAPES_ARG, fgd_shapes.clone()));
            }
            plugin_config.push(args(GPU_DEVICES_PLUGIN, &device_args));
        }
        match self.base {
            Base::Fgd => {
                assert!(
                    plugins,
                    "fgd needs a kube-scheduler build with the FGD plugin"
                );
                // FGD alone scores; the default plugins' PreScore would only compute unused state.
                score_disabled.push(named("*"));
                let mut fgd = named(FGD_PLUGIN);
                fgd["weight"] = 1.into();
                score_enabled.push(fgd);
                pre_score = Some(
                    serde_yaml::from_str(&format!(
                        "{{disabled: [{{name: '*'}}], enabled: [{{name: {FGD_PLUGIN}}}]}}"
                    ))
                    .unwrap(),
                );
                plugin_config.push(args(FGD_PLUGIN, &[(FGD_SHAPES_ARG, fgd_shapes.clone())]));
            }
            Base::FirstFit => {
                assert!(
                    plugins,
                    "first-fit needs a kube-scheduler build with the First-Fit plugin"
                );
                // First-Fit alone scores: any other score would move pods off the first node.
                score_disabled.push(named("*"));
                let mut first = named(FIRST_FIT_PLUGIN);
                first["weight"] = 1.into();
                score_enabled.push(first);
                pre_score = Some(serde_yaml::from_str("{disabled: [{name: '*'}]}").unwrap());
            }
            Base::Extender => {
                // The shipped extender stanza is kept; replay::run points it at the Worker.
                config =
                    SchedulerConfig::worker(String::new(), Vec::new(), self.node_cache_capable);
                config.extender_weight = self.weight;
            }
            Base::Alone => {}
        }
        if self.scores.off {
            score_disabled.push(named("*"));
        }
        // kube-scheduler alone is what a cluster runs without us: its default plugins.
        // FGD's profile is its own: FGD alone scores.
        config.shipped_plugins = !(self.scores.kube_defaults
            || matches!(self.base, Base::Alone | Base::Fgd | Base::FirstFit));
        if self.scores.spread_off {
            for p in [
                "NodeResourcesBalancedAllocation",
                "PodTopologySpread",
                "InterPodAffinity",
            ] {
                score_disabled.push(named(p));
            }
        }
        if self.scores.most_allocated {
            plugin_config.push(args(
                "NodeResourcesFit",
                &[(
                    "scoringStrategy",
                    serde_yaml::from_str(
                        "{type: MostAllocated, resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]}",
                    )
                    .unwrap(),
                )],
            ));
        }
        let mut plugins_map = Mapping::new();
        if !enabled_multi.is_empty() {
            plugins_map.insert("multiPoint".into(), set("enabled", enabled_multi));
        }
        if let Some(p) = pre_score {
            plugins_map.insert("preScore".into(), p);
        }
        if !score_enabled.is_empty() || !score_disabled.is_empty() {
            let mut score = Mapping::new();
            if !score_enabled.is_empty() {
                score.insert("enabled".into(), Value::Sequence(score_enabled));
            }
            if !score_disabled.is_empty() {
                score.insert("disabled".into(), Value::Sequence(score_disabled));
            }
            plugins_map.insert("score".into(), Value::Mapping(score));
        }
        if !plugins_map.is_empty() {
            profile.insert("plugins".into(), Value::Mapping(plugins_map));
        }
        if !plugin_config.is_empty() {
            profile.insert("pluginConfig".into(), Value::Sequence(plugin_config));
        }
        if let Some(p) = self.percentage {
            profile.insert("percentageOfNodesToScore".into(), p.into());
        }
        config.profile = profile;
        // A pod that fits nowhere waits an hour before kube-scheduler tries it again, as the
        // protocol never retries one (nodes only fill, so a retry can only fail again). With the
        // default 1-10 s and the device plugin asking to requeue pods on every cluster event,
        // retries of the failed pods took every scheduling cycle and starved the pods not yet
        // tried, whose arrival rank (their priority) is lower.
        for key in ["podInitialBackoffSeconds", "podMaxBackoffSeconds"] {
            config.top_level.insert(key.into(), RETRY_AFTER_S.into());
        }
        config
    }
}

fn named(name: &str) -> Value {
    let mut m = Mapping::new();
    m.insert("name".into(), name.into());
    Value::Mapping(m)
}

fn set(key: &str, list: Vec<Value>) -> Value {
    let mut m = Mapping::new();
    m.insert(key.into(), Value::Sequence(list));
    Value::Mapping(m)
}

fn args(name: &str, pairs: &[(&str, Value)]) -> Value {
    let mut a = Mapping::new();
    for (k, v) in pairs {
        a.insert((*k).into(), v.clone());
    }
    let mut m = Mapping::new();
    m.insert("name".into(), name.into());
    m.insert("args".into(), Value::Mapping(a));
    Value::Mapping(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(spec: &str, plugins: bool) -> serde_yaml::Value {
        let spec = ReplaySpec::parse(spec).unwrap();
        let mut config =
            spec.scheduler_config(plugins, &serde_yaml::from_str("[{cpuMilli: 1}]").unwrap());
        if let super::super::Extender::Worker { url_prefix, .. } = &mut config.extender {
            *url_prefix = "https://127.0.0.1:1/v1".into();
        }
        serde_yaml::from_str(&config.render(std::path::Path::new("/k"))).unwrap()
    }

    #[test]
    fn names_parse_into_one_change_at_a_time() {
        let s = ReplaySpec::parse("extender+pct=100+fit=most+weight=10+objects").unwrap();
        assert_eq!(
            (
                s.base,
                s.percentage,
                s.scores,
                s.weight,
                s.node_cache_capable
            ),
            (
                Base::Extender,
                Some(100),
                Scores {
                    most_allocated: true,
                    ..Scores::default()
                },
                Some(10),
                false
            )
        );
        assert_eq!(ReplaySpec::parse("fgd").unwrap().percentage, Some(100));
        assert_eq!(ReplaySpec::parse("alone").unwrap().percentage, None);
        for bad in ["bogus", "alone+weight=5", "extender+pct=x", "extender+nope"] {
            assert!(ReplaySpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_shipped_file_is_changed_only_where_asked() {
        let alone = render("alone", true);
        assert!(alone.get("extenders").is_none());
        assert_eq!(alone["podInitialBackoffSeconds"], RETRY_AFTER_S);
        assert_eq!(alone["podMaxBackoffSeconds"], RETRY_AFTER_S);
        let p = &alone["profiles"][0];
        assert_eq!(p["schedulerName"], "aco-scheduler");
        assert_eq!(
            p["plugins"]["multiPoint"]["enabled"][0]["name"],
            GPU_DEVICES_PLUGIN
        );
        assert_eq!(
            p["pluginConfig"][0]["args"][SHARE_GPU_CHOICE_ARG],
            "bestFit"
        );
        assert!(p.get("percentageOfNodesToScore").is_none());

        let ext = render("extender+pct=100+weight=2", true);
        assert_eq!(ext["extenders"][0]["weight"], 2);
        assert_eq!(ext["extenders"][0]["nodeCacheCapable"], true);
        assert_eq!(ext["profiles"][0]["percentageOfNodesToScore"], 100);
        let shipped = render("extender", false);
        assert_eq!(shipped["extenders"][0]["weight"], 5);
        let disabled = |doc: &Value| -> Vec<String> {
            doc["profiles"][0]["plugins"]["score"]["disabled"]
                .as_sequence()
                .into_iter()
                .flatten()
                .map(|p| p["name"].as_str().unwrap().to_owned())
                .collect()
        };
        // The shipped profile's spreading scores stay off, with the device plugin added beside
        // them; kube-scheduler's defaults only where asked, and for kube-scheduler alone.
        assert!(disabled(&shipped).contains(&"NodeResourcesBalancedAllocation".to_owned()));
        let with_plugins = render("extender", true);
        assert_eq!(disabled(&with_plugins), disabled(&shipped));
        assert_eq!(
            with_plugins["profiles"][0]["plugins"]["multiPoint"]["enabled"][0]["name"],
            GPU_DEVICES_PLUGIN
        );
        assert!(disabled(&render("extender+scores=kube", true)).is_empty());
        assert!(disabled(&alone).is_empty());
        let off = render("extender+scores=off", false);
        assert_eq!(disabled(&off).last().map(String::as_str), Some("*"));

        let fgd = render("fgd", true);
        let p = &fgd["profiles"][0];
        assert_eq!(p["plugins"]["score"]["disabled"][0]["name"], "*");
        assert_eq!(p["plugins"]["score"]["enabled"][0]["name"], FGD_PLUGIN);
        assert_eq!(
            p["pluginConfig"][0]["args"][SHARE_GPU_CHOICE_ARG],
            "fgdFirstBestScore"
        );
        assert_eq!(
            p["pluginConfig"][0]["args"][FGD_SHAPES_ARG][0]["cpuMilli"],
            1
        );
        assert_eq!(
            p["pluginConfig"][1]["args"][FGD_SHAPES_ARG][0]["cpuMilli"],
            1
        );
        assert_eq!(p["plugins"]["preScore"]["enabled"][0]["name"], FGD_PLUGIN);
        assert!(alone["profiles"][0]["pluginConfig"][0]["args"]
            .get(FGD_SHAPES_ARG)
            .is_none());
        assert_eq!(p["percentageOfNodesToScore"], 100);

        let ff = render("first-fit", true);
        let p = &ff["profiles"][0];
        assert!(ff.get("extenders").is_none());
        assert_eq!(p["plugins"]["score"]["disabled"][0]["name"], "*");
        assert_eq!(
            p["plugins"]["score"]["enabled"][0]["name"],
            FIRST_FIT_PLUGIN
        );
        assert_eq!(p["plugins"]["preScore"]["disabled"][0]["name"], "*");
        assert_eq!(p["percentageOfNodesToScore"], 100);
        assert_eq!(
            p["pluginConfig"][0]["args"][SHARE_GPU_CHOICE_ARG],
            "bestFit"
        );

        let most = render("extender+fit=most", false);
        assert_eq!(
            most["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"]["type"],
            "MostAllocated"
        );
    }
}
