//! Minimal read-only views of the Kubernetes objects the extender needs.
//!
//! Only the fields we use are declared; serde skips the rest, so a large `v1.Node` costs little to
//! read. Go marshals empty slices/maps as `null`, so every collection accepts `null` as empty.

mod node;
mod pod;
mod resources;

pub use node::{NodeMeta, NodeStatus, NodeView};
pub use pod::{Container, PodMeta, PodSpec, PodView, ResourceRequirements};
pub use resources::{
    parse_resource_list, pod_request, ResourceAmounts, ResourceError, ResourceProblem,
};

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// Deserialises `null` (or a missing field, with `#[serde(default)]`) as `T::default()`.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A JSON object read into a map whose keys must be distinct. serde's `BTreeMap` keeps the last
/// of two equal keys; Kubernetes' strict decoder refuses the object (`duplicate field`), so an
/// object it would refuse never reaches a decision or the store here either.
struct UniqueKeys<K, V>(BTreeMap<K, V>);

impl<'de, K, V> Deserialize<'de> for UniqueKeys<K, V>
where
    K: Deserialize<'de> + Ord + fmt::Debug,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<K, V>(PhantomData<(K, V)>);
        impl<'de, K, V> Visitor<'de> for Entries<K, V>
        where
            K: Deserialize<'de> + Ord + fmt::Debug,
            V: Deserialize<'de>,
        {
            type Value = UniqueKeys<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object with distinct keys")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut map = BTreeMap::new();
                while let Some(key) = access.next_key::<K>()? {
                    if map.contains_key(&key) {
                        return Err(A::Error::custom(format!("duplicate key {key:?}")));
                    }
                    let value = access.next_value()?;
                    map.insert(key, value);
                }
                Ok(UniqueKeys(map))
            }
        }
        d.deserialize_map(Entries(PhantomData))
    }
}

/// A map field (`labels`, `requests`, …): `null` or missing is empty, a repeated key an error.
pub(crate) fn unique_keys<'de, D, K, V>(d: D) -> Result<BTreeMap<K, V>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Ord + fmt::Debug,
    V: Deserialize<'de>,
{
    Ok(Option::<UniqueKeys<K, V>>::deserialize(d)?
        .map(|m| m.0)
        .unwrap_or_default())
}

/// An optional map field: `null` or missing is `None`, a repeated key an error.
pub(crate) fn unique_keys_opt<'de, D, K, V>(d: D) -> Result<Option<BTreeMap<K, V>>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Ord + fmt::Debug,
    V: Deserialize<'de>,
{
    Ok(Option::<UniqueKeys<K, V>>::deserialize(d)?.map(|m| m.0))
}

/// Parses JSON into `T`; on failure the path of the offending field inside the document
/// (`nodes[3].requested`, `spec.containers[0].resources.requests`), when there is one, and
/// serde's message with its position.
pub fn parse_json_at<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, (Option<String>, String)> {
    // serde_json's message already ends with the line and column.
    fn message(e: &serde_json::Error) -> String {
        e.to_string()
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        ((path != ".").then_some(path), message(e.inner()))
    })?;
    de.end().map_err(|e| (None, message(&e)))?;
    Ok(value)
}

/// A `ResourceList` as it appears on the wire: name → quantity. Kubernetes always sends strings;
/// hand-written YAML turned JSON may carry bare numbers, which we accept too.
pub type RawResourceList = BTreeMap<String, QuantityText>;

/// A quantity as text, whether it arrived as a JSON string or a JSON number.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QuantityText(pub String);

impl<'de> Deserialize<'de> for QuantityText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Number(serde_json::Number),
        }
        Ok(QuantityText(match Either::deserialize(d)? {
            Either::Text(s) => s,
            Either::Number(n) => n.to_string(),
        }))
    }
}

impl serde::Serialize for QuantityText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}
