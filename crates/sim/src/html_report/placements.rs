//! Where each pod went: a node × time grid (a row per node that received pods, in order of
//! first use, labelled with its GPU model and price; a cell per pod coloured by tenant, the only
//! use of colour here so it reads one way; a last row for unschedulable pods), then a table of
//! pods per node and tenant.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::svg::{colour, esc, legend_row, num, short, Scale, Swatch, MUTED};
use crate::replay_record::ReplayRecord;

const LABEL_W: f64 = 260.0;
const PLOT_W: f64 = 560.0;
const ROW_H: f64 = 16.0;
const TOP: f64 = 26.0;

/// Nodes that received pods, in order of their first pod.
fn used_nodes(record: &ReplayRecord) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for node in record
        .pods
        .iter()
        .filter_map(|p| p.placed.as_ref().map(|pl| pl.node.as_str()))
    {
        if !out.contains(&node) {
            out.push(node);
        }
    }
    out
}

pub fn section(record: &ReplayRecord) -> String {
    let mut s = String::from("<section><h2>Where each pod went</h2>");
    if record.pods.is_empty() {
        s.push_str(r#"<p class="nodata">No data: no pod was replayed.</p></section>"#);
        return s;
    }
    let nodes = used_nodes(record);
    let unplaced = record.pods.iter().filter(|p| p.placed.is_none()).count();
    let _ = write!(s, "<p>{} pods on {} of {} nodes; {unplaced} unschedulable. Each cell is one pod at the moment it was decided, coloured by tenant; hover for its name.</p>", record.pods.len() - unplaced, nodes.len(), record.nodes.len());
    s.push_str(&grid(record, &nodes, unplaced > 0));
    s.push_str(&table(record, &nodes));
    s.push_str("</section>");
    s
}

fn grid(record: &ReplayRecord, nodes: &[&str], unplaced_row: bool) -> String {
    let rows = nodes.len() + unplaced_row as usize;
    let height = TOP + ROW_H * rows as f64 + 30.0;
    let width = LABEL_W + PLOT_W + 20.0;
    let x = Scale::fit(
        record.pods.iter().map(|p| p.step as f64),
        false,
        LABEL_W + 4.0,
        LABEL_W + PLOT_W - 4.0,
    );
    let cell_w = (PLOT_W / record.pods.len().max(1) as f64).clamp(2.0, 12.0);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="placements" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img"><title>pods per node over time</title>"#
    );
    for (i, t) in record.tenants.iter().enumerate() {
        legend_row(
            &mut s,
            LABEL_W + 4.0 + 150.0 * i as f64,
            14.0,
            colour(i),
            Swatch::Line,
            t,
            t,
        );
    }
    let row_y = |i: usize| TOP + ROW_H * i as f64;
    for (i, node) in nodes.iter().enumerate() {
        let info = record.node(node);
        let model = info.and_then(|n| n.gpu_model.clone());
        let price = info.map_or("?".to_string(), |n| num(n.price_per_h));
        let y = row_y(i);
        if i % 2 == 0 {
            let _ = write!(
                s,
                r##"<rect x="0" y="{y:.1}" width="{width:.0}" height="{ROW_H}" fill="#f4f4f4"/>"##
            );
        }
        let label = format!(
            "{} · {} · ${price}/h",
            short(node, 22),
            model.as_deref().unwrap_or("CPU")
        );
        let _ = write!(
            s,
            r#"<text class="row" x="4" y="{:.1}">{}<title>{}</title></text>"#,
            y + 12.0,
            esc(&label),
            esc(node)
        );
    }
    if unplaced_row {
        let _ = write!(
            s,
            r#"<text class="row" x="4" y="{:.1}">unschedulable</text>"#,
            row_y(nodes.len()) + 12.0
        );
    }
    for p in &record.pods {
        let (row, fill, target) = match &p.placed {
            Some(pl) => (
                nodes.iter().position(|n| *n == pl.node).unwrap_or(0),
                colour(record.tenant_index(&p.tenant)),
                pl.node.as_str(),
            ),
            None => (nodes.len(), MUTED, "unschedulable"),
        };
        let _ = write!(
            s,
            r#"<rect class="cell" x="{:.1}" y="{:.1}" width="{cell_w:.1}" height="{:.1}" fill="{fill}"><title>#{} {} ({}) → {}</title></rect>"#,
            x.map(p.step as f64) - cell_w / 2.0,
            row_y(row) + 2.0,
            ROW_H - 4.0,
            p.step,
            esc(&p.pod),
            esc(&p.tenant),
            esc(target)
        );
    }
    let axis_y = row_y(rows) + 14.0;
    for t in x.ticks(8) {
        let _ = write!(
            s,
            r#"<text class="tick" x="{:.1}" y="{axis_y:.1}" text-anchor="middle">{}</text>"#,
            x.map(t),
            num(t)
        );
    }
    let _ = write!(
        s,
        r#"<text class="title" x="{:.1}" y="{:.1}" text-anchor="middle">pods decided</text></svg>"#,
        LABEL_W + PLOT_W / 2.0,
        axis_y + 14.0
    );
    s
}

fn table(record: &ReplayRecord, nodes: &[&str]) -> String {
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for p in &record.pods {
        if let Some(pl) = &p.placed {
            *counts
                .entry((pl.node.as_str(), p.tenant.as_str()))
                .or_default() += 1;
        }
    }
    let mut s = String::from("<table><thead><tr><th>node</th><th>GPU</th><th>$/h</th>");
    for t in &record.tenants {
        let _ = write!(s, "<th>{}</th>", esc(t));
    }
    s.push_str("<th>pods</th></tr></thead><tbody>");
    for node in nodes {
        let info = record.node(node);
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td>",
            esc(node),
            esc(info.and_then(|n| n.gpu_model.as_deref()).unwrap_or("CPU")),
            info.map_or("?".into(), |n| num(n.price_per_h))
        );
        for t in &record.tenants {
            let c = counts.get(&(*node, t.as_str())).copied().unwrap_or(0);
            let _ = write!(
                s,
                "<td>{}</td>",
                if c == 0 { String::new() } else { c.to_string() }
            );
        }
        let all: usize = counts
            .iter()
            .filter(|((n, _), _)| n == node)
            .map(|(_, c)| *c)
            .sum();
        let _ = write!(s, "<td>{all}</td></tr>");
    }
    s.push_str("</tbody></table>");
    s
}
