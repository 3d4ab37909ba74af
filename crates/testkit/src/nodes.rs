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

/// The label `key` of `node` (any object), if it has it.
pub fn label_of(node: &Value, key: &str) -> Option<String> {
    node["metadata"]["labels"][key].as_str().map(str::to_owned)
}

/// `status.allocatable[resource]` of a v1.Node, if it has it.
pub fn allocatable_of(node: &Value, resource: &str) -> Option<String> {
    node["status"]["allocatable"][resource]
        .as_str()
        .map(str::to_owned)
}

/// Sets `status.allocatable[resource]` of `node` to `value` (any JSON, e.g. a bad quantity).
pub fn set_allocatable(node: &mut Value, resource: &str, value: Value) {
    node["status"]["allocatable"][resource] = value;
}

/// Sets `metadata.name` of `node` to `value` (any JSON, e.g. a number where a name belongs).
pub fn set_name(node: &mut Value, value: Value) {
    node["metadata"]["name"] = value;
}

/// `node` without the label `key`.
pub fn remove_label(mut node: Value, key: &str) -> Value {
    if let Some(labels) = node["metadata"]["labels"].as_object_mut() {
        labels.remove(key);
    }
    node
}

/// `node` cordoned (`spec.unschedulable`, what `kubectl cordon` sets).
pub fn cordon(mut node: Value) -> Value {
    node["spec"]["unschedulable"] = json!(true);
    node
}
