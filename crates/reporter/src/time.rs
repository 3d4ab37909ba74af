//! Kubernetes timestamps as unix milliseconds (the unit the Worker's API uses).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub fn ms(t: &Time) -> u64 {
    t.0.as_millisecond().max(0) as u64
}

/// An RFC 3339 timestamp (as NodeMetrics carry it) in unix ms.
pub fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    let t: k8s_openapi::jiff::Timestamp = text.parse().ok()?;
    Some(t.as_millisecond().max(0) as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_kubernetes_timestamps() {
        assert_eq!(super::parse_rfc3339_ms("1970-01-01T00:00:01Z"), Some(1_000));
        assert_eq!(
            super::parse_rfc3339_ms("2026-12-01T10:00:00.5Z").map(|t| t % 1_000),
            Some(500)
        );
        assert_eq!(super::parse_rfc3339_ms("yesterday"), None);
    }
}
