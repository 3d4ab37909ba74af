//! Many clusters, one deployment: a cluster id in the path (`/c/<cluster>/v1/...`, the
//! `urlPrefix` of that cluster's KubeSchedulerConfiguration and the reporter's `--worker-url`)
//! keys node facts and colonies, so two clusters' node names and tenants never collide. Paths
//! without it are the default cluster, whose storage names are today's (existing colonies and
//! facts stay where they are).

/// The cluster of paths without `/c/<cluster>`.
pub const DEFAULT_CLUSTER: &str = "default";

/// A cluster id: a DNS label (1–63 of `[a-z0-9-]`, not starting or ending with `-`), so it is a
/// safe Durable Object name component and Prometheus label value.
pub fn validate_cluster(id: &str) -> Result<(), String> {
    let b = id.as_bytes();
    let ok = (1..=63).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-';
    if ok {
        Ok(())
    } else {
        Err(format!("cluster {id:?} must be a DNS label: 1–63 characters of [a-z0-9-], not starting or ending with '-'"))
    }
}

/// Tenant names become Durable Object names and URL segments: keep them to DNS-label-like text.
pub fn validate_tenant(tenant: &str) -> Result<(), String> {
    let ok = !tenant.is_empty()
        && tenant.len() <= 253
        && tenant
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "tenant {tenant:?} must be 1–253 characters of [A-Za-z0-9._-]"
        ))
    }
}

/// Splits a leading `c/<cluster>` off a path's segments. `Err` for an invalid id.
pub fn split_cluster<'a, 'b>(segments: &'b [&'a str]) -> Result<(&'a str, &'b [&'a str]), String> {
    match segments {
        ["c", cluster, rest @ ..] => validate_cluster(cluster).map(|()| (*cluster, rest)),
        _ => Ok((DEFAULT_CLUSTER, segments)),
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
    fn cluster_ids_are_dns_labels() {
        for ok in ["prod", "eu-west-1", "a", &"x".repeat(63)] {
            assert!(validate_cluster(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "a-", "Prod", "a_b", "a/b", "a.b", &"x".repeat(64)] {
            assert!(validate_cluster(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn paths_split_and_colony_names_round_trip() {
        assert_eq!(
            split_cluster(&["c", "prod", "v1", "filter"]),
            Ok(("prod", &["v1", "filter"][..]))
        );
        assert_eq!(
            split_cluster(&["v1", "filter"]),
            Ok((DEFAULT_CLUSTER, &["v1", "filter"][..]))
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
