//! Price table (see `data/prices/README.md`): on-demand $/h per node shape, with a component
//! formula (vCPU + memory + GPUs) for shapes not listed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::trace::{Error, TraceNode};

#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    /// (model or "", gpus, vcpu, memory GiB) → $/h.
    pub node_types: BTreeMap<(String, u32, i64, i64), f64>,
    pub vcpu: f64,
    pub memory_gib: f64,
    pub gpu: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
struct TypeRow {
    gpu_model: Option<String>,
    gpu_count: u32,
    vcpu: i64,
    memory_gib: i64,
    usd_per_hour_on_demand: f64,
}

#[derive(Deserialize)]
struct ComponentRow {
    component: String,
    usd_per_hour: f64,
}

impl PriceTable {
    /// Reads `node_types.csv` and `components.csv` from `dir`.
    pub fn load(dir: &Path) -> Result<Self, Error> {
        let mut t = PriceTable::default();
        let mut r = csv::Reader::from_path(dir.join("node_types.csv"))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        for row in r.deserialize() {
            let row: TypeRow = row?;
            t.node_types.insert(
                (
                    row.gpu_model.unwrap_or_default(),
                    row.gpu_count,
                    row.vcpu,
                    row.memory_gib,
                ),
                row.usd_per_hour_on_demand,
            );
        }
        let mut r = csv::Reader::from_path(dir.join("components.csv"))?;
        for row in r.deserialize() {
            let row: ComponentRow = row?;
            match row.component.as_str() {
                "vcpu" => t.vcpu = row.usd_per_hour,
                "memory_gib" => t.memory_gib = row.usd_per_hour,
                other => {
                    if let Some(model) = other.strip_prefix("gpu:") {
                        t.gpu.insert(model.to_string(), row.usd_per_hour);
                    }
                }
            }
        }
        Ok(t)
    }

    /// On-demand $/h of a node.
    pub fn on_demand(&self, n: &TraceNode) -> f64 {
        let vcpu = n.cpu_milli / 1000;
        let gib = n.memory_mib / 1024;
        let key = (n.model.clone().unwrap_or_default(), n.gpus, vcpu, gib);
        if let Some(p) = self.node_types.get(&key) {
            return *p;
        }
        let gpu = n.model.as_ref().map_or(0.0, |m| {
            self.gpu.get(m).copied().unwrap_or(1.0) * n.gpus as f64
        });
        vcpu as f64 * self.vcpu + gib as f64 * self.memory_gib + gpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_shapes_and_formula_agree() {
        let t = PriceTable::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/prices"))
            .unwrap();
        let t4 = TraceNode {
            name: "n".into(),
            cpu_milli: 96000,
            memory_mib: 393216,
            gpus: 4,
            model: Some("T4".into()),
        };
        let listed = t.on_demand(&t4);
        let mut odd = t4.clone();
        odd.cpu_milli = 95000; // not listed: formula
        let formula = t.on_demand(&odd) + t.vcpu;
        assert!((listed - formula).abs() < 1e-3, "{listed} vs {formula}");
        let cpu = TraceNode {
            name: "c".into(),
            cpu_milli: 32000,
            memory_mib: 262144,
            gpus: 0,
            model: None,
        };
        assert!(t.on_demand(&cpu) < listed);
    }
}
