//! A churned segment of a trace — arrivals and departures of its first N pods — measured one
//! way whoever placed the pods: the simulator's policies (`aco-sim run`), or a real
//! kube-scheduler whose bindings are replayed through the same engine ([`given::Given`]), so
//! that cost and LS QoS come from the simulator's own cost and load model in both settings.
//!
//! The segment is the world `aco-sim run` builds from the same flags, with what a cluster behind
//! the in-cluster reporter can be told and can tell ([`Segment::load`]): no latency targets
//! (kwok nodes have no measured latency), no spot reclamation (kwok nodes are not reclaimed), no
//! node utilisation in the facts (the reporter runs `--no-node-metrics`), outcomes as the
//! reporter reads them from pod status ([`OutcomeReports::Completion`]), and facts as often as
//! the reporter pushes them, in trace time. [`Segment::command`] is the `aco-sim run` line that
//! runs the same.

pub mod given;
pub mod kube_objects;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::cluster::{SimPod, World, WorldParams};
use crate::engine::{OutcomeReports, RunResult, SimParams};
use crate::load::LoadModel;
use crate::native::NativeScheduler;
use crate::predictor::PredictorKind;
use crate::prices::PriceTable;
use crate::trace::Error;

/// Which segment, of which trace.
#[derive(Debug, Clone)]
pub struct SegmentSpec {
    /// Every node of the trace (OpenB's `openb_node_list_all_node.csv`, as `aco-sim run`).
    pub nodes_csv: PathBuf,
    pub pods_csv: PathBuf,
    pub prices_dir: PathBuf,
    /// The world's and the run's seed (`aco-sim run --seed`, default 1).
    pub seed: u64,
    /// The first this many arrivals.
    pub pods: usize,
    /// Trace seconds between two fact reports (the reporter's push interval × the compression).
    pub report_interval_s: u64,
    /// The cluster measures node load (metrics-server): the real run's pods carry their mean
    /// use ([`Segment::mean_cpu_milli`]) for kwok to report, and the simulator's reporter sends
    /// node utilisation. Off: neither side has load facts.
    pub node_metrics: bool,
}

/// The segment's world, load and simulation parameters.
pub struct Segment {
    pub spec: SegmentSpec,
    pub world: World,
    pub load: LoadModel,
    pub params: SimParams,
}

impl Segment {
    pub fn load(spec: SegmentSpec) -> Result<Segment, Error> {
        let prices = PriceTable::load(&spec.prices_dir)?;
        let params = WorldParams {
            seed: spec.seed,
            latency_target_share: 0.0,
            ..WorldParams::default()
        };
        let config = crate::cluster::sim_config_with(&[])?;
        let world = crate::import::observed::world_from_files(
            &spec.nodes_csv,
            &spec.pods_csv,
            &prices,
            params,
            config,
        )?;
        let (_, model) =
            crate::load::load_models(&["synthetic".to_string()], Path::new(""))?.remove(0);
        let load = LoadModel {
            seed: spec.seed,
            ..model
        };
        let params = SimParams {
            seed: spec.seed,
            report_interval_s: spec.report_interval_s,
            max_pods: Some(spec.pods),
            outcomes: OutcomeReports::Completion,
            spot_reclamation: false,
            utilisation_facts: spec.node_metrics,
            ..SimParams::default()
        };
        Ok(Segment {
            spec,
            world,
            load,
            params,
        })
    }

    /// The segment's pods in arrival order (the engine's order).
    pub fn pods(&self) -> &[SimPod] {
        &self.world.pods[..self.spec.pods.min(self.world.pods.len())]
    }

    /// Trace seconds from the first arrival to the last.
    pub fn arrival_span_s(&self) -> u64 {
        let pods = self.pods();
        match (pods.first(), pods.last()) {
            (Some(a), Some(b)) => b.arrival_s() - a.arrival_s(),
            _ => 0,
        }
    }

    /// The segment under `policy` in the simulator.
    pub fn simulate(&self, policy: &str) -> Result<RunResult, Error> {
        let p = crate::policy::by_name(policy, self.spec.seed)
            .ok_or_else(|| format!("unknown policy {policy}"))?;
        let mut s = NativeScheduler::new(
            p,
            self.world.config.clone(),
            PredictorKind::Ema(self.world.config.load.ema_alpha),
        );
        crate::engine::run(&self.world, &self.load, &self.params, &mut s)
    }

    /// The segment with every pod where `bindings` (by pod name: node name) put it, and the
    /// pods the engine could not put there (the node was full in trace time: the real
    /// departures and arrivals interleaved otherwise).
    pub fn of_bindings(
        &self,
        name: &str,
        bindings: &HashMap<String, String>,
    ) -> Result<(RunResult, Vec<String>), Error> {
        let mut given = given::Given::new(name, &self.world, bindings);
        let r = crate::engine::run(&self.world, &self.load, &self.params, &mut given)?;
        Ok((r, given.not_replayed))
    }

    /// The pod's mean CPU use in millicores under the load model: its request × its base level
    /// (the level the diurnal swing, noise and spikes move around). What a real run's kwok
    /// reports for it, constant: a kubelet's metrics at this compression average over trace
    /// days, so the mean is what a measurement can carry.
    pub fn mean_cpu_milli(&self, pod: &SimPod) -> f64 {
        let key = crate::rng::key(&pod.trace.name);
        pod.trace.cpu_milli as f64 * self.load.pod(key, pod.ls).base
    }

    /// The `aco-sim run` command that runs this segment (`--openb-dir DIR` with the trace's files).
    pub fn command(&self, policies: &str) -> String {
        let utilisation = if self.spec.node_metrics {
            ""
        } else {
            " --no-utilisation-facts"
        };
        format!(
            "aco-sim run --nodes {} --pods {} --seed {} --max-pods {} --latency-target-share 0 \
             --no-spot-reclamation{utilisation} --outcomes completion \
             --report-interval-s {} --policies {policies}",
            self.spec.nodes_csv.display(),
            self.spec.pods_csv.display(),
            self.spec.seed,
            self.spec.pods,
            self.spec.report_interval_s,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(pods: usize) -> Segment {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
        Segment::load(SegmentSpec {
            nodes_csv: data.join("openb-sample/nodes.csv"),
            pods_csv: data.join("openb-sample/pods.csv"),
            prices_dir: data.join("prices"),
            seed: 1,
            pods,
            report_interval_s: 600,
            node_metrics: false,
        })
        .unwrap()
    }

    fn bindings(r: &RunResult) -> HashMap<String, String> {
        r.placements
            .iter()
            .filter_map(|(pod, node)| Some((pod.clone(), node.clone()?)))
            .collect()
    }

    #[test]
    fn a_policys_own_bindings_measure_as_the_policy_did() {
        let s = segment(300);
        for policy in ["first-fit", "colony"] {
            let sim = s.simulate(policy).unwrap();
            let (replayed, missed) = s.of_bindings("real", &bindings(&sim)).unwrap();
            let (a, b) = (&sim.metrics, &replayed.metrics);
            assert!(missed.is_empty(), "{policy}: {missed:?}");
            assert!(a.cost_busy_usd > 0.0 && a.ls_placed > 0, "{policy}: {a:?}");
            assert_eq!(
                (
                    a.cost_busy_usd,
                    a.ls_compliance,
                    a.placed,
                    a.unplaced,
                    a.nodes_used
                ),
                (
                    b.cost_busy_usd,
                    b.ls_compliance,
                    b.placed,
                    b.unplaced,
                    b.nodes_used
                ),
                "{policy}"
            );
        }
    }

    #[test]
    fn bindings_the_engine_cannot_follow_are_named_and_left_unplaced() {
        let s = segment(300);
        let first = &s.world.nodes[0].name;
        let all_on_one: HashMap<String, String> = s
            .pods()
            .iter()
            .map(|p| (p.trace.name.clone(), first.clone()))
            .collect();
        let (r, missed) = s.of_bindings("real", &all_on_one).unwrap();
        assert!(!missed.is_empty());
        assert_eq!(r.metrics.unplaced, missed.len());
        assert_eq!(r.metrics.nodes_used, 1);
        // No placement at all: nothing billed.
        let (r, missed) = s.of_bindings("none", &HashMap::new()).unwrap();
        assert!(missed.is_empty());
        assert_eq!((r.metrics.placed, r.metrics.cost_busy_usd), (0, 0.0));
    }

    #[test]
    fn with_node_metrics_the_simulators_reporter_sends_utilisation_and_pods_carry_their_mean_use() {
        let mut s = segment(10);
        s.spec.node_metrics = true;
        assert!(!s.command("colony").contains("--no-utilisation-facts"));
        let with = Segment::load(SegmentSpec {
            node_metrics: true,
            ..s.spec.clone()
        })
        .unwrap();
        assert!(with.params.utilisation_facts && !segment(10).params.utilisation_facts);
        let (lo, hi) = (with.load.ls_base.0.min(with.load.other_base.0), 1.0);
        for p in with.pods() {
            let m = with.mean_cpu_milli(p);
            let cpu = p.trace.cpu_milli as f64;
            assert!(
                m >= lo * cpu && m <= hi * cpu,
                "{} {m} of {cpu}",
                p.trace.name
            );
        }
    }

    #[test]
    fn the_command_names_every_setting_that_differs_from_aco_sim_runs_defaults() {
        let c = segment(10).command("first-fit,colony");
        for flag in [
            "--max-pods 10",
            "--latency-target-share 0",
            "--no-spot-reclamation",
            "--no-utilisation-facts",
            "--outcomes completion",
            "--report-interval-s 600",
        ] {
            assert!(c.contains(flag), "{c}");
        }
    }

    /// Outcomes a [`given::Given`] run delivers, as (quality, from the load).
    struct Outcomes<'a> {
        inner: given::Given,
        seen: &'a mut Vec<aco_core::colony::Outcome>,
    }

    impl crate::scheduler::Scheduler for Outcomes<'_> {
        fn name(&self) -> String {
            self.inner.name()
        }
        fn report(
            &mut self,
            w: &World,
            r: &[aco_core::api::nodes::NodeReport],
            t: u64,
        ) -> Result<(), Error> {
            self.inner.report(w, r, t)
        }
        fn schedule(
            &mut self,
            w: &World,
            a: &[crate::alloc::NodeAlloc],
            p: &SimPod,
            c: &[usize],
            t: u64,
            tie: &mut rand::rngs::StdRng,
        ) -> Result<Option<usize>, Error> {
            self.inner.schedule(w, a, p, c, t, tie)
        }
        fn placed(
            &mut self,
            w: &World,
            a: &[crate::alloc::NodeAlloc],
            p: &SimPod,
            n: usize,
            t: u64,
        ) -> Result<(), Error> {
            self.inner.placed(w, a, p, n, t)
        }
        fn outcome(
            &mut self,
            _: &World,
            _: &SimPod,
            _: usize,
            o: aco_core::colony::Outcome,
            _: u64,
        ) -> Result<(), Error> {
            self.seen.push(o);
            Ok(())
        }
        fn pheromones(&mut self, w: &World) -> Result<crate::scheduler::TenantTrails, Error> {
            self.inner.pheromones(w)
        }
    }

    #[test]
    fn completion_outcomes_report_departures_as_successes_and_no_qos_violation() {
        use aco_core::colony::Outcome;
        let s = segment(300);
        let placed = bindings(&s.simulate("first-fit").unwrap());
        let run = |outcomes: OutcomeReports| {
            let mut seen = Vec::new();
            let mut sched = Outcomes {
                inner: given::Given::new("ff", &s.world, &placed),
                seen: &mut seen,
            };
            let params = SimParams {
                outcomes,
                ..s.params.clone()
            };
            let r = crate::engine::run(&s.world, &s.load, &params, &mut sched).unwrap();
            (r.metrics, seen)
        };
        let (qos, qos_seen) = run(OutcomeReports::Qos);
        let (done, done_seen) = run(OutcomeReports::Completion);
        // The same placements, the same violations: only what is told differs.
        assert_eq!(qos.ls_compliance, done.ls_compliance);
        assert!(
            qos.ls_compliance < 1.0,
            "the segment breaks some LS pod's QoS"
        );
        let failures = |seen: &[Outcome]| {
            seen.iter()
                .filter(|o| {
                    matches!(o, Outcome::Quality(q) if *q < 1.0)
                        || matches!(o, Outcome::Observed(x) if x.quality < 1.0)
                })
                .count()
        };
        assert!(failures(&qos_seen) > 0);
        assert_eq!(failures(&done_seen), 0, "{done_seen:?}");
        assert!(done_seen
            .iter()
            .all(|o| matches!(o, Outcome::Quality(q) if *q == 1.0)));
        assert_eq!(done.outcomes_reported, done_seen.len());
        assert!(!done_seen.is_empty());
    }
}
