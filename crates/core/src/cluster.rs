//! Many clusters, one deployment: a cluster id in the path (`/c/<cluster>/v1/...`, the
//! `urlPrefix` of that cluster's KubeSchedulerConfiguration and the reporter's `--worker-url`)
//! keys node facts and colonies, so two clusters' node names and tenants never collide. Paths
//! without it are the default cluster, whose storage names are today's (existing colonies and
//! facts stay where they are).

pub use crate::names::{validate_cluster, validate_tenant, ClusterId, TenantId, DEFAULT_CLUSTER};

/// Splits a leading `c/<cluster>` off a path's segments. `Err` for an invalid id.
pub fn split_cluster<'a, 'b>(
    segments: &'b [&'a str],
) -> Result<(ClusterId, &'b [&'a str]), String> {
    match segments {
        ["c", cluster, rest @ ..] => Ok((ClusterId::parse(cluster)?, rest)),
        _ => Ok((ClusterId::default_cluster(), segments)),
    }
}

/// The name of a tenant's colony (its Durable Object) in a cluster. The default cluster's are
/// the bare tenant names they always were.
pub fn colony_name(cluster: &str, tenant: &str) -> String {
    if cluster == DEFAULT_CLUSTER {
        tenant.to_string()
    } else {
        format!("{cluster}/{tenant}")
    }
}

/// The cluster and tenant of a colony name (inverse of [`colony_name`]).
pub fn split_colony_name(name: &str) -> (&str, &str) {
    match name.split_once('/') {
        Some((cluster, tenant)) => (cluster, tenant),
        None => (DEFAULT_CLUSTER, name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_and_colony_names_round_trip() {
        assert_eq!(
            split_cluster(&["c", "prod", "v1", "filter"]),
            Ok((ClusterId::parse("prod").unwrap(), &["v1", "filter"][..]))
        );
        assert_eq!(
            split_cluster(&["v1", "filter"]),
            Ok((ClusterId::default_cluster(), &["v1", "filter"][..]))
        );
        assert!(split_cluster(&["c", "Bad!", "v1", "filter"]).is_err());
        assert_eq!(colony_name(DEFAULT_CLUSTER, "ml"), "ml");
        assert_eq!(colony_name("prod", "ml"), "prod/ml");
        for (cluster, tenant) in [(DEFAULT_CLUSTER, "ml"), ("prod", "ml.team_a")] {
            assert_eq!(
                split_colony_name(&colony_name(cluster, tenant)),
                (cluster, tenant)
            );
        }
    }
}
