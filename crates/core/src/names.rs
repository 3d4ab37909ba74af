//! The four names that cross the project's seams — cluster, tenant, node, pod key — as types
//! that can only hold a valid value. Each is parsed once where it enters (a request body through
//! serde, a path segment, the Kubernetes API in the reporter), so code holding one need not check
//! it again, and stored or sent it is the same string it always was (`serde(transparent)`). It
//! imports nothing of the crate: every module may check a name.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize};

/// The cluster of paths without `/c/<cluster>` (`crate::cluster`).
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

        /// Read as the text it is, wherever a `&str` is taken (`&key` for `&str`).
        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        /// So a map keyed by the name is read with a `&str` (no allocation per lookup): the
        /// order, equality and hash are the inner string's.
        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
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

validated_name!(
    /// A node's name (a Kubernetes object name), valid ([`validate_node_name`]) by construction.
    NodeName,
    validate_node_name
);

validated_name!(
    /// A pod's key in its colony (its UID, or `namespace/name`), valid ([`validate_pod_key`]) by
    /// construction.
    PodKey,
    validate_pod_key
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

impl PodKey {
    /// The key of a pod named by namespace and name (one without a UID): `namespace/name`.
    pub fn namespaced(namespace: &str, name: &str) -> Result<Self, String> {
        Self::try_from(format!("{namespace}/{name}"))
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

/// Longest pod key: a UID is 36 characters; `namespace/name` at most 63 + 1 + 253.
pub const MAX_POD_KEY_LEN: usize = 320;
/// A pod key as the colony stores it: the pod's UID, or `namespace/name`.
pub fn validate_pod_key(key: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '/');
    if key.is_empty()
        || key.len() > MAX_POD_KEY_LEN
        || !key.chars().all(ok_char)
        || key.split('/').any(str::is_empty)
    {
        let shown: String = key.chars().take(40).collect();
        return Err(format!(
            "pod key {shown:?} ({} bytes) is not a pod UID or namespace/name: 1–{MAX_POD_KEY_LEN} characters of [A-Za-z0-9-._/]",
            key.len()
        ));
    }
    Ok(())
}

/// Kubernetes object names: at most 253 characters of lowercase alphanumerics, '-' and '.'.
pub fn validate_node_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(format!("node name {name:?} is not a valid Kubernetes name"))
    }
}

/// Reads an optional name where an empty string means absent (as clients send an unset field,
/// e.g. a pod's UID): `None` rather than an invalid name. Use with `#[serde(default,
/// deserialize_with = "crate::names::empty_as_none")]`.
pub fn empty_as_none<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<String, Error = String>,
{
    match Option::<String>::deserialize(d)? {
        Some(text) if !text.is_empty() => T::try_from(text)
            .map(Some)
            .map_err(serde::de::Error::custom),
        _ => Ok(None),
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
    fn node_names_and_pod_keys_keep_their_validators_messages() {
        assert_eq!(NodeName::parse("node-1.a").unwrap().as_str(), "node-1.a");
        for bad in ["", "Node_1", &"n".repeat(254)] {
            let e = NodeName::parse(bad).unwrap_err();
            assert!(e.contains("is not a valid Kubernetes name"), "{e}");
        }
        assert_eq!(PodKey::parse("ns/p").unwrap().as_str(), "ns/p");
        assert_eq!(
            PodKey::namespaced("ns", "p").unwrap(),
            PodKey::parse("ns/p").unwrap()
        );
        assert!(PodKey::namespaced("", "p").is_err());
        for bad in ["", "a b", "ns//p", &"u".repeat(MAX_POD_KEY_LEN + 1)] {
            let e = PodKey::parse(bad).unwrap_err();
            assert!(e.contains("is not a pod UID or namespace/name"), "{e}");
        }
        // serde: the same bytes, an invalid one refused with the validator's message.
        let n: NodeName = serde_json::from_str(r#""n1""#).unwrap();
        assert_eq!(serde_json::to_string(&n).unwrap(), r#""n1""#);
        let e = serde_json::from_str::<PodKey>(r#""a b""#).unwrap_err();
        assert!(e.to_string().contains("is not a pod UID"), "{e}");
        // Maps keyed by a name are read with a `&str`.
        let map = std::collections::BTreeMap::from([(n, 1)]);
        assert_eq!(map.get("n1"), Some(&1));
    }
}
