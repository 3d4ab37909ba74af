//! Spot pools as the world labels them: a pool is an instance shape (GPU model, GPUs, vCPU,
//! memory — the unit a cloud reclaims by), its instance type the label the extender's
//! `SPOT_POOL_LABELS` read, and its seeded band of AWS's Spot Instance Advisor the prior the
//! extender reads from `SPOT_INTERRUPTION_BAND_LABEL`. The reclamations drawn from the bands are
//! `spot.rs`; this file needs no world, so `cluster.rs` can label nodes with it.

use crate::rng;

/// Midpoints of the Spot Instance Advisor's interruption-frequency bands, per month.
pub const ADVISOR_BAND_MIDPOINTS: [f64; 5] = [0.025, 0.075, 0.125, 0.175, 0.25];

/// A pool: the instance shape (GPU model, GPUs, milli-CPU, MiB).
pub(crate) fn pool_key(model: Option<&str>, gpus: u32, cpu_milli: i64, memory_mib: i64) -> u64 {
    rng::key(&format!(
        "{}/{}/{}/{}",
        model.unwrap_or(""),
        gpus,
        cpu_milli,
        memory_mib
    ))
}

/// The instance type a node of this shape carries as `node.kubernetes.io/instance-type` (what
/// the extender's `SPOT_POOL_LABELS` read), e.g. `v100m16.8g.64c.256g`.
pub fn instance_type(model: Option<&str>, gpus: u32, cpu_milli: i64, memory_mib: i64) -> String {
    format!(
        "{}.{}g.{}c.{}g",
        model.unwrap_or("cpu").to_ascii_lowercase(),
        gpus,
        cpu_milli / 1000,
        memory_mib / 1024
    )
}

/// The monthly interruption frequency of the pool of a shape, for a spot node of it.
pub fn pool_frequency(
    seed: u64,
    model: Option<&str>,
    gpus: u32,
    cpu_milli: i64,
    memory_mib: i64,
) -> f64 {
    let key = pool_key(model, gpus, cpu_milli, memory_mib);
    let band = (rng::unit(&[seed, key, 0x5907]) * ADVISOR_BAND_MIDPOINTS.len() as f64) as usize;
    ADVISOR_BAND_MIDPOINTS[band.min(ADVISOR_BAND_MIDPOINTS.len() - 1)]
}

/// The Spot Advisor band of a midpoint, as the extender's band label writes it
/// (`aco_core::heuristic::spot_risk::band_monthly_fraction` reads it back).
pub fn band_label(monthly: f64) -> &'static str {
    match monthly {
        m if m < 0.05 => "lt5",
        m if m < 0.10 => "5-10",
        m if m < 0.15 => "10-15",
        m if m < 0.20 => "15-20",
        _ => "gt20",
    }
}
