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

use std::collections::{btree_map, BTreeMap};
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Error as _, MapAccess, Visitor};
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
                    // One search per key: the slot found empty is the one filled.
                    match map.entry(key) {
                        btree_map::Entry::Occupied(e) => {
                            return Err(A::Error::custom(format!("duplicate key {:?}", e.key())));
                        }
                        btree_map::Entry::Vacant(e) => {
                            e.insert(access.next_value()?);
                        }
                    }
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
    // Most documents read: parse without tracking the path (which costs on every key of every
    // document) and track it only to name the field of one that does not.
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
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
        // A visitor rather than an untagged enum, which would buffer every quantity first.
        struct Text;
        impl Visitor<'_> for Text {
            type Value = QuantityText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a quantity (string or number)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<QuantityText, E> {
                Ok(QuantityText(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<QuantityText, E> {
                Ok(QuantityText(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<QuantityText, E> {
                Ok(QuantityText(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<QuantityText, E> {
                Ok(QuantityText(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<QuantityText, E> {
                // As serde_json writes the number (a non-finite one cannot come from JSON).
                serde_json::Number::from_f64(v)
                    .map(|n| QuantityText(n.to_string()))
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Float(v), &self))
            }
        }
        d.deserialize_any(Text)
    }
}

impl serde::Serialize for QuantityText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_strings_or_as_serde_json_writes_a_number() {
        let doc = r#"{"a":"500m","b":2,"c":-3,"d":1.5,"e":1e3,"f":"1Gi"}"#;
        let list: RawResourceList = parse_json_at(doc).unwrap();
        let value: serde_json::Value = serde_json::from_str(doc).unwrap();
        for (name, text) in &list {
            let expected = match &value[name] {
                serde_json::Value::String(s) => s.clone(),
                number => number.to_string(),
            };
            assert_eq!(text.0, expected, "{name}");
        }
        assert_eq!(list["e"].0, "1000.0");
    }

    #[test]
    fn a_quantity_of_another_type_is_refused_at_its_path() {
        for bad in ["null", "true", "{}", "[1]"] {
            let doc = format!(r#"{{"status":{{"allocatable":{{"cpu":"1","memory":{bad}}}}}}}"#);
            let (path, message) = parse_json_at::<NodeView>(&doc).unwrap_err();
            assert_eq!(path.as_deref(), Some("status.allocatable.memory"), "{bad}");
            assert!(message.contains("quantity"), "{bad}: {message}");
        }
    }

    #[test]
    fn a_repeated_key_is_refused_at_its_map() {
        let doc = r#"{"metadata":{"name":"n","labels":{"a":"1","b":"2","a":"3"}}}"#;
        let (path, message) = parse_json_at::<NodeView>(doc).unwrap_err();
        assert_eq!(path.as_deref(), Some("metadata.labels"));
        assert!(message.contains(r#"duplicate key "a""#), "{message}");
        let view: NodeView =
            parse_json_at(r#"{"metadata":{"name":"n","labels":{"a":"1","b":"2"}}}"#).unwrap();
        assert_eq!(view.metadata.labels.len(), 2);
    }

    #[test]
    fn trailing_characters_are_refused_without_a_path() {
        let (path, message) = parse_json_at::<NodeView>(r#"{"metadata":{}} x"#).unwrap_err();
        assert_eq!(path, None);
        assert!(message.contains("trailing"), "{message}");
    }
}
