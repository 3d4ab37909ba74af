//! Equivalence vectors for the Go FGD of the real-kube replay (`scripts/kube/plugins`: the
//! AcoFGD score plugin and AcoGpuDevices' share choices): node states, pods and typical shapes
//! with what this crate's FGD answers — F before, ΔF, the integer score, the GPU each share
//! choice takes, whether the devices fit. The Go test (`scripts/kube/plugins/fgd`) asserts it
//! gives the same answers.
//!
//! The vectors are generated here and compared with the committed file, so a change to the
//! Rust FGD that changes an answer fails this test until the file is rewritten
//! (`ACO_WRITE_FGD_VECTORS=1 cargo test -p aco-sim --test fgd_vectors`) and the Go test run
//! against it.

use std::path::PathBuf;

use aco_core::heuristic::{
    fragmentation, fragmentation_delta, share_deltas, typical_shapes, PodGpus, PodShape,
    OPENB_DEFAULT_SHAPES,
};
use aco_sim::rng;
use aco_sim::saturate::node::SatNode;
use aco_sim::saturate::policy::fgd::{fgd_score, state_verdict, FgdMemo, NodeFree, ShareGpu};
use aco_sim::trace::{TraceNode, TracePod};
use serde_json::{json, Value};

const MODELS: [&str; 5] = ["V100M16", "V100M32", "T4", "P100", "G2"];

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/kube/plugins/fgd/testdata/vectors.json")
}

fn gpus(cpu: i64, n: u32, m: u32) -> PodGpus {
    PodGpus {
        cpu_milli: cpu,
        num_gpu: n,
        gpu_milli: m,
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Shapes derived by the simulator's rule from a seeded workload in which about a third of the
/// GPU pods name GPU models (as OpenB's gpuspec variants do).
fn constrained_shapes() -> Vec<PodShape> {
    let specs: [Option<Vec<String>>; 4] = [
        None,
        Some(strings(&["T4"])),
        Some(strings(&["V100M16", "V100M32"])),
        Some(strings(&["P100", "T4", "V100M16"])),
    ];
    let sizes = [
        gpus(4000, 1, 500),
        gpus(8000, 1, 1000),
        gpus(12000, 2, 1000),
        gpus(2000, 1, 250),
        gpus(16000, 0, 0),
        gpus(6000, 1, 460),
        gpus(32000, 4, 1000),
    ];
    let pods: Vec<(PodGpus, Option<Vec<String>>)> = (0..400u64)
        .map(|i| {
            let size = sizes[(rng::hash(&[7, i]) % sizes.len() as u64) as usize];
            let spec = if rng::unit(&[8, i]) < 0.35 {
                specs[(rng::hash(&[9, i]) % specs.len() as u64) as usize].clone()
            } else {
                None
            };
            (size, spec)
        })
        .collect();
    typical_shapes(pods.iter().map(|(p, s)| (*p, s.as_deref())), 0.95)
}

/// Small lists whose arithmetic is easy to follow, one with a shape naming one model.
fn tiny_shapes() -> Vec<PodShape> {
    let shape = |cpu, n, m, models: Option<&[&str]>, freq| PodShape {
        cpu_milli: cpu,
        num_gpu: n,
        gpu_milli: m,
        gpu_models: models.map(strings),
        freq,
    };
    vec![
        shape(1000, 1, 500, None, 0.4),
        shape(4000, 1, 1000, None, 0.3),
        shape(2000, 2, 1000, Some(&["T4"]), 0.2),
        shape(8000, 0, 0, None, 0.1),
    ]
}

fn shapes_json(shapes: &[PodShape]) -> Value {
    shapes
        .iter()
        .map(|s| {
            json!({"cpuMilli": s.cpu_milli, "numGpu": s.num_gpu, "gpuMilli": s.gpu_milli,
                   "gpuModels": s.gpu_models, "frequency": s.freq})
        })
        .collect()
}

struct Case {
    shapes: &'static str,
    model: Option<String>,
    cpu_free: i64,
    gpu_free: Vec<u32>,
    pod: PodGpus,
}

/// Free milli of one GPU: often idle or full, else a multiple of 10 (OpenB's granularity).
fn gpu_free(keys: &[u64]) -> u32 {
    match rng::hash(keys) % 5 {
        0 | 1 => 1000,
        2 => 0,
        _ => (rng::hash(&[keys, &[1]].concat()) % 101) as u32 * 10,
    }
}

/// A hand-picked case: shape set, node model, free CPU, free milli per GPU, pod.
type Fixed = (
    &'static str,
    Option<&'static str>,
    i64,
    &'static [u32],
    PodGpus,
);

fn cases() -> Vec<Case> {
    let pods = [
        gpus(4000, 1, 500),
        gpus(3152, 1, 810),
        gpus(6000, 1, 460),
        gpus(2000, 1, 250),
        gpus(8000, 1, 1000),
        gpus(12000, 2, 1000),
        gpus(32000, 4, 1000),
        gpus(64000, 8, 1000),
        gpus(12500, 0, 0),
        gpus(500, 0, 0),
    ];
    let mut out = Vec::new();
    // Hand-picked: the Rust unit tests' states, a node with no GPUs, not enough CPU, ties.
    let fixed: [Fixed; 9] = [
        ("tiny", None, 8000, &[500, 1000], gpus(1000, 1, 500)),
        ("tiny", Some("T4"), 8000, &[500, 1000], gpus(1000, 1, 500)),
        ("tiny", Some("T4"), 8000, &[1000, 1000], gpus(1000, 2, 1000)),
        ("tiny", None, 8000, &[400, 300], gpus(1000, 1, 500)),
        ("tiny", None, 500, &[1000], gpus(1000, 1, 500)),
        ("tiny", None, 8000, &[0, 1000, 1000], gpus(1, 2, 1000)),
        ("tiny", None, 8000, &[], gpus(1000, 0, 0)),
        ("openbDefault", None, 96000, &[1000; 8], gpus(3152, 1, 810)),
        (
            "openbDefault",
            Some("V100M32"),
            64000,
            &[600, 600, 1000, 1000],
            gpus(4000, 1, 320),
        ),
    ];
    for (shapes, model, cpu, free, pod) in fixed {
        out.push(Case {
            shapes,
            model: model.map(String::from),
            cpu_free: cpu,
            gpu_free: free.to_vec(),
            pod,
        });
    }
    for i in 0..360u64 {
        let shapes = ["openbDefault", "constrained", "tiny"][(i % 3) as usize];
        let n_gpu = [1usize, 2, 4, 8, 8, 2][(rng::hash(&[1, i]) % 6) as usize];
        let model = match rng::hash(&[2, i]) % 6 {
            5 => None,
            m => Some(MODELS[m as usize].to_string()),
        };
        let cpu_free = (rng::hash(&[3, i]) % 97) as i64 * 1000;
        let gpu_free = (0..n_gpu as u64).map(|g| gpu_free(&[4, i, g])).collect();
        let pod = pods[(rng::hash(&[5, i]) % pods.len() as u64) as usize];
        out.push(Case {
            shapes,
            model,
            cpu_free,
            gpu_free,
            pod,
        });
    }
    out
}

/// The saturation protocol's device fit and best-fit GPU, read through `SatNode` itself.
fn sat_node(c: &Case) -> SatNode {
    let mut n = SatNode::new(
        0,
        &TraceNode {
            name: "n".into(),
            cpu_milli: c.cpu_free,
            memory_mib: 1 << 30,
            gpus: c.gpu_free.len() as u32,
            model: c.model.clone(),
        },
    );
    n.gpu_free = c.gpu_free.clone();
    n
}

fn trace_pod(p: PodGpus) -> TracePod {
    TracePod {
        name: "p".into(),
        cpu_milli: p.cpu_milli,
        memory_mib: 0,
        num_gpu: p.num_gpu,
        gpu_milli: p.gpu_milli,
        gpu_spec: None,
        qos: String::new(),
        creation_s: 0,
        deletion_s: None,
    }
}

fn case_json(c: &Case, shapes: &[PodShape]) -> Value {
    let model = c.model.as_deref();
    let free = NodeFree {
        model,
        cpu_left: c.cpu_free,
        gpu_free: &c.gpu_free,
    };
    let first = state_verdict(
        &mut FgdMemo::new(),
        free,
        c.pod,
        shapes,
        ShareGpu::FirstBestScore,
    );
    let best = fragmentation_delta(c.cpu_free, &c.gpu_free, model, c.pod, shapes);
    let share = c.pod.num_gpu == 1 && c.pod.gpu_milli > 0 && c.pod.gpu_milli < 1000;
    let node = sat_node(c);
    let pod = trace_pod(c.pod);
    // The device fit alone (CPU is kube-scheduler's NodeResourcesFit's): the SatNode fit with
    // all the CPU it could want.
    let mut roomy = node.clone();
    roomy.cpu_left = i64::MAX / 2;
    json!({
        "shapes": c.shapes,
        "node": {"model": c.model, "cpuFree": c.cpu_free, "gpuFree": c.gpu_free},
        "pod": {"cpuMilli": c.pod.cpu_milli, "numGpu": c.pod.num_gpu, "gpuMilli": c.pod.gpu_milli},
        "fragmentationBefore": fragmentation(c.cpu_free, &c.gpu_free, model, shapes),
        "fits": first.is_some(),
        "devicesFit": roomy.fits(&pod),
        "delta": first.map(|(d, _)| d),
        "score": first.map_or(0, |(d, _)| fgd_score(d)),
        "bestGradient": best.as_ref().map(|(d, g)| json!({"delta": d, "gpus": g})),
        "shareGpuFirstBestScore": first.and_then(|(_, g)| g),
        "shareGpuBestFit": if share { node.best_fit_gpu(c.pod.gpu_milli) } else { None },
        "shareDeltas": if share {
            share_deltas(c.cpu_free, &c.gpu_free, model, c.pod, shapes)
                .into_iter()
                .map(|(g, d)| json!([g, d]))
                .collect::<Vec<_>>()
        } else {
            Vec::new()
        },
    })
}

fn vectors() -> Value {
    let sets = [
        ("openbDefault", OPENB_DEFAULT_SHAPES.to_vec()),
        ("constrained", constrained_shapes()),
        ("tiny", tiny_shapes()),
    ];
    let shapes_of = |name: &str| &sets.iter().find(|(n, _)| *n == name).unwrap().1;
    let cases: Vec<Value> = cases()
        .iter()
        .map(|c| case_json(c, shapes_of(c.shapes)))
        .collect();
    json!({
        "about": "Generated by crates/sim/tests/fgd_vectors.rs from the Rust FGD (aco-core fragmentation, aco-sim's FGD policy and SatNode); checked by scripts/kube/plugins/fgd/vectors_test.go. Do not edit by hand.",
        "shapeSets": sets.iter().map(|(n, s)| (n.to_string(), shapes_json(s))).collect::<serde_json::Map<_, _>>(),
        "cases": cases,
    })
}

#[test]
fn the_committed_vectors_are_what_the_rust_fgd_answers() {
    let want = vectors();
    let path = vectors_path();
    if std::env::var_os("ACO_WRITE_FGD_VECTORS").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&want).unwrap() + "\n").unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (write it with ACO_WRITE_FGD_VECTORS=1)",
            path.display()
        )
    });
    let have: Value = serde_json::from_str(&text).unwrap();
    assert!(
        have == want,
        "{} differs from what the Rust FGD answers now: rewrite it with ACO_WRITE_FGD_VECTORS=1 and run the Go test (scripts/kube/plugins)",
        path.display()
    );
}

#[test]
fn the_vectors_cover_every_kind_of_case() {
    let v = vectors();
    let cases = v["cases"].as_array().unwrap();
    let count = |f: &dyn Fn(&Value) -> bool| cases.iter().filter(|c| f(c)).count();
    let num_gpu = |c: &Value| c["pod"]["numGpu"].as_u64().unwrap();
    let milli = |c: &Value| c["pod"]["gpuMilli"].as_u64().unwrap();
    let kinds: [(&str, usize); 8] = [
        (
            "fitting shares",
            count(&|c| num_gpu(c) == 1 && milli(c) < 1000 && c["fits"] == true),
        ),
        (
            "multi-GPU pods that fit",
            count(&|c| num_gpu(c) > 1 && c["fits"] == true),
        ),
        ("CPU-only pods", count(&|c| num_gpu(c) == 0)),
        ("nodes that do not fit", count(&|c| c["fits"] == false)),
        (
            "devices that do not fit",
            count(&|c| c["devicesFit"] == false),
        ),
        (
            "constrained shapes",
            count(&|c| c["shapes"] == "constrained"),
        ),
        (
            "shares where the two FGD choices differ",
            count(&|c| {
                !c["shareGpuFirstBestScore"].is_null()
                    && c["bestGradient"]["gpus"][0] != c["shareGpuFirstBestScore"]
            }),
        ),
        (
            "shares where FGD and best fit differ",
            count(&|c| {
                !c["shareGpuFirstBestScore"].is_null()
                    && c["shareGpuBestFit"] != c["shareGpuFirstBestScore"]
            }),
        ),
    ];
    for (kind, n) in kinds {
        assert!(n >= 3, "only {n} vectors of {kind}");
    }
    let constrained = &v["shapeSets"]["constrained"];
    assert!(
        constrained
            .as_array()
            .unwrap()
            .iter()
            .any(|s| !s["gpuModels"].is_null()),
        "the constrained set names GPU models"
    );
}
