//! Many clusters, one deployment: a cluster id in the path (`/c/<cluster>/v1/...`, the
//! `urlPrefix` of that cluster's KubeSchedulerConfiguration and the reporter's `--worker-url`)
//! keys node facts and colonies, so two clusters' node names and tenants never collide. Paths
//! without it are the default cluster, whose storage names are today's (existing colonies and
//! facts stay where they are).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// The cluster of paths without `/c/<cluster>`.
pub const DEFAULT_CLUSTER: &str = "default";

/// Declares a validated name: a private `String` made only by `parse` (or `TryFrom`, or serde,
/// which refuses an invalid value with the validator's message, so a body naming a bad one is a
/// 400 naming its field), read as `&str`.
macro_rules! validated_name {
    ($(#[$doc:meta])* $name:ident, $validate:path) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        /// As the text's own (`"ml"`), so that messages quoting a name read the same typed or not.
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl $name {
            pub fn parse(text: &str) -> Result<Self, String> {
                $validate(text)?;
                Ok(Self(text.to_string()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<&str> for $name {
            type Error = String;
            fn try_from(text: &str) -> Result<Self, String> {
                Self::parse(text)
            }
        }

        impl TryFrom<String> for $name {
            type Error = String;
            fn try_from(text: String) -> Result<Self, String> {
                $validate(&text)?;
                Ok(Self(text))
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Self::try_from(String::deserialize(d)?).map_err(serde::de::Error::custom)
            }
        }
    };
}

validated_name!(
    /// A cluster id, valid ([`validate_cluster`]) by construction.
    ClusterId,
    validate_cluster
);

validated_name!(
    /// A tenant name, valid ([`validate_tenant`]) by construction.
    TenantId,
    validate_tenant
);

impl ClusterId {
    /// The cluster of paths without `/c/<cluster>`.
    pub fn default_cluster() -> Self {
        Self(DEFAULT_CLUSTER.to_string())
    }

    pub fn is_default(&self) -> bool {
        self.0 == DEFAULT_CLUSTER
    }
}

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
    fn names_are_valid_by_construction_whichever_way_they_are_made() {
        assert_eq!(ClusterId::parse("eu-1").unwrap().as_str(), "eu-1");
        assert!(ClusterId::parse("Eu_1").is_err());
        assert!(ClusterId::default_cluster().is_default());
        assert_eq!(ClusterId::try_from("prod").unwrap().to_string(), "prod");
        assert_eq!(
            format!("{:?}", ClusterId::parse("prod").unwrap()),
            r#""prod""#
        );
        assert_eq!(TenantId::parse("ml.team_a").unwrap().as_str(), "ml.team_a");
        assert!(TenantId::try_from(String::new()).is_err());
        assert!(TenantId::parse("a/b").is_err());
        // serde: the same value as a string, and an invalid one refused with the reason.
        let t: TenantId = serde_json::from_str(r#""ml""#).unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), r#""ml""#);
        let e = serde_json::from_str::<TenantId>(r#""a b""#).unwrap_err();
        assert!(e.to_string().contains("[A-Za-z0-9._-]"), "{e}");
        assert!(serde_json::from_str::<ClusterId>(r#""-a""#).is_err());
    }

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
