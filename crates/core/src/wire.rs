//! The scheduler-extender wire types, as kube-scheduler speaks them
//! (`k8s.io/kube-scheduler/extender/v1`).
//!
//! The Go types carry no json tags, so keys are PascalCase; Go decodes case-insensitively and
//! schedulers ≤ 1.16 sent lowercase keys. We therefore *accept* both PascalCase and lowercase and
//! always *emit* PascalCase.
//!
//! Node objects are kept as raw JSON (`&RawValue`): with `nodeCacheCapable: false` kube-scheduler
//! uses the node objects of the filter reply as they are, so each passing node must be echoed
//! byte for byte; we parse only the few fields we need from each item ([`crate::k8s::NodeView`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

use crate::names::NodeName;

/// `ExtenderArgs`: the body of `filter` and `prioritize`. Borrowed from the request body.
#[derive(Debug, Deserialize)]
pub struct ExtenderArgs<'a> {
    #[serde(rename = "Pod", alias = "pod", borrow)]
    pub pod: Option<&'a RawValue>,
    #[serde(rename = "Nodes", alias = "nodes", borrow, default)]
    pub nodes: Option<RawNodeList<'a>>,
    #[serde(
        rename = "NodeNames",
        alias = "nodenames",
        alias = "nodeNames",
        borrow,
        default,
        deserialize_with = "borrowed_names"
    )]
    /// Borrowed from the body unless a name has JSON escapes: no `String` per candidate.
    pub node_names: Option<Vec<Cow<'a, str>>>,
}

/// One of `NodeNames`, borrowed from the body unless it has JSON escapes. serde borrows a
/// `Cow<str>` only where `#[serde(borrow)]` marks it; inside a `Vec` it would always allocate.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct BorrowedName<'a>(#[serde(borrow)] pub Cow<'a, str>);

/// `NodeNames` as [`BorrowedName`]s, returned as the `Cow`s they hold.
pub fn borrowed_names<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<Cow<'a, str>>>, D::Error> {
    let names = Option::<Vec<BorrowedName<'a>>>::deserialize(d)?;
    Ok(names.map(|names| names.into_iter().map(|n| n.0).collect()))
}

/// A `v1.NodeList` whose items stay raw.
#[derive(Debug, Deserialize)]
pub struct RawNodeList<'a> {
    #[serde(borrow, default)]
    pub items: Vec<&'a RawValue>,
}

/// `ExtenderFilterResult`. `nodes` is set when the request carried full node objects,
/// `node_names` always; an empty list (never `null`) when nothing passes.
#[derive(Debug, Serialize)]
pub struct ExtenderFilterResult<'a> {
    #[serde(rename = "Nodes")]
    pub nodes: Option<NodeListOut<'a>>,
    /// Borrowed from the request: a passing node's name is not copied.
    #[serde(rename = "NodeNames")]
    pub node_names: Option<Vec<Cow<'a, str>>>,
    #[serde(rename = "FailedNodes")]
    pub failed_nodes: BTreeMap<String, String>,
    #[serde(rename = "FailedAndUnresolvableNodes")]
    pub failed_and_unresolvable_nodes: BTreeMap<String, String>,
    #[serde(rename = "Error")]
    pub error: String,
}

/// The `Nodes` of a filter reply: `{"metadata":{},"items":[…raw…]}` as Go marshals a `v1.NodeList`.
#[derive(Debug, Serialize)]
pub struct NodeListOut<'a> {
    pub metadata: EmptyObject,
    pub items: Vec<&'a RawValue>,
}

#[derive(Debug, Default, Serialize)]
pub struct EmptyObject {}

/// One entry of the prioritize reply (a bare JSON array of these). The host is borrowed from
/// the candidates scored: a reply of 5,000 entries copies no name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPriority<'a> {
    #[serde(rename = "Host", alias = "host", borrow)]
    pub host: Cow<'a, str>,
    #[serde(rename = "Score", alias = "score")]
    pub score: i64,
}

/// `ExtenderBindingArgs`, the body of the `bind` verb.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtenderBindingArgs {
    #[serde(rename = "PodName", alias = "podname", alias = "podName")]
    pub pod_name: String,
    #[serde(
        rename = "PodNamespace",
        alias = "podnamespace",
        alias = "podNamespace"
    )]
    pub pod_namespace: String,
    #[serde(
        rename = "PodUID",
        alias = "poduid",
        alias = "podUID",
        alias = "podUid"
    )]
    pub pod_uid: String,
    #[serde(rename = "Node", alias = "node")]
    pub node: NodeName,
}

/// `ExtenderBindingResult`: an empty `Error` means success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtenderBindingResult {
    #[serde(rename = "Error", alias = "error", default)]
    pub error: String,
}

/// The prioritize reply, `[HostPriority]`, appended to `out` byte for byte as
/// `serde_json::to_vec` writes it, but without serde's writes token by token: the reply has an
/// entry per candidate (thousands), and serde_json spent ~600 instructions on each.
pub fn write_priorities(priorities: &[HostPriority], out: &mut Vec<u8>) {
    out.reserve(priorities.iter().map(|p| p.host.len() + 24).sum::<usize>() + 2);
    out.push(b'[');
    for (i, p) in priorities.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"Host":"#);
        write_json_str(&p.host, out);
        out.extend_from_slice(br#","Score":"#);
        out.extend_from_slice(itoa::Buffer::new().format(p.score).as_bytes());
        out.push(b'}');
    }
    out.push(b']');
}

/// The filter reply appended to `out` byte for byte as `serde_json::to_vec` writes it, without
/// serde's writes token by token (a name, and a reason for each failed node, per candidate).
pub fn write_filter_result(result: &ExtenderFilterResult, out: &mut Vec<u8>) {
    let names = result.node_names.iter().flatten().map(|n| n.len() + 3);
    let failed = [&result.failed_nodes, &result.failed_and_unresolvable_nodes]
        .into_iter()
        .flatten()
        .map(|(node, reason)| node.len() + reason.len() + 6);
    out.reserve(names.chain(failed).sum::<usize>() + 128);
    out.extend_from_slice(br#"{"Nodes":"#);
    match &result.nodes {
        None => out.extend_from_slice(b"null"),
        Some(list) => {
            out.extend_from_slice(br#"{"metadata":{},"items":["#);
            for (i, item) in list.items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(item.get().as_bytes());
            }
            out.extend_from_slice(b"]}");
        }
    }
    out.extend_from_slice(br#","NodeNames":"#);
    match &result.node_names {
        None => out.extend_from_slice(b"null"),
        Some(names) => {
            out.push(b'[');
            for (i, name) in names.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_str(name, out);
            }
            out.push(b']');
        }
    }
    out.extend_from_slice(br#","FailedNodes":"#);
    write_json_map(&result.failed_nodes, out);
    out.extend_from_slice(br#","FailedAndUnresolvableNodes":"#);
    write_json_map(&result.failed_and_unresolvable_nodes, out);
    out.extend_from_slice(br#","Error":"#);
    write_json_str(&result.error, out);
    out.push(b'}');
}

/// A map of strings as a JSON object, in the map's order (serde_json's for a `BTreeMap`).
fn write_json_map(map: &BTreeMap<String, String>, out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json_str(key, out);
        out.push(b':');
        write_json_str(value, out);
    }
    out.push(b'}');
}

/// `s` as a JSON string, escaped as serde_json escapes it.
fn write_json_str(s: &str, out: &mut Vec<u8>) {
    // No early exit: a branch-free pass over the bytes, which the compiler vectorises.
    let needs_escape = s.bytes().fold(false, |any, b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if !needs_escape {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // A quote, a backslash or a control character: serde_json's own escapes. Writing a
        // string into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

#[cfg(test)]
mod tests {
    //! Golden bytes from kube-scheduler's own `extender/v1/types_test.go` (TestCompatibility):
    //! what Go emits we must read, in PascalCase and lowercased; what we emit must equal what Go emits.
    use super::*;

    proptest::proptest! {
        /// The hand-written prioritize reply is serde_json's, whatever the names and scores
        /// (quotes, backslashes, control characters, non-ASCII).
        #[test]
        fn written_priorities_are_serde_jsons_bytes(
            entries in proptest::collection::vec(
                (any_text(), proptest::arbitrary::any::<i64>()),
                0..6,
            )
        ) {
            let priorities: Vec<HostPriority> = entries
                .iter()
                .map(|(host, score)| HostPriority { host: host.as_str().into(), score: *score })
                .collect();
            let mut out = b"kept".to_vec();
            write_priorities(&priorities, &mut out);
            let mut expected = b"kept".to_vec();
            expected.extend(serde_json::to_vec(&priorities).unwrap());
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(expected).unwrap());
        }
    }

    fn any_text() -> impl proptest::strategy::Strategy<Value = String> {
        proptest::prop_oneof![
            proptest::arbitrary::any::<String>(),
            "[\"\\\\\\x00-\\x1f\\x7fa-zé]{0,6}",
        ]
    }

    proptest::proptest! {
        /// The hand-written filter reply is serde_json's, in both modes, whatever the names and
        /// reasons.
        #[test]
        fn written_filter_results_are_serde_jsons_bytes(
            items in proptest::option::of(proptest::collection::vec(0..3usize, 0..4)),
            names in proptest::option::of(proptest::collection::vec(any_text(), 0..5)),
            failed in proptest::collection::btree_map(any_text(), any_text(), 0..4),
            unresolvable in proptest::collection::btree_map(any_text(), any_text(), 0..4),
            error in any_text(),
        ) {
            let raw: Vec<Box<RawValue>> = [NODE_ITEM, r#"{"metadata":{"name":"a\"b"}}"#, "{ }"]
                .iter()
                .map(|s| RawValue::from_string(s.to_string()).unwrap())
                .collect();
            let result = ExtenderFilterResult {
                nodes: items.map(|items| NodeListOut {
                    metadata: EmptyObject {},
                    items: items.iter().map(|&i| &*raw[i]).collect(),
                }),
                node_names: names.map(|n| n.into_iter().map(Cow::Owned).collect()),
                failed_nodes: failed,
                failed_and_unresolvable_nodes: unresolvable,
                error,
            };
            let mut out = b"kept".to_vec();
            write_filter_result(&result, &mut out);
            let mut expected = b"kept".to_vec();
            expected.extend(serde_json::to_vec(&result).unwrap());
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(expected).unwrap());
        }
    }

    const NODE_ITEM: &str = r#"{"metadata":{"name":"nodename","creationTimestamp":null},"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}}"#;

    fn extender_args_golden() -> String {
        format!(
            r#"{{"Pod":{{"metadata":{{"name":"podname","creationTimestamp":null}},"spec":{{"containers":null}},"status":{{}}}},"Nodes":{{"metadata":{{}},"items":[{NODE_ITEM}]}},"NodeNames":["node1"]}}"#
        )
    }

    #[test]
    fn reads_go_extender_args_in_pascal_and_lower_case() {
        for body in [
            extender_args_golden(),
            extender_args_golden().to_lowercase(),
        ] {
            let args: ExtenderArgs = serde_json::from_str(&body).unwrap();
            assert!(args.pod.unwrap().get().contains("podname"));
            let items = args.nodes.unwrap().items;
            assert_eq!(items.len(), 1);
            assert_eq!(items[0].get().to_lowercase(), NODE_ITEM.to_lowercase());
            assert_eq!(args.node_names, Some(vec![Cow::Borrowed("node1")]));
        }
    }

    #[test]
    fn reads_null_nodes_and_null_node_names() {
        let args: ExtenderArgs =
            serde_json::from_str(r#"{"Pod":{},"Nodes":null,"NodeNames":null}"#).unwrap();
        assert!(args.nodes.is_none() && args.node_names.is_none());
    }

    #[test]
    fn emits_filter_result_exactly_as_go() {
        let item: &RawValue = serde_json::from_str(NODE_ITEM).unwrap();
        let result = ExtenderFilterResult {
            nodes: Some(NodeListOut {
                metadata: EmptyObject {},
                items: vec![item],
            }),
            node_names: Some(vec!["node1".into()]),
            failed_nodes: BTreeMap::from([("foo".into(), "bar".into())]),
            failed_and_unresolvable_nodes: BTreeMap::from([("baz".into(), "qux".into())]),
            error: "myerror".into(),
        };
        let expected = format!(
            r#"{{"Nodes":{{"metadata":{{}},"items":[{NODE_ITEM}]}},"NodeNames":["node1"],"FailedNodes":{{"foo":"bar"}},"FailedAndUnresolvableNodes":{{"baz":"qux"}},"Error":"myerror"}}"#
        );
        assert_eq!(serde_json::to_string(&result).unwrap(), expected);
        let mut written = Vec::new();
        write_filter_result(&result, &mut written);
        assert_eq!(String::from_utf8(written).unwrap(), expected);
    }

    #[test]
    fn host_priority_binding_args_and_result_round_trip_golden_bytes() {
        let hp = HostPriority {
            host: "myhost".into(),
            score: 1,
        };
        let golden = r#"{"Host":"myhost","Score":1}"#;
        assert_eq!(serde_json::to_string(&hp).unwrap(), golden);
        let mut written = Vec::new();
        write_priorities(std::slice::from_ref(&hp), &mut written);
        assert_eq!(String::from_utf8(written).unwrap(), format!("[{golden}]"));
        assert_eq!(
            serde_json::from_str::<HostPriority>(&golden.to_lowercase()).unwrap(),
            hp
        );

        let args = ExtenderBindingArgs {
            pod_name: "mypodname".into(),
            pod_namespace: "mypodnamespace".into(),
            pod_uid: "mypoduid".into(),
            node: NodeName::parse("mynode").unwrap(),
        };
        let golden = r#"{"PodName":"mypodname","PodNamespace":"mypodnamespace","PodUID":"mypoduid","Node":"mynode"}"#;
        assert_eq!(serde_json::to_string(&args).unwrap(), golden);
        assert_eq!(
            serde_json::from_str::<ExtenderBindingArgs>(golden).unwrap(),
            args
        );
        assert_eq!(
            serde_json::from_str::<ExtenderBindingArgs>(&golden.to_lowercase()).unwrap(),
            args
        );

        let res = ExtenderBindingResult {
            error: "myerror".into(),
        };
        assert_eq!(
            serde_json::to_string(&res).unwrap(),
            r#"{"Error":"myerror"}"#
        );
        assert_eq!(
            serde_json::from_str::<ExtenderBindingResult>(r#"{"error":"myerror"}"#).unwrap(),
            res
        );
    }
}
