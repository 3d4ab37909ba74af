//! Plain-text tables: a header row and aligned columns (numbers right-aligned).

/// `rows` under `headers`, each column as wide as its widest cell, two spaces apart; a column
/// whose header is in `right` is right-aligned.
pub fn render(headers: &[&str], right: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain([h.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| -> String {
        let mut out: Vec<String> = Vec::new();
        for (i, cell) in cells.iter().enumerate() {
            let w = widths[i];
            out.push(if right.contains(&headers[i]) {
                format!("{cell:>w$}")
            } else {
                format!("{cell:<w$}")
            });
        }
        format!("{}\n", out.join("  ").trim_end())
    };
    let mut text = line(headers.to_vec());
    for r in rows {
        text.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_align_and_numbers_go_right() {
        let t = super::render(
            &["NODE", "TAU"],
            &["TAU"],
            &[
                vec!["a-long-node".into(), "1.5".into()],
                vec!["b".into(), "10.25".into()],
            ],
        );
        assert_eq!(
            t,
            "NODE           TAU\na-long-node    1.5\nb            10.25\n"
        );
    }
}
