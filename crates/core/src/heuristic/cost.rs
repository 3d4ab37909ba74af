/// Cost efficiency `1 / (1 + cost/ref)` (the seed's form): 1 for a free node, 0.5 at the
/// reference price, falling towards 0 for expensive nodes. Unlabelled nodes are priced at
/// `default_cost_per_hour` so that a missing label never makes a node look free.
pub fn cost_efficiency(cost_per_hour: Option<f64>, config: &crate::config::Config) -> f64 {
    let cost = cost_per_hour.unwrap_or(config.default_cost_per_hour).max(0.0);
    1.0 / (1.0 + cost / config.cost_reference)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn halves_at_the_reference_and_decreases_with_price() {
        let c = Config::default();
        assert_eq!(cost_efficiency(Some(0.0), &c), 1.0);
        assert_eq!(cost_efficiency(Some(c.cost_reference), &c), 0.5);
        assert!(cost_efficiency(Some(0.45), &c) > cost_efficiency(Some(3.2), &c));
        assert_eq!(cost_efficiency(None, &c), cost_efficiency(Some(c.default_cost_per_hour), &c));
    }
}
