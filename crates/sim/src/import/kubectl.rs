//! The objects of a `kubectl get … -o json` dump: a `v1.List` (what `kubectl get nodes,pods`
//! prints, each item with its own `kind`), a typed list (`NodeList`, `PodList`: what
//! `kubectl get pods` or the API's list call returns, items without `kind`), or one object.

use serde_json::Value;

use crate::trace::Error;

/// Every object of the dump `text` (read from `source`, named in errors), each with its
/// `kind`.
pub fn objects(text: &str, source: &str) -> Result<Vec<Value>, Error> {
    let dump: Value = serde_json::from_str(text).map_err(|e| format!("{source}: not JSON: {e}"))?;
    let kind = dump["kind"].as_str().unwrap_or_default();
    if kind == "List" || kind.ends_with("List") {
        let item_kind = kind.strip_suffix("List").filter(|k| !k.is_empty());
        let items = dump["items"]
            .as_array()
            .ok_or_else(|| format!("{source}: a {kind} without items"))?;
        return Ok(items
            .iter()
            .map(|item| {
                let mut item = item.clone();
                if let (Some(k), Some(o)) = (item_kind, item.as_object_mut()) {
                    o.entry("kind").or_insert_with(|| k.into());
                }
                item
            })
            .collect());
    }
    if dump["metadata"].is_object() && !kind.is_empty() {
        return Ok(vec![dump]);
    }
    Err(format!(
        "{source}: expected the JSON of `kubectl get nodes,pods -o json` (a v1.List), a NodeList, a PodList or one object"
    )
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_typed_lists_and_single_objects() {
        let list = r#"{"apiVersion":"v1","kind":"List","items":[
            {"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}},
            {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"a"}}],
            "metadata":{"resourceVersion":""}}"#;
        let o = objects(list, "dump.json").unwrap();
        assert_eq!(
            o.iter()
                .map(|o| o["kind"].as_str().unwrap())
                .collect::<Vec<_>>(),
            vec!["Node", "Pod"]
        );
        let pods = r#"{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"p"}}]}"#;
        assert_eq!(objects(pods, "pods.json").unwrap()[0]["kind"], "Pod");
        let one = r#"{"kind":"Node","metadata":{"name":"n"}}"#;
        assert_eq!(objects(one, "node.json").unwrap().len(), 1);
        for bad in ["[]", "{\"kind\":\"List\"}", "not json", "{}"] {
            let e = objects(bad, "x.json").unwrap_err().to_string();
            assert!(e.starts_with("x.json: "), "{e}");
        }
    }
}
