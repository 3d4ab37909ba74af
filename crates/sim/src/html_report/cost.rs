//! Cost per placed pod over the replay: a dot per placed pod at its marginal $/h (coloured by
//! tenant), the rolling mean over the last `WINDOW` placed pods and the cumulative mean, and a
//! black tick on the axis for each pod no node could take.

use std::fmt::Write;

use super::svg::{colour, esc, legend_row, num, points, Frame, Swatch};
use crate::replay_record::ReplayRecord;

pub const WINDOW: usize = 10;
const PLOT_W: f64 = 560.0;
const HEIGHT: f64 = 260.0;
const LEGEND_W: f64 = 330.0;
/// Black, so it cannot be read as a tenant's colour.
const UNPLACED: &str = "#000";

/// `(step, marginal $/h)` of every placed pod, in arrival order.
fn costs(record: &ReplayRecord) -> Vec<(f64, f64)> {
    record
        .pods
        .iter()
        .filter_map(|p| {
            p.placed
                .as_ref()
                .map(|pl| (p.step as f64, pl.marginal_per_h))
        })
        .collect()
}

/// The mean of the last `window` values at every point (fewer at the start).
pub fn rolling_mean(data: &[(f64, f64)], window: usize) -> Vec<(f64, f64)> {
    let window = window.max(1);
    (0..data.len())
        .map(|i| {
            let from = (i + 1).saturating_sub(window);
            let slice = &data[from..=i];
            (
                data[i].0,
                slice.iter().map(|p| p.1).sum::<f64>() / slice.len() as f64,
            )
        })
        .collect()
}

/// The mean of all values so far at every point.
pub fn cumulative_mean(data: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut sum = 0.0;
    data.iter()
        .enumerate()
        .map(|(i, (x, y))| {
            sum += y;
            (*x, sum / (i + 1) as f64)
        })
        .collect()
}

pub fn section(record: &ReplayRecord) -> String {
    let mut s = String::from("<section><h2>Cost per placed pod</h2>");
    let data = costs(record);
    let unplaced: Vec<f64> = record
        .pods
        .iter()
        .filter(|p| p.placed.is_none())
        .map(|p| p.step as f64)
        .collect();
    if data.is_empty() {
        let _ = write!(
            s,
            r#"<p class="nodata">No data: no pod was placed ({} unschedulable).</p></section>"#,
            unplaced.len()
        );
        return s;
    }
    let total: f64 = data.iter().map(|p| p.1).sum();
    let _ = write!(
        s,
        "<p>Marginal cost of each placement, as the colony's cost factor prices it: the node's full $/h when the pod turns an idle node on, \
         the pod's share of it on a node that is already busy. {} pods placed, mean ${}/h per pod; {} unschedulable (black ticks on the axis).</p>",
        data.len(), num(total / data.len() as f64), unplaced.len()
    );
    let frame = Frame::new(
        PLOT_W,
        HEIGHT,
        record.pods.iter().map(|p| p.step as f64),
        data.iter().map(|p| p.1),
        true,
    );
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" role="img"><title>marginal $/h per placed pod</title>"#,
        w = frame.width + LEGEND_W,
        h = HEIGHT
    );
    s.push_str(&frame.axes("pods decided", "marginal $/h"));
    for p in &record.pods {
        let Some(pl) = &p.placed else { continue };
        let _ = write!(
            s,
            r#"<circle class="pod" cx="{:.1}" cy="{:.1}" r="3" fill="{}" fill-opacity="0.75"><title>#{} {} ({}) → {}: ${}/h of ${}/h</title></circle>"#,
            frame.x.map(p.step as f64),
            frame.y.map(pl.marginal_per_h),
            colour(record.tenant_index(&p.tenant)),
            p.step,
            esc(&p.pod),
            esc(&p.tenant),
            esc(&pl.node),
            num(pl.marginal_per_h),
            num(pl.price_per_h)
        );
    }
    let y0 = frame.y.px_lo;
    for x in &unplaced {
        let px = frame.x.map(*x);
        let _ = write!(
            s,
            r#"<line class="unplaced" x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="{UNPLACED}" stroke-width="2"/>"#,
            y0 - 14.0,
            y0
        );
    }
    let _ = write!(
        s,
        r##"<polyline class="rolling" fill="none" stroke="#222" stroke-width="2" points="{}"/>"##,
        points(&rolling_mean(&data, WINDOW), &frame.x, &frame.y)
    );
    let _ = write!(
        s,
        r##"<polyline class="cumulative" fill="none" stroke="#222" stroke-width="1.5" stroke-dasharray="5 3" points="{}"/>"##,
        points(&cumulative_mean(&data), &frame.x, &frame.y)
    );
    let lx = frame.width + 16.0;
    legend_row(
        &mut s,
        lx,
        20.0,
        "#222",
        Swatch::Line,
        &format!("rolling mean ({WINDOW} pods)"),
        "",
    );
    legend_row(
        &mut s,
        lx,
        38.0,
        "#222",
        Swatch::Dashed,
        "cumulative mean",
        "",
    );
    legend_row(
        &mut s,
        lx,
        56.0,
        UNPLACED,
        Swatch::Line,
        "unschedulable pod (tick on the axis)",
        "",
    );
    for (i, t) in record.tenants.iter().enumerate() {
        legend_row(
            &mut s,
            lx,
            74.0 + 18.0 * i as f64,
            colour(i),
            Swatch::Dot,
            &format!("pod of {t}"),
            t,
        );
    }
    s.push_str("</svg></section>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_follow_the_window_and_the_whole_run() {
        let d = [(1.0, 2.0), (2.0, 4.0), (3.0, 9.0)];
        assert_eq!(
            rolling_mean(&d, 2),
            vec![(1.0, 2.0), (2.0, 3.0), (3.0, 6.5)]
        );
        assert_eq!(
            cumulative_mean(&d),
            vec![(1.0, 2.0), (2.0, 3.0), (3.0, 5.0)]
        );
        assert!(rolling_mean(&[], 3).is_empty() && cumulative_mean(&[]).is_empty());
    }
}
