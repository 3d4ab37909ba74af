//! OpenB CSV input. Node rows: `sn,cpu_milli,memory_mib,gpu,model`. Pod rows:
//! `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//! deletion_time,scheduled_time` (seconds). The `multigpu20` variant has only the first five
//! columns: such pods arrive in file order one `static_gap_s` apart and never leave (the static
//! "fill the cluster" mode of the ATC '23 paper's own simulator).

use std::path::Path;

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq)]
pub struct TraceNode {
    pub name: String,
    pub cpu_milli: i64,
    pub memory_mib: i64,
    pub gpus: u32,
    /// `None` for CPU-only nodes.
    pub model: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TracePod {
    pub name: String,
    pub cpu_milli: i64,
    pub memory_mib: i64,
    pub num_gpu: u32,
    /// Per-GPU share in milli-GPU (1000 = whole GPUs).
    pub gpu_milli: u32,
    pub gpu_spec: Option<Vec<String>>,
    /// `LS`, `BE`, `Burstable`, `Guaranteed`, or empty when the file has no qos column.
    pub qos: String,
    pub creation_s: u64,
    /// `None`: never leaves.
    pub deletion_s: Option<u64>,
}

impl TracePod {
    pub fn is_ls(&self) -> bool {
        self.qos == "LS"
    }
    /// GPUs requested in GPU units (0.46 for a 460-milli share).
    pub fn gpu_units(&self) -> f64 {
        if self.num_gpu == 0 {
            0.0
        } else {
            self.num_gpu as f64 * self.gpu_milli.min(1000) as f64 / 1000.0
        }
    }
    /// A GPU-sharing pod: one GPU, less than all of it.
    pub fn is_gpu_share(&self) -> bool {
        self.num_gpu == 1 && self.gpu_milli > 0 && self.gpu_milli < 1000
    }
}

#[derive(Deserialize)]
struct NodeRow {
    sn: String,
    cpu_milli: i64,
    memory_mib: i64,
    gpu: u32,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct PodRow {
    name: String,
    cpu_milli: i64,
    memory_mib: i64,
    num_gpu: u32,
    gpu_milli: u32,
    #[serde(default)]
    gpu_spec: Option<String>,
    #[serde(default)]
    qos: Option<String>,
    #[serde(default)]
    creation_time: Option<u64>,
    #[serde(default)]
    deletion_time: Option<u64>,
}

pub type Error = Box<dyn std::error::Error + Send + Sync>;

fn reader(path: &Path) -> Result<csv::Reader<std::fs::File>, Error> {
    csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(|e| format!("{}: {e}", path.display()).into())
}

pub fn read_nodes(path: &Path) -> Result<Vec<TraceNode>, Error> {
    parse_nodes(reader(path)?).map_err(|e| format!("{}: {e}", path.display()).into())
}

pub fn parse_nodes<R: std::io::Read>(mut r: csv::Reader<R>) -> Result<Vec<TraceNode>, Error> {
    let mut out = Vec::new();
    for row in r.deserialize() {
        let row: NodeRow = row?;
        let model = row
            .model
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty());
        out.push(TraceNode {
            name: row.sn,
            cpu_milli: row.cpu_milli,
            memory_mib: row.memory_mib,
            gpus: if model.is_some() { row.gpu } else { 0 },
            model,
        });
    }
    Ok(out)
}

pub fn read_pods(path: &Path, static_gap_s: u64) -> Result<Vec<TracePod>, Error> {
    parse_pods(reader(path)?, static_gap_s).map_err(|e| format!("{}: {e}", path.display()).into())
}

pub fn parse_pods<R: std::io::Read>(
    mut r: csv::Reader<R>,
    static_gap_s: u64,
) -> Result<Vec<TracePod>, Error> {
    let mut out = Vec::new();
    for (i, row) in r.deserialize().enumerate() {
        let row: PodRow = row?;
        let gpu_spec = row
            .gpu_spec
            .map(|s| {
                s.split('|')
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .filter(|v| !v.is_empty());
        let (creation_s, deletion_s) = match (row.creation_time, row.deletion_time) {
            (Some(c), Some(d)) => (c, Some(d.max(c))),
            (Some(c), None) => (c, None),
            _ => (i as u64 * static_gap_s, None),
        };
        out.push(TracePod {
            name: row.name,
            cpu_milli: row.cpu_milli,
            memory_mib: row.memory_mib,
            num_gpu: row.num_gpu,
            gpu_milli: if row.num_gpu > 0 { row.gpu_milli } else { 0 },
            gpu_spec,
            qos: row.qos.unwrap_or_default().trim().to_string(),
            creation_s,
            deletion_s,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv_reader(text: &str) -> csv::Reader<&[u8]> {
        csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(text.as_bytes())
    }

    #[test]
    fn parses_nodes_with_and_without_model() {
        let n = parse_nodes(csv_reader(
            "sn,cpu_milli,memory_mib,gpu,model\na,32000,262144,0,\nb,64000,262144,2,P100\n",
        ))
        .unwrap();
        assert_eq!(n[0].model, None);
        assert_eq!((n[1].gpus, n[1].model.as_deref()), (2, Some("P100")));
    }

    #[test]
    fn parses_full_pod_rows_and_static_rows() {
        let text = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
                    p0,6000,12288,1,460,V100M16|V100M32,LS,Running,10,20,10\n\
                    p1,8000,30517,0,0,,BE,Running,5,4,5\n";
        let p = parse_pods(csv_reader(text), 60).unwrap();
        assert_eq!(
            p[0].gpu_spec,
            Some(vec!["V100M16".to_string(), "V100M32".to_string()])
        );
        assert!(p[0].is_ls() && p[0].is_gpu_share());
        assert!((p[0].gpu_units() - 0.46).abs() < 1e-12);
        assert_eq!((p[0].creation_s, p[0].deletion_s), (10, Some(20)));
        assert_eq!(
            p[1].deletion_s,
            Some(5),
            "deletion before creation is clamped"
        );
        assert_eq!(p[1].gpu_spec, None);
        let s = parse_pods(csv_reader("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,8,1000\nb,1000,1024,0,0\n"), 60).unwrap();
        assert_eq!(
            (s[1].creation_s, s[1].deletion_s, s[1].qos.as_str()),
            (60, None, "")
        );
    }

    #[test]
    fn shipped_sample_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/openb-sample");
        let nodes = read_nodes(&root.join("nodes.csv")).unwrap();
        let pods = read_pods(&root.join("pods.csv"), 60).unwrap();
        assert!(nodes.len() >= 24 && pods.len() >= 200);
        assert!(pods.iter().any(|p| p.gpu_spec.is_some()) && pods.iter().any(TracePod::is_ls));
    }
}
