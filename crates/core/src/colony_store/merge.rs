//! JSON Merge Patch (RFC 7386) between two serialisations of the same value: what a ledger entry
//! records of the colony. Serde-generic on purpose: a field added to `TenantColony` (or to the
//! per-node stats it holds) flows through the ledger and the snapshot without a schema change.
//! A patch holds absolute values, so applying it twice is applying it once.

use serde_json::{Map, Value};

/// The patch that turns `before` into `after` (`Value::Null` when they are equal). A member
/// removed from an object is `null` in the patch; a non-object value is replaced whole.
pub fn diff(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut patch = Map::new();
            for (k, av) in a {
                match b.get(k) {
                    Some(bv) if bv == av => {}
                    Some(bv) if bv.is_object() && av.is_object() => {
                        patch.insert(k.clone(), diff(bv, av));
                    }
                    _ => {
                        patch.insert(k.clone(), av.clone());
                    }
                }
            }
            for k in b.keys() {
                if !a.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            if patch.is_empty() {
                Value::Null
            } else {
                Value::Object(patch)
            }
        }
        _ if before == after => Value::Null,
        _ => after.clone(),
    }
}

/// Applies a patch made by [`diff`] (RFC 7386 semantics; `Null` changes nothing).
pub fn apply(target: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        if !patch.is_null() {
            *target = patch.clone();
        }
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in members {
            if v.is_null() {
                t.remove(k);
            } else if v.is_object() {
                apply(t.entry(k.clone()).or_insert(Value::Null), v);
            } else {
                t.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_turns_before_into_after_and_applies_idempotently() {
        let before = json!({"epoch": 3, "trails": {"a": {"tau": 1.0, "epoch": 1}, "b": {"tau": 2.0, "epoch": 2}}, "gone": 1});
        let after = json!({"epoch": 4, "trails": {"a": {"tau": 1.0, "epoch": 1}, "b": {"tau": 2.5, "epoch": 4}, "c": {"tau": 1.5, "epoch": 4}}, "new": [1, 2]});
        let patch = diff(&before, &after);
        assert_eq!(
            patch,
            json!({"epoch": 4, "trails": {"b": {"tau": 2.5, "epoch": 4}, "c": {"tau": 1.5, "epoch": 4}}, "new": [1, 2], "gone": null})
        );
        let mut v = before.clone();
        apply(&mut v, &patch);
        assert_eq!(v, after);
        apply(&mut v, &patch);
        assert_eq!(v, after, "applying twice is applying once");
        assert_eq!(diff(&after, &after), Value::Null);
    }
}
