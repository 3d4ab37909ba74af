//! Markdown / JSON tables and SVG plots (plotters, SVG backend).

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use crate::engine::{Metrics, RunResult};
use crate::trace::Error;

pub fn markdown_table(rows: &[Metrics]) -> String {
    let mut s = String::from(
        "| policy | cost $ (busy nodes) | vs first-fit | nodes used | placed | unplaced | GPU unallocated | LS QoS compliance | LS violations alone on node | safe-node routing | decisions/s |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let ff = rows
        .iter()
        .find(|m| m.policy == "first-fit")
        .map(|m| m.cost_busy_usd);
    for m in rows {
        let vs = ff.filter(|f| *f > 0.0).map_or("–".to_string(), |f| {
            format!("{:+.1}%", 100.0 * (m.cost_busy_usd / f - 1.0))
        });
        s += &format!(
            "| {} | {:.0} | {} | {} | {} | {} | {:.2} | {:.2}% ({}/{}) | {} of {} | {:.2}% | {:.0} |\n",
            m.policy, m.cost_busy_usd, vs, m.nodes_used, m.placed, m.unplaced, m.gpu_unallocated,
            100.0 * m.ls_compliance, m.ls_compliant, m.ls_placed, m.ls_violated_alone, m.ls_placed - m.ls_compliant,
            100.0 * m.safe_routing_rate, m.decisions_per_s
        );
    }
    s += "\nTop-score ties (decisions where ≥ 2 nodes shared the best score, resolved at random; mean nodes tied): ";
    s += &rows
        .iter()
        .map(|m| {
            format!(
                "{} {} ({:.1})",
                m.policy, m.decisions_with_top_ties, m.mean_top_tie_size
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    s += ".\n";
    if let Some(m) = rows.first() {
        s += &format!("\nAll nodes always on (same for every policy): ${:.0}. Pods: {}, GPUs requested: {:.1}.\n", m.cost_all_on_usd, m.pods, m.gpu_requested);
    }
    s
}

fn downsample<T: Clone>(v: &[T], n: usize) -> Vec<T> {
    if v.len() <= n {
        return v.to_vec();
    }
    let step = v.len() as f64 / n as f64;
    let mut out: Vec<T> = (0..n)
        .map(|i| v[(i as f64 * step) as usize].clone())
        .collect();
    out.push(v[v.len() - 1].clone());
    out
}

fn line_chart(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), Error> {
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .fold(0.0, f64::max)
        .max(1e-9);
    let y_max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc("hours since first arrival")
        .y_desc(y_label)
        .draw()?;
    for (i, (name, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
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
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

/// `<prefix>-cost.svg`, `<prefix>-qos-violations.svg`, `<prefix>-pheromone-<tenant>.svg`.
pub fn plots(dir: &Path, prefix: &str, runs: &[RunResult]) -> Result<Vec<String>, Error> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let cost: Vec<(String, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|r| (r.metrics.policy.clone(), downsample(&r.cost_timeline, 400)))
        .collect();
    let name = format!("{prefix}-cost.svg");
    line_chart(
        &dir.join(&name),
        "Cumulative cost (node billed while ≥ 1 pod runs)",
        "US$",
        &cost,
    )?;
    written.push(name);
    let qos: Vec<(String, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|r| {
            let end = r.cost_timeline.last().map_or(0.0, |p| p.0);
            let mut pts = vec![(0.0, 0.0)];
            pts.extend(
                downsample(&r.violation_timeline, 400)
                    .iter()
                    .map(|(h, n)| (*h, *n as f64)),
            );
            pts.push((end, r.violation_timeline.last().map_or(0.0, |v| v.1 as f64)));
            (r.metrics.policy.clone(), pts)
        })
        .collect();
    let name = format!("{prefix}-qos-violations.svg");
    line_chart(
        &dir.join(&name),
        "Cumulative LS pods with an SLA violation",
        "LS pods",
        &qos,
    )?;
    written.push(name);
    for r in runs.iter().filter(|r| !r.pheromone_timeline.is_empty()) {
        type Series<'a> = BTreeMap<&'a str, Vec<(f64, f64)>>;
        let mut by_tenant: BTreeMap<&str, Series> = BTreeMap::new();
        for (h, tenant, node, tau) in &r.pheromone_timeline {
            by_tenant
                .entry(tenant)
                .or_default()
                .entry(node)
                .or_default()
                .push((*h, *tau));
        }
        for (tenant, nodes) in by_tenant {
            let mut series: Vec<(String, Vec<(f64, f64)>)> =
                nodes.into_iter().map(|(n, p)| (n.to_string(), p)).collect();
            series.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
            series.truncate(10);
            let name = format!("{prefix}-pheromone-{tenant}.svg");
            line_chart(
                &dir.join(&name),
                &format!("Pheromone τ per node over time — tenant {tenant} (top nodes)"),
                "τ",
                &series,
            )?;
            written.push(name);
        }
    }
    Ok(written)
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct AblationRow {
    pub predictor: String,
    pub seeds: usize,
    pub safe_routing_mean: f64,
    pub safe_routing_sd: f64,
    pub safe_routing_min: f64,
    pub safe_routing_max: f64,
    pub ls_compliance_mean: f64,
    pub cost_mean: f64,
}

impl AblationRow {
    /// One predictor's row from its per-seed safe-routing rates, LS QoS compliances and costs.
    pub fn from_seeds(predictor: String, safe: &[f64], qos: &[f64], cost: &[f64]) -> Self {
        let (safe_routing_mean, safe_routing_sd) = mean_sd(safe);
        AblationRow {
            predictor,
            seeds: safe.len(),
            safe_routing_mean,
            safe_routing_sd,
            safe_routing_min: safe.iter().copied().fold(1.0, f64::min),
            safe_routing_max: safe.iter().copied().fold(0.0, f64::max),
            ls_compliance_mean: mean_sd(qos).0,
            cost_mean: mean_sd(cost).0,
        }
    }
}

pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var.sqrt())
}

pub fn ablation_table(rows: &[AblationRow]) -> String {
    let mut s = String::from("| predictor | seeds | safe-node routing mean ± sd | min – max | LS QoS compliance (mean) | cost $ (mean) |\n|---|---:|---:|---:|---:|---:|\n");
    for r in rows {
        s += &format!(
            "| {} | {} | {:.2}% ± {:.2} | {:.2}% – {:.2}% | {:.2}% | {:.0} |\n",
            r.predictor,
            r.seeds,
            100.0 * r.safe_routing_mean,
            100.0 * r.safe_routing_sd,
            100.0 * r.safe_routing_min,
            100.0 * r.safe_routing_max,
            100.0 * r.ls_compliance_mean,
            r.cost_mean
        );
    }
    s
}
