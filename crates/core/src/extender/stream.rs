//! `ExtenderArgs` read node by node: a serde visitor over the body (serde_json borrowing from
//! it) hands each item of `Nodes.items` to the verb as soon as it is read — typed, judged, then
//! dropped — so that no parsed NodeList is ever held, only what the verb keeps of each node.
//!
//! kube-scheduler marshals `Pod` before `Nodes` (Go's encoding/json writes struct fields in
//! declaration order: `Pod`, `Nodes`, `NodeNames`). Items that arrive before the pod are held as
//! raw slices of the body (a pointer and a length each) and judged when it comes.
//!
//! A verb that does not echo node bytes (prioritize) has each item typed straight from the
//! stream, in one pass, as long as the read is the usual one (the pod first and usable as a
//! document, every node typed); anything else — a node that does not read, items before the pod —
//! abandons that read and reads the body again the general way below, which gives the answer or
//! the error. So both reads answer alike; the first only saves each node's second scan.
//!
//! The answer and its errors are those of [`super::parse_args`] then the verb, whatever the order
//! of the keys: a body that does not read as `ExtenderArgs` is refused whole (serde's error,
//! aborting the read), then a missing `Pod`, the pod's errors, the first node that does not read
//! (type errors, names), neither `Nodes` nor `NodeNames`, and last the first error of the verb
//! itself (a node's allocatable, an unusable pod for prioritize) — so a node that does not read
//! after one the verb refused still gives the node's error, as when all were parsed first.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{
    candidate_of, json_error, name_candidates, node_candidate, pod_of, BadRequest, Candidate,
    Streamed, Verb,
};
use crate::config::{NodeKeys, PodKeys};
use crate::demand::{DemandError, PodDemand};
use crate::k8s::{NodeView, PodView};
use crate::wire::borrowed_names;

/// `NodeNames`, each name borrowed from the body unless it has JSON escapes.
#[derive(serde::Deserialize)]
#[serde(transparent)]
struct BorrowedNames<'a>(
    #[serde(borrow, deserialize_with = "borrowed_names")] Option<Vec<Cow<'a, str>>>,
);

/// Reads `body` and runs a verb (`new_verb()`) over its candidates as they are read.
pub(super) fn run<'a, V: Verb<'a>>(
    body: &'a str,
    pod_keys: &PodKeys,
    node_keys: &NodeKeys,
    new_verb: impl Fn() -> V,
) -> Result<Streamed<V::Output>, BadRequest> {
    if !V::READS_NODE_BYTES {
        let (reading, parsed) = read(body, pod_keys, node_keys, new_verb(), true);
        if !reading.gave_up {
            return reading.answer(parsed);
        }
    }
    let (reading, parsed) = read(body, pod_keys, node_keys, new_verb(), false);
    reading.answer(parsed)
}

/// One read of `body` (`typed`: items typed straight from the stream, which may give up).
fn read<'a, 'c, V: Verb<'a>>(
    body: &'a str,
    pod_keys: &'c PodKeys,
    node_keys: &'c NodeKeys,
    verb: V,
    typed: bool,
) -> (Reading<'a, 'c, V>, Result<(), serde_json::Error>) {
    let mut reading = Reading {
        pod_keys,
        node_keys,
        verb,
        typed,
        gave_up: false,
        pod_given: false,
        pod: None,
        held: Vec::new(),
        next_item: 0,
        nodes_given: false,
        names: None,
        parse_error: None,
        verb_error: None,
    };
    let mut de = serde_json::Deserializer::from_str(body);
    let parsed = Args(&mut reading)
        .deserialize(&mut de)
        .and_then(|()| de.end());
    (reading, parsed)
}

/// What the read has seen so far.
struct Reading<'a, 'c, V> {
    pod_keys: &'c PodKeys,
    node_keys: &'c NodeKeys,
    verb: V,
    /// Items are typed straight from the stream (no bytes kept); gives up on anything unusual.
    typed: bool,
    /// The typed read gave up: the body is to be read again with `typed` off.
    gave_up: bool,
    /// A `Pod` that is not `null` was read (whether or not it was usable).
    pod_given: bool,
    pod: Option<(PodView, Result<PodDemand, DemandError>)>,
    /// Items read before the pod.
    held: Vec<&'a RawValue>,
    /// Index in `Nodes.items` of the next item judged.
    next_item: usize,
    nodes_given: bool,
    names: Option<Vec<Cow<'a, str>>>,
    /// The first error of the pod or of a node that does not read: once set, nothing more is
    /// judged, the body only read to its end.
    parse_error: Option<BadRequest>,
    /// The verb's first error: once set, nodes are still read (one that does not read comes
    /// first), no longer judged.
    verb_error: Option<BadRequest>,
}

impl<'a, V: Verb<'a>> Reading<'a, '_, V> {
    fn pod(&mut self, raw: Option<&'a RawValue>) {
        // `"Pod": null` is a missing pod, as `Option<&RawValue>` reads it.
        let Some(raw) = raw else { return };
        self.pod_given = true;
        match pod_of(raw, self.pod_keys, self.node_keys) {
            Ok(pod) => self.pod = Some(pod),
            Err(e) => {
                self.parse_error.get_or_insert(e);
                return;
            }
        }
        for raw in std::mem::take(&mut self.held) {
            self.judge(raw);
        }
    }

    fn item(&mut self, raw: &'a RawValue) {
        if self.pod.is_none() && self.parse_error.is_none() {
            self.held.push(raw);
        } else {
            self.judge(raw);
        }
    }

    fn judge(&mut self, raw: &'a RawValue) {
        self.judge_read(|i| node_candidate(i, raw));
    }

    /// Whether an item can be typed straight from the stream: the pod came first and read.
    fn can_type_items(&self) -> bool {
        self.pod.is_some() && self.parse_error.is_none()
    }

    fn judge_typed(&mut self, view: NodeView) {
        self.judge_read(|i| candidate_of(i, view, None));
    }

    fn judge_read(&mut self, read: impl FnOnce(usize) -> Result<Candidate<'a>, BadRequest>) {
        let i = self.next_item;
        self.next_item += 1;
        let Some((_, demand)) = &self.pod else { return };
        if self.parse_error.is_some() {
            return;
        }
        let candidate = match read(i) {
            Ok(c) => c,
            Err(e) => {
                self.parse_error = Some(e);
                return;
            }
        };
        if self.verb_error.is_none() {
            if let Err(e) = self.verb.candidate(demand, i, &candidate) {
                self.verb_error = Some(e);
            }
        }
    }

    /// The answer of a read that did not give up: serde's error first, then [`Self::finish`].
    fn answer(
        self,
        parsed: Result<(), serde_json::Error>,
    ) -> Result<Streamed<V::Output>, BadRequest> {
        parsed.map_err(|e| json_error(e, "invalid ExtenderArgs"))?;
        self.finish()
    }

    fn finish(mut self) -> Result<Streamed<V::Output>, BadRequest> {
        if !self.pod_given {
            return Err(BadRequest::new("Pod", "missing Pod"));
        }
        if let Some(e) = self.parse_error {
            return Err(e);
        }
        let Some((pod, demand)) = self.pod else {
            return Err(BadRequest::new("Pod", "missing Pod"));
        };
        if !self.nodes_given {
            let Some(names) = self.names else {
                return Err(BadRequest::new(
                    "Nodes",
                    "request carries neither Nodes nor NodeNames",
                ));
            };
            for (i, c) in name_candidates(names)?.iter().enumerate() {
                self.verb.candidate(&demand, i, c)?;
            }
        } else if let Some(e) = self.verb_error {
            return Err(e);
        }
        let output = self.verb.finish(&demand, self.nodes_given)?;
        Ok(Streamed { pod, output })
    }
}

/// The keys of `ExtenderArgs`, as `wire::ExtenderArgs` names them (PascalCase and lowercase).
enum Key {
    Pod,
    Nodes,
    NodeNames,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "Pod" | "pod" => Key::Pod,
                    "Nodes" | "nodes" => Key::Nodes,
                    "NodeNames" | "nodenames" | "nodeNames" => Key::NodeNames,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// The whole body: `ExtenderArgs`, read as serde's derive reads `wire::ExtenderArgs` (a map, or
/// a sequence of its three fields; a repeated key is an error).
struct Args<'r, 'a, 'c, V>(&'r mut Reading<'a, 'c, V>);

impl<'de, V: Verb<'de>> DeserializeSeed<'de> for Args<'_, 'de, '_, V> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_struct("ExtenderArgs", &["Pod", "Nodes", "NodeNames"], self)
    }
}

impl<'de, V: Verb<'de>> Visitor<'de> for Args<'_, 'de, '_, V> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct ExtenderArgs")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut pod, mut nodes, mut names) = (false, false, false);
        let once = |seen: &mut bool, name: &'static str| -> Result<(), A::Error> {
            if std::mem::replace(seen, true) {
                return Err(de::Error::duplicate_field(name));
            }
            Ok(())
        };
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Pod => {
                    once(&mut pod, "Pod")?;
                    self.0.pod(map.next_value()?);
                }
                Key::Nodes => {
                    once(&mut nodes, "Nodes")?;
                    map.next_value_seed(NodeList(self.0))?;
                }
                Key::NodeNames => {
                    once(&mut names, "NodeNames")?;
                    self.0.names = map.next_value::<BorrowedNames<'de>>()?.0;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let pod = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &"struct ExtenderArgs with 3 elements"))?;
        self.0.pod(pod);
        if seq.next_element_seed(NodeList(&mut *self.0))?.is_some() {
            self.0.names = seq.next_element::<BorrowedNames<'de>>()?.and_then(|n| n.0);
        }
        Ok(())
    }
}

/// `Nodes`: `null`, or a `v1.NodeList` whose `items` are read one by one (other keys ignored).
struct NodeList<'r, 'a, 'c, V>(&'r mut Reading<'a, 'c, V>);

impl<'de, V: Verb<'de>> DeserializeSeed<'de> for NodeList<'_, 'de, '_, V> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, V: Verb<'de>> Visitor<'de> for NodeList<'_, 'de, '_, V> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct RawNodeList")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.0.nodes_given = true;
        d.deserialize_struct("RawNodeList", &["items"], self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut items = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "items" {
                if std::mem::replace(&mut items, true) {
                    return Err(de::Error::duplicate_field("items"));
                }
                map.next_value_seed(Items(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        seq.next_element_seed(Items(self.0))?;
        Ok(())
    }
}

/// `Nodes.items`: each item's bytes handed to the read as soon as they are known.
struct Items<'r, 'a, 'c, V>(&'r mut Reading<'a, 'c, V>);

impl<'de, V: Verb<'de>> DeserializeSeed<'de> for Items<'_, 'de, '_, V> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, V: Verb<'de>> Visitor<'de> for Items<'_, 'de, '_, V> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.0.typed {
            loop {
                // Anything but the usual read is left to the general one (see the module doc).
                if !self.0.can_type_items() {
                    self.0.gave_up = true;
                    return Err(de::Error::custom("read again keeping node bytes"));
                }
                match seq.next_element::<NodeView>() {
                    Ok(Some(view)) => self.0.judge_typed(view),
                    Ok(None) => return Ok(()),
                    Err(e) => {
                        self.0.gave_up = true;
                        return Err(e);
                    }
                }
            }
        }
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            self.0.item(raw);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Read node by node, every body gives what parsing it first gives: the same reply, counts,
    //! rejections and features, or the same error.
    use std::borrow::Cow;
    use std::collections::HashMap;

    use crate::config::Config;
    use crate::extender::{filter, filter_body, parse_args, scoring_input, scoring_input_body};
    use crate::facts::NodeFacts;

    type Answer = Result<String, (u16, Option<String>, String)>;

    fn filter_parsed_first(body: &str, facts: &HashMap<String, NodeFacts>, c: &Config) -> Answer {
        let args = parse_args(body, &c.pod_keys, &c.node_keys)
            .map_err(|e| (e.status, e.field, e.message))?;
        let o = filter(&args, facts, 5, c).map_err(|e| (e.status, e.field, e.message))?;
        let key = args.pod.decision_key();
        Ok(format!(
            "{} {:?} {key}",
            serde_json::to_string(&o.result).unwrap(),
            (o.passed, o.rejected, o.stale, o.rejections)
        ))
    }

    fn filter_streamed(body: &str, facts: &HashMap<String, NodeFacts>, c: &Config) -> Answer {
        let s = filter_body(body, facts, 5, c).map_err(|e| (e.status, e.field, e.message))?;
        let o = s.output;
        let key = s.pod.decision_key();
        Ok(format!(
            "{} {:?} {key}",
            serde_json::to_string(&o.result).unwrap(),
            (o.passed, o.rejected, o.stale, o.rejections)
        ))
    }

    fn scoring(body: &str, facts: &HashMap<String, NodeFacts>, c: &Config) -> (Answer, Answer) {
        let outlook = Default::default();
        let first = parse_args(body, &c.pod_keys, &c.node_keys)
            .and_then(|args| scoring_input(&args, facts, &outlook, 5, c))
            .map(|s| format!("{s:?}"))
            .map_err(|e| (e.status, e.field, e.message));
        let streamed = scoring_input_body(body, facts, &outlook, 5, c)
            .map(|s| format!("{:?}", s.output))
            .map_err(|e| (e.status, e.field, e.message));
        (first, streamed)
    }

    /// Checks `body` and returns the filter's answer.
    fn same(body: &str) -> Answer {
        let c = Config::default();
        let known = NodeFacts {
            name: "known".into(),
            ..Default::default()
        };
        let facts = HashMap::from([(known.name.clone(), known)]);
        let first = filter_parsed_first(body, &facts, &c);
        assert_eq!(filter_streamed(body, &facts, &c), first, "filter of {body}");
        let (a, b) = scoring(body, &facts, &c);
        assert_eq!(b, a, "scoring input of {body}");
        first
    }

    const GPU_POD: &str = r#"{"metadata":{"name":"p","uid":"u1","annotations":{"scheduling.aco/gpu-models":"V100M16"}},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}"#;
    const V100: &str = r#"{"metadata":{"name":"gpu-v100","labels":{"aco/gpu-type":"V100M16"}},"status":{"allocatable":{"cpu":"8","memory":"32Gi","nvidia.com/gpu":"2"}},"spec":{"taints":null}}"#;
    const T4: &str = r#"{"metadata":{"name":"gpu-t4","labels":{"aco/gpu-type":"T4"}},"status":{"allocatable":{"cpu":"8","memory":"32Gi","nvidia.com/gpu":"1"}}}"#;
    const CPU: &str = r#"{"metadata":{"name":"cpu","labels":{}},"status":{"allocatable":{"cpu":"8","memory":"32Gi"}}}"#;
    const BAD_CPU: &str = r#"{"metadata":{"name":"bad"},"status":{"allocatable":{"cpu":"many"}}}"#;
    const BAD_NAME: &str = r#"{"metadata":{"name":7}}"#;

    fn items(list: &[&str]) -> String {
        format!(r#"{{"metadata":{{}},"items":[{}]}}"#, list.join(","))
    }

    /// Names are read without a `String` each, parsed or streamed, unless they have escapes.
    #[test]
    fn node_names_are_borrowed_from_the_body_unless_escaped() {
        let c = Config::default();
        let facts: HashMap<String, NodeFacts> = ["known", "kn0wn"]
            .map(|n| (n.to_string(), NodeFacts::default()))
            .into_iter()
            .collect();
        let body =
            r#"{"Pod":{"metadata":{"name":"p","uid":"u1"}},"NodeNames":["known","kn\u0030wn"]}"#;
        let borrowed = |names: &[Cow<'_, str>]| {
            names
                .iter()
                .map(|n| (n.to_string(), matches!(n, Cow::Borrowed(_))))
                .collect::<Vec<_>>()
        };
        let want = vec![("known".to_string(), true), ("kn0wn".to_string(), false)];
        let parsed = parse_args(body, &c.pod_keys, &c.node_keys).unwrap();
        let names: Vec<_> = parsed.candidates.iter().map(|n| n.name.clone()).collect();
        assert_eq!(borrowed(&names), want, "parsed");
        let streamed = filter_body(body, &facts, 5, &c).unwrap().output.result;
        assert_eq!(borrowed(&streamed.node_names.unwrap()), want, "streamed");
    }

    #[test]
    fn every_key_order_and_shape_gives_the_parsed_answer() {
        let nodes = items(&[V100, T4, CPU]);
        let pod_first = same(&format!(
            r#"{{"Pod":{GPU_POD},"Nodes":{nodes},"NodeNames":null}}"#
        ));
        assert!(
            pod_first.as_ref().unwrap().contains("gpu-v100"),
            "{pod_first:?}"
        );
        // Nodes before the pod: held, judged when it comes; the same answer.
        let nodes_first = same(&format!(
            r#"{{"NodeNames":null,"Nodes":{nodes},"Pod":{GPU_POD}}}"#
        ));
        assert_eq!(nodes_first, pod_first);
        for body in [
            format!(r#"{{"pod":{GPU_POD},"nodes":{nodes}}}"#),
            format!(r#"{{"x":[1,{{"Pod":2}}],"Nodes":{nodes},"nodeNames":["known"],"Pod":{GPU_POD}}}"#),
            format!(r#"[{GPU_POD},{nodes},["known"]]"#),
            format!(r#"[{GPU_POD},[[{V100}]]]"#),
            format!(r#"[{GPU_POD},null,["known","ghost"]]"#),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":{{"items":[],"metadata":{{"x":1}}}}}}"#),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":{{"metadata":{{}}}}}}"#),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":null,"NodeNames":["known","ghost","known"]}}"#),
            r#"{"NodeNames":["known","ghost"],"Pod":{"metadata":{"name":"q"}}}"#.to_string(),
            r#"{"Pod":{"metadata":{"annotations":{"scheduling.aco/latency-target-us":"soon"}}},"NodeNames":["known"]}"#.to_string(),
            format!(r#"{{"Nodes":{nodes},"Pod":{{"metadata":{{"annotations":{{"scheduling.aco/latency-target-us":"soon"}}}}}}}}"#),
            r#"{"Pod":{"metadata":{"annotations":{"scheduling.aco/latency-target-us":"soon"}}},"Nodes":{"items":[]}}"#.to_string(),
        ] {
            assert!(same(&body).is_ok(), "{body}: {:?}", same(&body));
        }
    }

    #[test]
    fn errors_are_the_parsed_ones_in_the_same_order() {
        let late_bad_name = items(&[V100, BAD_CPU, T4, CPU, BAD_NAME]);
        for (body, field) in [
            // A node the verb cannot judge (its allocatable) and, later, one that does not read:
            // the one that does not read is the answer, as when every node was parsed first.
            (
                format!(r#"{{"Pod":{GPU_POD},"Nodes":{late_bad_name}}}"#),
                "Nodes.items[4].metadata.name",
            ),
            (
                format!(r#"{{"Nodes":{late_bad_name},"Pod":{GPU_POD}}}"#),
                "Nodes.items[4].metadata.name",
            ),
            (
                format!(
                    r#"{{"Pod":{GPU_POD},"Nodes":{}}}"#,
                    items(&[V100, T4, BAD_CPU])
                ),
                "Nodes.items[2].status.allocatable.cpu",
            ),
            (format!(r#"{{"Nodes":{}}}"#, items(&[BAD_NAME])), "Pod"),
            (
                format!(r#"{{"Pod":null,"Nodes":{}}}"#, items(&[V100])),
                "Pod",
            ),
            (
                format!(
                    r#"{{"Nodes":{},"Pod":{{"spec":{{"containers":"x"}}}}}}"#,
                    items(&[BAD_NAME])
                ),
                "Pod.spec.containers",
            ),
            (
                format!(
                    r#"{{"Pod":{{"spec":{{"containers":[{{"resources":{{"requests":{{"memory":"1Qi"}}}}}}]}}}},"Nodes":{}}}"#,
                    items(&[BAD_NAME])
                ),
                "Pod.spec.containers[0].resources.requests.memory",
            ),
            (
                format!(
                    r#"{{"Pod":{GPU_POD},"Nodes":{}}}"#,
                    items(&[V100, r#"{"metadata":{}}"#])
                ),
                "Nodes.items[1].metadata.name",
            ),
            (
                format!(
                    r#"{{"Pod":{GPU_POD},"Nodes":{}}}"#,
                    items(&[&format!(
                        r#"{{"metadata":{{"name":"{}"}}}}"#,
                        "n".repeat(254)
                    )])
                ),
                "Nodes.items[0].metadata.name",
            ),
            (
                format!(r#"{{"Pod":{GPU_POD},"NodeNames":["a",""]}}"#),
                "NodeNames[1]",
            ),
            (format!(r#"{{"Pod":{GPU_POD}}}"#), "Nodes"),
            (format!(r#"[{GPU_POD}]"#), "Nodes"),
            (
                format!(
                    r#"{{"Pod":{{"metadata":{{"annotations":{{"scheduling.aco/latency-target-us":"soon"}}}}}},"Nodes":{}}}"#,
                    items(&[BAD_CPU, BAD_NAME])
                ),
                "Nodes.items[1].metadata.name",
            ),
        ] {
            let e = same(&body).unwrap_err();
            assert_eq!((e.0, e.1.as_deref()), (400, Some(field)), "{body}: {e:?}");
        }
        // Refused whole by serde, wherever the fault is: no field, the read's own message.
        for body in [
            format!(
                r#"{{"Pod":{GPU_POD},"Nodes":{},"Pod":{{}}}}"#,
                items(&[V100])
            ),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":{{"items":[{V100}],"items":[]}}}}"#),
            format!(
                r#"{{"Pod":{GPU_POD},"Nodes":{},"nodes":null}}"#,
                items(&[V100])
            ),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":{}"#, items(&[V100, T4])),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":{{"items":[{V100},{{"metadata":]}}}}"#),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":"x"}}"#),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":{{"items":null}}}}"#),
            format!(
                r#"{{"Pod":{GPU_POD},"Nodes":{},"NodeNames":[1]}}"#,
                items(&[V100])
            ),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":{}}} x"#, items(&[V100])),
            format!(r#"[{GPU_POD},null,[],4]"#),
            "[]".to_string(),
            "7".to_string(),
        ] {
            let e = same(&body).unwrap_err();
            assert_eq!(e.1, None, "{body}: {e:?}");
            assert!(e.2.starts_with("invalid ExtenderArgs"), "{body}: {e:?}");
        }
    }

    /// Prioritize types nodes in one pass when the body is as kube-scheduler sends it, and
    /// leaves everything else to the general read (whose answers `same` compares above).
    #[test]
    fn the_one_pass_read_is_taken_for_the_usual_body_only() {
        let c = Config::default();
        let facts: HashMap<String, NodeFacts> = HashMap::new();
        let outlook = Default::default();
        let one_pass = |body: &str| {
            let verb = crate::extender::ScoringVerb::new(&facts, &outlook, 5, &c, 0);
            !super::read(body, &c.pod_keys, &c.node_keys, verb, true)
                .0
                .gave_up
        };
        let nodes = items(&[V100, T4, CPU]);
        assert!(one_pass(&format!(r#"{{"Pod":{GPU_POD},"Nodes":{nodes}}}"#)));
        assert!(one_pass(&format!(r#"[{GPU_POD},{nodes}]"#)));
        // A node the verb cannot judge still reads: its error is the verb's, found in one pass.
        let bad_amount = items(&[V100, BAD_CPU]);
        assert!(one_pass(&format!(
            r#"{{"Pod":{GPU_POD},"Nodes":{bad_amount}}}"#
        )));
        for body in [
            format!(r#"{{"Nodes":{nodes},"Pod":{GPU_POD}}}"#),
            format!(
                r#"{{"Pod":{GPU_POD},"Nodes":{}}}"#,
                items(&[V100, BAD_NAME])
            ),
            format!(r#"{{"Pod":{{"spec":{{"containers":"x"}}}},"Nodes":{nodes}}}"#),
            format!(r#"{{"Pod":{GPU_POD},"Nodes":{{"items":[{V100},{{"metadata":]}}}}"#),
        ] {
            assert!(!one_pass(&body), "{body}");
        }
    }

    #[test]
    fn thousands_of_nodes_in_any_order_give_the_parsed_answer() {
        let nodes: Vec<String> = (0..3000)
            .map(|i| {
                let (gpu, model) = [("0", "T4"), ("2", "V100M16"), ("1", "V100M16")][i % 3];
                format!(
                    r#"{{"metadata":{{"name":"n{i}","labels":{{"aco/gpu-type":"{model}","aco/latency-us":"{}"}}}},"status":{{"allocatable":{{"cpu":"{}","memory":"32Gi","nvidia.com/gpu":"{gpu}"}}}}}}"#,
                    i % 400,
                    1 + i % 9
                )
            })
            .collect();
        let list = items(&nodes.iter().map(String::as_str).collect::<Vec<_>>());
        let pod_first = same(&format!(r#"{{"Pod":{GPU_POD},"Nodes":{list}}}"#)).unwrap();
        assert!(pod_first.contains("\"n1\"") && pod_first.contains("T4"));
        assert_eq!(
            same(&format!(r#"{{"Nodes":{list},"Pod":{GPU_POD}}}"#)).unwrap(),
            pod_first
        );
    }
}
