//! Pheromone τ per node over the replay, one chart per tenant: the `TOP` nodes whose τ moved
//! farthest from 1 (what the trail learned most about, for or against) as lines, the rest as one
//! dashed line of their mean, and a legend naming each line's node, GPU model and final τ.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::svg::{colour, esc, legend_row, num, points, short, Frame, Swatch, MUTED};
use crate::replay_record::ReplayRecord;

/// Nodes drawn one line each per tenant.
pub const TOP: usize = 6;
const PLOT_W: f64 = 560.0;
const HEIGHT: f64 = 240.0;
const LEGEND_W: f64 = 330.0;

/// One tenant's τ per node: `node → [(step, τ)]`, steps ascending.
fn series(record: &ReplayRecord, tenant: &str) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for sample in &record.trails {
        for (_, rows) in sample.tenants.iter().filter(|(t, _)| t == tenant) {
            for (node, tau) in rows {
                out.entry(node.clone())
                    .or_default()
                    .push((sample.step as f64, *tau));
            }
        }
    }
    out
}

/// The tenants to draw: the record's, then any that only appear in the samples.
fn tenants(record: &ReplayRecord) -> Vec<String> {
    let mut out = record.tenants.clone();
    for sample in &record.trails {
        for (t, _) in &sample.tenants {
            if !out.contains(t) {
                out.push(t.clone());
            }
        }
    }
    out
}

/// The section: a chart per tenant, or a note when nothing was sampled.
pub fn section(record: &ReplayRecord) -> String {
    let mut s = String::from("<section><h2>Pheromone τ per node, per tenant</h2>");
    let tenants = tenants(record);
    if record.trails.is_empty() || tenants.is_empty() {
        s.push_str(r#"<p class="nodata">No data: no pheromone table was sampled.</p></section>"#);
        return s;
    }
    let _ = write!(
        s,
        "<p>τ as <code>GET /v1/tenants/{{t}}/pheromones</code> answered at {} sample(s): what the tenant's outcomes on the node taught, \
         <code>exp(−learned $/h / COST_REFERENCE)</code> for a batch pod paying <code>COST_REFERENCE</code> $/h there. 1 is nothing learned against the node; \
         below 1 its pods failed or ran slow, and τ climbs back as those outcomes fade (<code>OUTCOME_HALF_LIFE_MS</code>); above 1 they ran fast. \
         The {TOP} nodes whose τ moved farthest from 1 get a line each; a node's line starts at the first sample after its first outcome.</p>",
        record.trails.len()
    );
    for tenant in &tenants {
        s.push_str(&chart(record, tenant));
    }
    s.push_str("</section>");
    s
}

fn chart(record: &ReplayRecord, tenant: &str) -> String {
    let mut s = format!("<h3>Tenant {}</h3>", esc(tenant));
    let series = series(record, tenant);
    if series.is_empty() {
        s.push_str(
            r#"<p class="nodata">No data: this tenant has no trail yet (no outcome reported).</p>"#,
        );
        return s;
    }
    // How far τ moved from 1 at any sample: a node that failed pods and recovered is still one
    // the trail learned about.
    let mut ranked: Vec<(&String, f64)> = series
        .iter()
        .map(|(n, pts)| (n, pts.iter().map(|p| p.1.ln().abs()).fold(0.0, f64::max)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let shown: Vec<&String> = ranked.iter().take(TOP).map(|(n, _)| *n).collect();
    let others = others_mean(record, &series, &shown);

    let steps = record.trails.iter().map(|t| t.step as f64);
    let taus = series.values().flatten().map(|p| p.1);
    let frame = Frame::new(PLOT_W, HEIGHT, steps, taus, true);
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" role="img"><title>τ per node for tenant {}</title>"#,
        esc(tenant),
        w = frame.width + LEGEND_W,
        h = HEIGHT
    );
    s.push_str(&frame.axes("pods decided", "τ"));
    let legend_x = frame.width + 16.0;
    for (i, node) in shown.iter().enumerate() {
        let pts = &series[*node];
        let c = colour(i);
        let _ = write!(
            s,
            r#"<polyline class="series" fill="none" stroke="{c}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
            points(pts, &frame.x, &frame.y),
            esc(node)
        );
        for (x, y) in pts {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}"/>"#,
                frame.x.map(*x),
                frame.y.map(*y)
            );
        }
        let model = record
            .node(node)
            .and_then(|n| n.gpu_model.clone())
            .unwrap_or_else(|| "CPU".into());
        let final_tau = pts.last().map_or(f64::NAN, |p| p.1);
        legend_row(
            &mut s,
            legend_x,
            20.0 + 18.0 * i as f64,
            c,
            Swatch::Line,
            &format!("{} · {} · τ {}", short(node, 20), model, num(final_tau)),
            node,
        );
    }
    if !others.is_empty() {
        let rest = series.len() - shown.len();
        let _ = write!(
            s,
            r#"<polyline class="others" fill="none" stroke="{MUTED}" stroke-width="1.5" stroke-dasharray="5 3" points="{}"><title>mean of {rest} other nodes</title></polyline>"#,
            points(&others, &frame.x, &frame.y)
        );
        legend_row(
            &mut s,
            legend_x,
            20.0 + 18.0 * shown.len() as f64,
            MUTED,
            Swatch::Dashed,
            &format!("mean of {rest} other node(s)"),
            "",
        );
    }
    s.push_str("</svg>");
    s
}

/// Mean τ per sample over the nodes not drawn on their own.
fn others_mean(
    record: &ReplayRecord,
    series: &BTreeMap<String, Vec<(f64, f64)>>,
    shown: &[&String],
) -> Vec<(f64, f64)> {
    record
        .trails
        .iter()
        .filter_map(|sample| {
            let x = sample.step as f64;
            let taus: Vec<f64> = series
                .iter()
                .filter(|(n, _)| !shown.contains(n))
                .filter_map(|(_, pts)| pts.iter().find(|p| p.0 == x).map(|p| p.1))
                .collect();
            (!taus.is_empty()).then(|| (x, taus.iter().sum::<f64>() / taus.len() as f64))
        })
        .collect()
}
