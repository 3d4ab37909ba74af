//! Progress of the long subcommands (`run`, `saturate`, `ablate`) as one `indicatif` bar on
//! stderr per sweep: pods decided over every run of the sweep (every policy, seed or variant,
//! on every thread), or whole runs where a run is not an event-driven simulation (the
//! saturation protocol). The bar is drawn only when stderr is a terminal and `--quiet` is not
//! given; lines printed through [`Progress::println`] go above it (or straight to stderr when it
//! is hidden). Nothing here reaches an output file: a run with the bar writes the same bytes as
//! one without (`crates/sim/tests/cli.rs` checks it on a terminal).

use std::collections::HashSet;
use std::io::IsTerminal;
use std::sync::{Arc, Once};

use aco_core::api::nodes::NodeReport;
use aco_core::colony::Outcome;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::StdRng;

use crate::alloc::NodeAlloc;
use crate::cluster::{SimPod, World};
use crate::engine::{RunResult, SimParams};
use crate::facts_report::ReportBatch;
use crate::load::LoadModel;
use crate::scheduler::{Scheduler, TenantTrails};
use crate::trace::Error;

/// Whether bars may be drawn (not `--quiet`); each is then drawn if stderr is a terminal.
#[derive(Debug, Clone, Copy)]
pub struct Display {
    enabled: bool,
}

impl Display {
    pub fn new(enabled: bool) -> Self {
        Display { enabled }
    }

    /// No bar, whatever stderr is (library callers, tests).
    pub fn hidden() -> Self {
        Display { enabled: false }
    }

    /// A bar over `runs` simulation runs counting the pods each decides; its length is set by
    /// the first run ([`Progress::counted`]), since every run of a sweep replays the same pods.
    pub fn pods(&self, runs: usize, label: &str) -> Progress {
        self.bar(runs, "pods", label)
    }

    /// A bar counting whole runs ([`Progress::run_done`]).
    pub fn runs(&self, runs: usize, label: &str) -> Progress {
        let p = self.bar(runs, "runs", label);
        p.size(1);
        p
    }

    fn bar(&self, runs: usize, unit: &str, label: &str) -> Progress {
        let draw = self.enabled && std::io::stderr().is_terminal();
        let target = if draw {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress::new(
            ProgressBar::with_draw_target(None, target),
            runs,
            unit,
            label,
        )
    }
}

/// One sweep's bar (cheap to clone; every clone moves the same bar).
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    runs: u64,
    sized: Arc<Once>,
}

impl Progress {
    fn new(bar: ProgressBar, runs: usize, unit: &str, label: &str) -> Self {
        let style = ProgressStyle::with_template(&format!(
            "{{msg}} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} ({{percent}}%), {{elapsed}} elapsed, eta {{eta}}"
        ))
        .expect("a valid template")
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(label.to_string());
        Progress {
            bar,
            runs: runs as u64,
            sized: Arc::new(Once::new()),
        }
    }

    /// A bar that is never drawn.
    pub fn hidden() -> Self {
        Display::hidden().runs(0, "")
    }

    /// A bar drawn to `target` whatever it is (tests of what the bar shows).
    pub fn to_target(target: ProgressDrawTarget, runs: usize, label: &str) -> Self {
        Progress::new(
            ProgressBar::with_draw_target(None, target),
            runs,
            "pods",
            label,
        )
    }

    pub fn is_hidden(&self) -> bool {
        self.bar.is_hidden()
    }

    fn size(&self, per_run: u64) {
        self.sized
            .call_once(|| self.bar.set_length(self.runs * per_run));
    }

    /// Runs `simulate` with `scheduler`, counting on the bar each pod it is asked to place
    /// (the first time only: evicted pods arrive again) and, once it returns, the pods it was
    /// never asked about (no node fitted them), so that a finished run has moved the bar by
    /// `pods`. A hidden bar hands `scheduler` over untouched.
    pub fn counted<R>(
        &self,
        pods: usize,
        scheduler: &mut dyn Scheduler,
        simulate: impl FnOnce(&mut dyn Scheduler) -> R,
    ) -> R {
        self.size(pods as u64);
        if self.is_hidden() {
            return simulate(scheduler);
        }
        let mut ticking = Ticking {
            inner: scheduler,
            bar: &self.bar,
            seen: HashSet::new(),
        };
        let r = simulate(&mut ticking);
        self.bar
            .inc((pods as u64).saturating_sub(ticking.seen.len() as u64));
        r
    }

    /// [`crate::engine::run`], its pods (every arrival, or the first `max_pods`) counted.
    pub fn run(
        &self,
        world: &World,
        load: &LoadModel,
        params: &SimParams,
        scheduler: &mut dyn Scheduler,
    ) -> Result<RunResult, Error> {
        let pods = params.max_pods.unwrap_or(usize::MAX).min(world.pods.len());
        self.counted(pods, scheduler, |s| {
            crate::engine::run(world, load, params, s)
        })
    }

    /// One whole run done (a bar from [`Display::runs`]).
    pub fn run_done(&self) {
        self.bar.inc(1);
    }

    /// A line above the bar, or on stderr when the bar is hidden.
    pub fn println(&self, line: impl AsRef<str>) {
        if self.is_hidden() {
            eprintln!("{}", line.as_ref());
        } else {
            self.bar.println(line);
        }
    }

    /// Clears the bar (the sweep is over).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A scheduler that counts the pods it is asked to place and otherwise is `inner`: every
/// method of [`Scheduler`] is passed through, default ones included, so that wrapping changes
/// no decision (`crates/sim/tests/cli.rs` compares the files of runs with and without it).
struct Ticking<'a> {
    inner: &'a mut dyn Scheduler,
    bar: &'a ProgressBar,
    seen: HashSet<usize>,
}

impl Scheduler for Ticking<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn report(&mut self, world: &World, reports: &[NodeReport], now_ms: u64) -> Result<(), Error> {
        self.inner.report(world, reports, now_ms)
    }
    fn report_batch(
        &mut self,
        world: &World,
        batch: &ReportBatch,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.inner.report_batch(world, batch, now_ms)
    }
    fn schedule(
        &mut self,
        world: &World,
        alloc: &[NodeAlloc],
        pod: &SimPod,
        candidates: &[usize],
        now_ms: u64,
        tie: &mut StdRng,
    ) -> Result<Option<usize>, Error> {
        if self.seen.insert(pod.idx) {
            self.bar.inc(1);
        }
        self.inner
            .schedule(world, alloc, pod, candidates, now_ms, tie)
    }
    fn placed(
        &mut self,
        world: &World,
        alloc: &[NodeAlloc],
        pod: &SimPod,
        node: usize,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.inner.placed(world, alloc, pod, node, now_ms)
    }
    fn outcome(
        &mut self,
        world: &World,
        pod: &SimPod,
        node: usize,
        outcome: Outcome,
        now_ms: u64,
    ) -> Result<(), Error> {
        self.inner.outcome(world, pod, node, outcome, now_ms)
    }
    fn reclaimed(&mut self, world: &World, node: usize, now_ms: u64) -> Result<(), Error> {
        self.inner.reclaimed(world, node, now_ms)
    }
    fn pheromones(&mut self, world: &World) -> Result<TenantTrails, Error> {
        self.inner.pheromones(world)
    }
    fn tie_stats(&self) -> (usize, usize) {
        self.inner.tie_stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::run;
    use crate::native::NativeScheduler;
    use crate::policy;
    use crate::predictor::PredictorKind;
    use indicatif::TermLike;
    use std::sync::Mutex;

    /// A terminal that keeps everything written to it.
    #[derive(Debug, Clone, Default)]
    struct Recorder(Arc<Mutex<String>>);

    impl Recorder {
        fn text(&self) -> String {
            self.0.lock().unwrap().clone()
        }
    }

    impl TermLike for Recorder {
        fn width(&self) -> u16 {
            200
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            *self.0.lock().unwrap() += &format!("{s}\n");
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            *self.0.lock().unwrap() += s;
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn colony(world: &World) -> NativeScheduler {
        NativeScheduler::new(
            policy::by_name("colony", 1).unwrap(),
            world.config.clone(),
            PredictorKind::Ema(world.config.load.ema_alpha),
        )
    }

    /// Counting through the wrapper changes no decision, and a finished run has moved the bar
    /// by every pod, the ones no node fitted included.
    #[test]
    fn a_counted_run_places_as_a_plain_one_and_fills_the_bar() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let world = crate::cluster::sample_world(&root, 1).unwrap();
        let params = SimParams {
            max_pods: Some(120),
            pheromone_samples: 1,
            ..SimParams::default()
        };
        let load = LoadModel::default();
        let plain = run(&world, &load, &params, &mut colony(&world)).unwrap();
        let term = Recorder::default();
        let progress = Progress::to_target(
            ProgressDrawTarget::term_like(Box::new(term.clone())),
            2,
            "colony",
        );
        assert!(!progress.is_hidden());
        let mut s = colony(&world);
        let counted = progress
            .counted(120, &mut s, |s| run(&world, &load, &params, s))
            .unwrap();
        assert_eq!(counted.placements, plain.placements);
        assert_eq!(counted.metrics.cost_busy_usd, plain.metrics.cost_busy_usd);
        assert_eq!(counted.metrics.ls_compliance, plain.metrics.ls_compliance);
        assert_eq!(progress.bar.position(), 120);
        assert_eq!(progress.bar.length(), Some(240));
        progress.println("colony done");
        let screen = term.text();
        assert!(screen.contains("colony done"), "{screen}");
        assert!(screen.contains("/240 pods"), "{screen}");
    }

    #[test]
    fn a_hidden_bar_counts_nothing_and_passes_the_scheduler_through() {
        let progress = Display::hidden().pods(3, "x");
        assert!(progress.is_hidden());
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let world = crate::cluster::sample_world(&root, 1).unwrap();
        let mut s = colony(&world);
        let name = progress.counted(10, &mut s, |s| s.name());
        assert_eq!(name, colony(&world).name());
        let runs = Display::new(true).runs(4, "saturate");
        runs.run_done();
        assert_eq!(runs.bar.length(), Some(4));
    }
}
