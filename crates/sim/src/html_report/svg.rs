//! The drawing primitives of the report: escaping, linear axes with round ticks, number
//! formatting and the colour palette. Hand-written SVG rather than a plotting crate, so the
//! report is one self-contained file whose every element the tests can count.

use std::fmt::Write;

/// Text and attribute values for HTML and XML alike. Node, pod and tenant names come from the
/// cluster, so they may hold markup; control characters XML forbids become U+FFFD.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Categorical colours (Tableau 10), distinguishable on white.
pub const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];
pub const MUTED: &str = "#9a9a9a";

pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A linear map from data `[lo, hi]` to pixels `[px_lo, px_hi]` (`px_hi < px_lo` for y axes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub px_lo: f64,
    pub px_hi: f64,
}

impl Scale {
    /// The range of `values` (non-finite ones ignored), widened so that it is never empty: a
    /// single value or none still gives a usable axis and no division by zero.
    pub fn fit(
        values: impl IntoIterator<Item = f64>,
        include_zero: bool,
        px_lo: f64,
        px_hi: f64,
    ) -> Self {
        let (mut lo, mut hi) = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        if lo > hi {
            (lo, hi) = (0.0, 1.0);
        }
        if include_zero {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        if hi - lo < 1e-12 {
            let pad = if lo.abs() > 1e-12 {
                lo.abs() * 0.1
            } else {
                1.0
            };
            (lo, hi) = if include_zero && lo >= 0.0 {
                (lo.min(0.0), hi + pad)
            } else {
                (lo - pad, hi + pad)
            };
        }
        Self {
            lo,
            hi,
            px_lo,
            px_hi,
        }
    }

    pub fn map(&self, v: f64) -> f64 {
        self.px_lo + (v - self.lo) / (self.hi - self.lo) * (self.px_hi - self.px_lo)
    }

    /// About `n` round tick values (1, 2 or 5 × 10^k apart) inside the range.
    pub fn ticks(&self, n: usize) -> Vec<f64> {
        let raw = (self.hi - self.lo) / n.max(1) as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        let first = (self.lo / step).ceil() as i64;
        let last = (self.hi / step + 1e-9).floor() as i64;
        (first..=last).map(|i| i as f64 * step).collect()
    }
}

/// Short numbers for labels: integers without decimals, others with up to 3 significant places.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    if (v - v.round()).abs() < 1e-9 && v.abs() < 1e9 {
        return format!("{}", v.round() as i64);
    }
    let digits = if v.abs() >= 100.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$}")
}

/// `points` attribute of a polyline through `(x, y)` data pairs.
pub fn points(data: &[(f64, f64)], x: &Scale, y: &Scale) -> String {
    let mut out = String::new();
    for (i, (a, b)) in data
        .iter()
        .filter(|(a, b)| a.is_finite() && b.is_finite())
        .enumerate()
    {
        let _ = write!(
            out,
            "{}{:.1},{:.1}",
            if i == 0 { "" } else { " " },
            x.map(*a),
            y.map(*b)
        );
    }
    out
}

/// The frame of a chart: plot area, axes with tick labels and axis titles.
pub struct Frame {
    pub width: f64,
    pub height: f64,
    pub x: Scale,
    pub y: Scale,
}

pub const MARGIN_LEFT: f64 = 56.0;
pub const MARGIN_BOTTOM: f64 = 36.0;
pub const MARGIN_TOP: f64 = 12.0;

impl Frame {
    /// A plot of `plot_w` × `height` pixels for x in `xs` and y in `ys`.
    pub fn new(
        plot_w: f64,
        height: f64,
        xs: impl IntoIterator<Item = f64>,
        ys: impl IntoIterator<Item = f64>,
        y_from_zero: bool,
    ) -> Self {
        let x = Scale::fit(xs, false, MARGIN_LEFT, MARGIN_LEFT + plot_w);
        let y = Scale::fit(ys, y_from_zero, height - MARGIN_BOTTOM, MARGIN_TOP);
        Self {
            width: MARGIN_LEFT + plot_w,
            height,
            x,
            y,
        }
    }

    /// Gridlines, ticks and axis titles.
    pub fn axes(&self, x_title: &str, y_title: &str) -> String {
        let mut s = String::new();
        let (x0, x1, y0, y1) = (self.x.px_lo, self.x.px_hi, self.y.px_lo, self.y.px_hi);
        for t in self.y.ticks(5) {
            let py = self.y.map(t);
            let _ = write!(
                s,
                r##"<line class="grid" x1="{x0:.1}" y1="{py:.1}" x2="{x1:.1}" y2="{py:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                x0 - 4.0,
                py + 4.0,
                num(t)
            );
        }
        for t in self.x.ticks(8) {
            let px = self.x.map(t);
            let _ = write!(
                s,
                r##"<line class="axis" x1="{px:.1}" y1="{y0:.1}" x2="{px:.1}" y2="{:.1}"/><text class="tick" x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                y0 + 4.0,
                y0 + 16.0,
                num(t)
            );
        }
        let _ = write!(
            s,
            r##"<line class="axis" x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y0:.1}"/><line class="axis" x1="{x0:.1}" y1="{y0:.1}" x2="{x0:.1}" y2="{y1:.1}"/>"##
        );
        let _ = write!(
            s,
            r##"<text class="title" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            (x0 + x1) / 2.0,
            self.height - 4.0,
            esc(x_title)
        );
        let _ = write!(
            s,
            r##"<text class="title" x="12" y="{:.1}" text-anchor="middle" transform="rotate(-90 12 {:.1})">{}</text>"##,
            (y0 + y1) / 2.0,
            (y0 + y1) / 2.0,
            esc(y_title)
        );
        s
    }
}

/// How a legend entry shows its series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Swatch {
    Line,
    /// Summaries and secondary lines.
    Dashed,
    /// Scatter points.
    Dot,
}

/// One legend entry: a swatch and a label; `full` is the hover text.
pub fn legend_row(
    s: &mut String,
    x: f64,
    y: f64,
    colour: &str,
    swatch: Swatch,
    label: &str,
    full: &str,
) {
    let (mid, sy) = (x + 9.0, y - 4.0);
    s.push_str(r#"<g class="legend">"#);
    let _ = match swatch {
        Swatch::Dot => write!(
            s,
            r#"<circle cx="{mid:.1}" cy="{sy:.1}" r="4" fill="{colour}"/>"#
        ),
        Swatch::Line | Swatch::Dashed => {
            let dash = if swatch == Swatch::Dashed {
                r#" stroke-dasharray="5 3""#
            } else {
                ""
            };
            write!(
                s,
                r#"<line x1="{x:.1}" y1="{sy:.1}" x2="{:.1}" y2="{sy:.1}" stroke="{colour}" stroke-width="3"{dash}/>"#,
                x + 18.0
            )
        }
    };
    let _ = write!(s, r#"<text x="{:.1}" y="{y:.1}">{}"#, x + 24.0, esc(label));
    if !full.is_empty() {
        let _ = write!(s, "<title>{}</title>", esc(full));
    }
    s.push_str("</text></g>");
}

/// At most `max` characters, with an ellipsis when cut (before escaping, so no entity is split).
pub fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_forbidden_controls() {
        assert_eq!(
            esc(r#"<b a="1">&'x'</b>"#),
            "&lt;b a=&quot;1&quot;&gt;&amp;&#39;x&#39;&lt;/b&gt;"
        );
        assert_eq!(esc("a\u{1}b\tc"), "a\u{FFFD}b\tc");
        assert_eq!(esc("gpu-τ-ノード"), "gpu-τ-ノード");
    }

    #[test]
    fn scale_maps_the_ends_and_inverts_for_y() {
        let x = Scale::fit([2.0, 10.0, 6.0], false, 50.0, 450.0);
        assert_eq!((x.map(2.0), x.map(10.0), x.map(6.0)), (50.0, 450.0, 250.0));
        let y = Scale::fit([0.5, 4.0], true, 200.0, 10.0);
        assert_eq!((y.lo, y.hi), (0.0, 4.0));
        assert_eq!((y.map(0.0), y.map(4.0), y.map(2.0)), (200.0, 10.0, 105.0));
    }

    #[test]
    fn degenerate_ranges_stay_finite() {
        for values in [
            vec![],
            vec![3.0],
            vec![0.0, 0.0],
            vec![f64::NAN, f64::INFINITY],
            vec![-2.0],
        ] {
            for zero in [false, true] {
                let s = Scale::fit(values.clone(), zero, 0.0, 100.0);
                assert!(s.hi > s.lo, "{values:?} {zero}: {s:?}");
                for v in values.iter().filter(|v| v.is_finite()) {
                    let p = s.map(*v);
                    assert!(
                        p.is_finite() && (0.0..=100.0).contains(&p),
                        "{values:?} {zero}: {v} → {p}"
                    );
                }
                assert!(!s.ticks(5).is_empty(), "{values:?}");
            }
        }
    }

    #[test]
    fn ticks_are_round_and_inside_the_range() {
        let s = Scale::fit([0.0, 7.3], false, 0.0, 1.0);
        assert_eq!(s.ticks(5), vec![0.0, 2.0, 4.0, 6.0]);
        let s = Scale::fit([0.013, 0.049], false, 0.0, 1.0);
        let t = s.ticks(4);
        assert!(
            t.iter().all(|v| (0.013..=0.049).contains(v)) && t.len() >= 3,
            "{t:?}"
        );
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(
            (
                num(3.0),
                num(0.12345),
                num(12.345),
                num(1234.5),
                num(f64::NAN)
            ),
            (
                "3".into(),
                "0.123".into(),
                "12.3".into(),
                "1234".into(),
                "–".into()
            )
        );
    }

    #[test]
    fn points_skip_non_finite_pairs() {
        let x = Scale::fit([0.0, 1.0], false, 0.0, 10.0);
        let y = Scale::fit([0.0, 1.0], false, 10.0, 0.0);
        assert_eq!(
            points(&[(0.0, 0.0), (0.5, f64::NAN), (1.0, 1.0)], &x, &y),
            "0.0,10.0 10.0,0.0"
        );
    }
}
