//! Minimal read-only views of the Kubernetes objects the extender needs.
//!
//! Only the fields we use are declared; serde skips the rest, so a large `v1.Node` costs little to
//! read. Go marshals empty slices/maps as `null`, so every collection accepts `null` as empty.

mod node;
mod pod;
mod resources;

pub use node::{NodeMeta, NodeStatus, NodeView};
pub use pod::{Container, PodMeta, PodSpec, PodView, ResourceRequirements};
pub use resources::{parse_resource_list, pod_request, ResourceAmounts, ResourceError};

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

/// Deserialises `null` (or a missing field, with `#[serde(default)]`) as `T::default()`.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
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
