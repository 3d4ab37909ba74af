//! The demo's report: one self-contained HTML file (inline SVG and CSS, no script, no fetch)
//! drawn from a [`ReplayRecord`]. Pure: record in, text out. The document is also well-formed
//! XML, which the tests check, so a broken tag or an unescaped name cannot slip through.

mod cost;
mod placements;
mod svg;
mod trails;

use std::fmt::Write;
use std::path::Path;

use crate::replay_record::ReplayRecord;
use svg::{esc, num};

pub use trails::TOP as NODES_PER_TENANT;

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;margin:24px auto;max-width:1120px;padding:0 16px}\
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:15px;margin:16px 0 4px}\
.sub{color:#555;margin-top:0}.nodata{color:#8a5a00;background:#fff6e0;padding:8px 12px;border-radius:4px}\
svg{display:block;max-width:100%;height:auto}svg text{font:12px system-ui,sans-serif;fill:#333}svg text.tick{font-size:11px;fill:#666}svg text.title{font-size:12px;fill:#444}\
svg .grid{stroke:#e6e6e6}svg .axis{stroke:#999}\
.stats{display:flex;gap:24px;flex-wrap:wrap;margin:12px 0}.stats div{background:#f4f6f8;border-radius:6px;padding:8px 14px}.stats b{display:block;font-size:20px}\
table{border-collapse:collapse;margin-top:12px;font-size:13px}th,td{border-bottom:1px solid #e4e4e4;padding:3px 10px;text-align:right}th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}";

/// The whole document.
pub fn render(record: &ReplayRecord) -> String {
    let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\" xmlns=\"http://www.w3.org/1999/xhtml\"><head><meta charset=\"utf-8\"/>");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/><title>aco-edge-extender demo report</title>");
    let _ = write!(s, "<style>{STYLE}</style></head><body><h1>aco-edge-extender demo report</h1><p class=\"sub\">{}</p>", esc(&record.title));
    s.push_str(&stats(record));
    s.push_str(&trails::section(record));
    s.push_str(&cost::section(record));
    s.push_str(&placements::section(record));
    s.push_str("</body></html>\n");
    s
}

/// Writes the report, creating its directory.
pub fn write(path: &Path, record: &ReplayRecord) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, render(record))
}

fn stats(record: &ReplayRecord) -> String {
    let placed: Vec<f64> = record
        .pods
        .iter()
        .filter_map(|p| p.placed.as_ref().map(|pl| pl.marginal_per_h))
        .collect();
    let mut used: Vec<&str> = record
        .pods
        .iter()
        .filter_map(|p| p.placed.as_ref().map(|pl| pl.node.as_str()))
        .collect();
    used.sort_unstable();
    used.dedup();
    let mean = if placed.is_empty() {
        "–".to_string()
    } else {
        format!("${}", num(placed.iter().sum::<f64>() / placed.len() as f64))
    };
    format!(
        "<div class=\"stats\"><div><b>{}</b>pods replayed</div><div><b>{}</b>placed</div><div><b>{}</b>unschedulable</div><div><b>{} / {}</b>nodes used</div><div><b>{}</b>tenants</div><div><b>{mean}</b>mean marginal $/h per pod</div></div>",
        record.pods.len(), placed.len(), record.pods.len() - placed.len(), used.len(), record.nodes.len(), record.tenants.len()
    )
}

#[cfg(test)]
mod tests;
