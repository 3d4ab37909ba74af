//! Small reads and edits of v1.Node (and any object's) JSON the tests share.

use serde_json::{json, Value};

/// `metadata.name`.
pub fn name_of(v: &Value) -> String {
    v["metadata"]["name"].as_str().unwrap().to_owned()
}

/// Sets the label `key` of `node` to `value`.
pub fn set_label(node: &mut Value, key: &str, value: &str) {
    node["metadata"]["labels"][key] = json!(value);
}
