//! Stateless seeded hashing (SplitMix64): the load model and the cluster derivation draw their
//! randomness from `(seed, entity, slot)` so results never depend on evaluation order.

pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hash of several keys.
pub fn hash(keys: &[u64]) -> u64 {
    keys.iter()
        .fold(0x5EED_u64, |acc, k| splitmix(acc ^ splitmix(*k)))
}

/// Uniform in [0, 1) from the keys.
pub fn unit(keys: &[u64]) -> f64 {
    (hash(keys) >> 11) as f64 / (1u64 << 53) as f64
}

/// Uniform in [lo, hi) from the keys.
pub fn range(keys: &[u64], lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * unit(keys)
}

/// Stable key for a string (FNV-1a).
pub fn key(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_is_deterministic_and_in_range() {
        assert_eq!(unit(&[1, 2, 3]), unit(&[1, 2, 3]));
        assert_ne!(unit(&[1, 2, 3]), unit(&[1, 2, 4]));
        let mean = (0..10_000).map(|i| unit(&[7, i])).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }
}
