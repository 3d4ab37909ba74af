//! Saturation tables (mean ± sd over seeds, with the published means beside), curve CSV and SVG.

use std::path::Path;

use plotters::prelude::*;

use super::SatRun;
use crate::report::mean_sd;
use crate::trace::Error;

/// Published means (ATC '23, `data/fgd/`): policy → (at 100%, at 130%).
pub fn published(csv: &str, workload: &str) -> Vec<(String, f64, f64)> {
    let map = |p: &str| match p {
        "01-Random" => "random",
        "02-DotProd" => "dot-product",
        "03-GpuClustering" => "gpu-clustering",
        "04-GpuPacking" => "gpu-packing",
        "05-BestFit" => "best-fit",
        "06-FGD" => "fgd",
        _ => "",
    };
    csv.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 6 || f[0] != format!("openb_pod_list_{workload}") {
                return None;
            }
            Some((
                map(f[1]).to_string(),
                f[2].parse().ok()?,
                f[5].parse().ok()?,
            ))
        })
        .filter(|(p, _, _)| !p.is_empty())
        .collect()
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SatRow {
    pub policy: String,
    pub seeds: usize,
    pub at100_mean: f64,
    pub at100_sd: f64,
    pub at130_mean: f64,
    pub at130_sd: f64,
    pub failed_mean: f64,
    /// Feasible nodes each placed pod's policy saw (kube-scheduler's sample or all).
    pub candidates_per_pod: f64,
    pub decisions_per_s: f64,
    pub published: Option<(f64, f64)>,
}

pub fn rows(runs: &[SatRun], order: &[String], published: &[(String, f64, f64)]) -> Vec<SatRow> {
    order
        .iter()
        .map(|p| {
            let rs: Vec<&SatRun> = runs.iter().filter(|r| &r.policy == p).collect();
            let (a, asd) = mean_sd(&rs.iter().map(|r| r.at100).collect::<Vec<_>>());
            let (b, bsd) = mean_sd(&rs.iter().map(|r| r.at130).collect::<Vec<_>>());
            SatRow {
                policy: p.clone(),
                seeds: rs.len(),
                at100_mean: a,
                at100_sd: asd,
                at130_mean: b,
                at130_sd: bsd,
                failed_mean: mean_sd(&rs.iter().map(|r| r.failed as f64).collect::<Vec<_>>()).0,
                candidates_per_pod: mean_sd(
                    &rs.iter().map(|r| r.candidates_per_pod).collect::<Vec<_>>(),
                )
                .0,
                decisions_per_s: mean_sd(&rs.iter().map(|r| r.decisions_per_s).collect::<Vec<_>>())
                    .0,
                published: published
                    .iter()
                    .find(|(q, _, _)| q == p)
                    .map(|(_, x, y)| (*x, *y)),
            }
        })
        .collect()
}

pub fn table(rows: &[SatRow]) -> String {
    let mut s = String::from("| policy | seeds | GPU alloc % at 100% arrived | at 130% | published (100 / 130) | Δ at 100 / 130 | failed pods | candidates / pod | decisions/s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let (pb, d) = match r.published {
            Some((x, y)) => (
                format!("{x:.2} / {y:.2}"),
                format!("{:+.2} / {:+.2}", r.at100_mean - x, r.at130_mean - y),
            ),
            None => ("–".into(), "–".into()),
        };
        s += &format!(
            "| {} | {} | {:.2} ± {:.2} | {:.2} ± {:.2} | {} | {} | {:.0} | {:.0} | {:.0} |\n",
            r.policy,
            r.seeds,
            r.at100_mean,
            r.at100_sd,
            r.at130_mean,
            r.at130_sd,
            pb,
            d,
            r.failed_mean,
            r.candidates_per_pod,
            r.decisions_per_s
        );
    }
    s
}

/// The policies whose published means the reproduction check compares.
pub const CHECKED: [&str; 2] = ["fgd", "best-fit"];

/// One policy's reproduction on one variant: our means against the published ones.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Reproduction {
    pub variant: String,
    /// The folder the pod list was read from.
    pub source: String,
    pub policy: String,
    pub seeds: usize,
    /// (at 100% arrived, at 130%).
    pub ours: (f64, f64),
    pub published: (f64, f64),
    pub pass: bool,
}

/// The reproduction check of one variant's rows: FGD and Best-fit within `tol` points of the
/// published means at both 100% and 130% arrived (rows without published means are skipped).
pub fn reproduction(variant: &str, source: &str, rows: &[SatRow], tol: f64) -> Vec<Reproduction> {
    rows.iter()
        .filter(|r| CHECKED.contains(&r.policy.as_str()))
        .filter_map(|r| {
            let (x, y) = r.published?;
            Some(Reproduction {
                variant: variant.to_string(),
                source: source.to_string(),
                policy: r.policy.clone(),
                seeds: r.seeds,
                ours: (r.at100_mean, r.at130_mean),
                published: (x, y),
                pass: (r.at100_mean - x).abs() <= tol && (r.at130_mean - y).abs() <= tol,
            })
        })
        .collect()
}

/// The check as one line per policy (under a variant's table).
pub fn check(repro: &[Reproduction], tol: f64) -> Vec<String> {
    repro
        .iter()
        .map(|r| {
            format!(
                "{}: {:.2} / {:.2} vs published {:.2} / {:.2} → {}",
                r.policy,
                r.ours.0,
                r.ours.1,
                r.published.0,
                r.published.1,
                verdict(r.pass, tol)
            )
        })
        .collect()
}

fn verdict(pass: bool, tol: f64) -> String {
    if pass {
        format!("within ±{tol}: PASS")
    } else {
        format!("outside ±{tol}: MISS")
    }
}

/// Every variant's check in one table: variant × {FGD, Best-fit} × {100%, 130%}, ours against
/// published (Δ).
pub fn reproduction_table(all: &[Reproduction], tol: f64) -> String {
    let cell = |ours: f64, published: f64| {
        format!("{ours:.2} / {published:.2} ({:+.2})", ours - published)
    };
    let mut s = String::from(
        "| variant | pod list from | policy | seeds | at 100% arrived: ours / published (Δ) | at 130% | check |\n|---|---|---|---:|---:|---:|---|\n",
    );
    for r in all {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.variant,
            r.source,
            r.policy,
            r.seeds,
            cell(r.ours.0, r.published.0),
            cell(r.ours.1, r.published.1),
            if r.pass { "PASS" } else { "**MISS**" }
        );
    }
    let missed = all.iter().filter(|r| !r.pass).count();
    s += &format!(
        "\n{} of {} checks within ±{tol} points of the published means ({} variants).\n",
        all.len() - missed,
        all.len(),
        all.iter()
            .map(|r| r.variant.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    );
    s
}

/// Mean curve per policy on the 0.5% grid (arrived %, allocation %).
pub fn mean_curves(runs: &[SatRun], order: &[String]) -> Vec<(String, Vec<(f64, f64)>)> {
    order
        .iter()
        .map(|p| {
            let rs: Vec<&SatRun> = runs.iter().filter(|r| &r.policy == p).collect();
            let pts = (0..=260)
                .map(|k| {
                    let x = k as f64 * 0.5;
                    let ys: Vec<f64> = rs
                        .iter()
                        .filter_map(|r| {
                            r.curve
                                .iter()
                                .find(|(a, _)| *a >= x)
                                .or(r.curve.last())
                                .map(|q| q.1)
                        })
                        .collect();
                    (x, ys.iter().sum::<f64>() / ys.len().max(1) as f64)
                })
                .collect();
            (p.clone(), pts)
        })
        .collect()
}

pub fn write_csv(path: &Path, curves: &[(String, Vec<(f64, f64)>)]) -> Result<(), Error> {
    let mut s = String::from("policy,arrived_pct,alloc_pct\n");
    for (p, pts) in curves {
        for (x, y) in pts {
            s += &format!("{p},{x:.1},{y:.3}\n");
        }
    }
    std::fs::write(path, s)?;
    Ok(())
}

pub fn write_svg(
    path: &Path,
    title: &str,
    curves: &[(String, Vec<(f64, f64)>)],
) -> Result<(), Error> {
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let y_min = curves
        .iter()
        .flat_map(|(_, p)| p.iter().filter(|q| q.0 >= 60.0).map(|q| q.1))
        .fold(100.0, f64::min)
        .floor()
        .max(0.0);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(60.0..130.0, y_min..100.0)?;
    chart
        .configure_mesh()
        .x_desc("arrived workload (% of GPU capacity)")
        .y_desc("GPU allocation ratio (%)")
        .draw()?;
    for (i, (name, pts)) in curves.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                pts.iter().copied().filter(|q| q.0 >= 60.0),
                color.stroke_width(2),
            ))?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(policy: &str, at100: f64, at130: f64, published: Option<(f64, f64)>) -> SatRow {
        SatRow {
            policy: policy.into(),
            seeds: 10,
            at100_mean: at100,
            at100_sd: 0.1,
            at130_mean: at130,
            at130_sd: 0.1,
            failed_mean: 0.0,
            candidates_per_pod: 0.0,
            decisions_per_s: 1.0,
            published,
        }
    }

    #[test]
    fn the_reproduction_check_needs_both_points_within_the_tolerance() {
        let rows = [
            row("fgd", 95.24, 95.40, Some((95.23, 95.39))),
            row("best-fit", 92.0, 93.1, Some((92.86, 93.08))),
            row("random", 80.0, 80.0, Some((86.30, 87.47))),
            row("first-fit", 94.2, 94.4, None),
        ];
        let r = reproduction("default", "shipped", &rows, 0.5);
        assert_eq!(
            r.iter()
                .map(|r| (r.policy.as_str(), r.pass))
                .collect::<Vec<_>>(),
            vec![("fgd", true), ("best-fit", false)],
            "only FGD and Best-fit are checked; 0.86 off at 100% misses"
        );
        assert_eq!(r[1].ours, (92.0, 93.1));
        let lines = check(&r, 0.5);
        assert!(lines[0].ends_with("within ±0.5: PASS"), "{}", lines[0]);
        assert!(lines[1].ends_with("outside ±0.5: MISS"), "{}", lines[1]);
        let mut more = r.clone();
        more.extend(reproduction(
            "gpuspec33",
            "extra",
            &[row("fgd", 87.79, 94.47, Some((87.84, 94.55)))],
            0.5,
        ));
        let t = reproduction_table(&more, 0.5);
        assert!(t.contains("| gpuspec33 | extra | fgd | 10 | 87.79 / 87.84 (-0.05) | 94.47 / 94.55 (-0.08) | PASS |"), "{t}");
        assert!(
            t.contains("| default | shipped | best-fit | 10 | 92.00 / 92.86 (-0.86) |"),
            "{t}"
        );
        assert!(
            t.contains("2 of 3 checks within ±0.5 points of the published means (2 variants)."),
            "{t}"
        );
    }
}
