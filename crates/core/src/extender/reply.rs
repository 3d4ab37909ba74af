//! The filter reply of a full-object request without a second copy of the node objects: the
//! bytes serde_json would write ([`write_filter_result`]), as the reply's own parts (before the
//! first item, after the last) and the passing items as ranges of the request body, which the
//! Worker sends chunk by chunk ([`ReplyChunks`]) once the whole body has been judged.

use std::ops::Range;

use crate::wire::{write_filter_result, ExtenderFilterResult};

/// `serde_json::to_vec(&result)` ([`write_filter_result`]) in three parts: `head`, then the items (`spans` of the body,
/// comma-separated), then `tail`.
#[derive(Debug)]
pub struct FilterReply {
    head: Vec<u8>,
    spans: Vec<Range<usize>>,
    tail: Vec<u8>,
}

/// How serde_json opens a filter reply that carries `Nodes` (its first field).
const ITEMS_OPEN: &[u8] = br#"{"Nodes":{"metadata":{},"items":["#;

impl FilterReply {
    /// The reply of `result`, whose items must be borrowed from `body`; `None` if one is not.
    pub fn of(result: &mut ExtenderFilterResult<'_>, body: &str) -> Option<Self> {
        let items = result
            .nodes
            .as_mut()
            .map(|n| std::mem::take(&mut n.items))
            .unwrap_or_default();
        // The reply without its items, then the items put back.
        let mut head = Vec::new();
        write_filter_result(result, &mut head);
        if let Some(n) = result.nodes.as_mut() {
            n.items = items;
        }
        let items = result.nodes.as_ref().map_or(&[][..], |n| &n.items[..]);
        let base = body.as_ptr() as usize;
        let spans = items
            .iter()
            .map(|raw| {
                let start = (raw.get().as_ptr() as usize).checked_sub(base)?;
                let end = start.checked_add(raw.get().len())?;
                (end <= body.len()).then_some(start..end)
            })
            .collect::<Option<Vec<_>>>()?;
        let tail = if result.nodes.is_some() && head.starts_with(ITEMS_OPEN) {
            head.split_off(ITEMS_OPEN.len())
        } else {
            Vec::new()
        };
        (spans.is_empty() || !tail.is_empty()).then_some(Self { head, spans, tail })
    }

    /// The reply's length in bytes.
    pub fn len(&self) -> usize {
        let items: usize = self.spans.iter().map(|r| r.len()).sum();
        self.head.len() + items + self.spans.len().saturating_sub(1) + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The reply in chunks of about `chunk` bytes (one item may make a chunk longer), copied
    /// from `body` (the one [`FilterReply::of`] was given) one chunk at a time.
    pub fn chunks(self, body: String, chunk: usize) -> ReplyChunks {
        ReplyChunks {
            body,
            head: Some(self.head),
            spans: self.spans.into_iter(),
            tail: Some(self.tail),
            first: true,
            chunk: chunk.max(1),
        }
    }
}

/// The chunks of a [`FilterReply`]; it owns the request body the items are read from.
#[derive(Debug)]
pub struct ReplyChunks {
    body: String,
    head: Option<Vec<u8>>,
    spans: std::vec::IntoIter<Range<usize>>,
    tail: Option<Vec<u8>>,
    first: bool,
    chunk: usize,
}

impl Iterator for ReplyChunks {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        let mut buf = self.head.take().unwrap_or_default();
        while buf.len() < self.chunk {
            let Some(span) = self.spans.next() else {
                buf.extend(self.tail.take().unwrap_or_default());
                break;
            };
            if !std::mem::take(&mut self.first) {
                buf.push(b',');
            }
            buf.extend_from_slice(self.body.as_bytes().get(span).unwrap_or_default());
        }
        (!buf.is_empty()).then_some(buf)
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::collections::BTreeMap;

    use serde_json::value::RawValue;

    use super::*;
    use crate::wire::{EmptyObject, NodeListOut};

    fn result<'a>(items: Option<Vec<&'a RawValue>>) -> ExtenderFilterResult<'a> {
        ExtenderFilterResult {
            nodes: items.map(|items| NodeListOut {
                metadata: EmptyObject {},
                items,
            }),
            node_names: Some(vec![Cow::Borrowed("a"), Cow::Borrowed("b\"q")]),
            failed_nodes: BTreeMap::from([("c".into(), "full".into())]),
            failed_and_unresolvable_nodes: BTreeMap::from([("d".into(), "no GPU".into())]),
            error: String::new(),
        }
    }

    #[test]
    fn chunks_concatenate_to_what_serde_json_writes() {
        let body = r#"{"items":[{"metadata":{"name":"a"}} , {"metadata":{"name":"b\"q","x":[1,2]}},{"z":"é"}]}"#;
        #[derive(serde::Deserialize)]
        struct L<'a> {
            #[serde(borrow)]
            items: Vec<&'a RawValue>,
        }
        let items = serde_json::from_str::<L>(body).unwrap().items;
        for case in [
            Some(items.clone()),
            Some(items[..1].to_vec()),
            Some(Vec::new()),
            None,
        ] {
            let mut r = result(case);
            let expected = serde_json::to_vec(&r).unwrap();
            for chunk in [1, 7, 64, 1 << 16] {
                let reply = FilterReply::of(&mut r, body).unwrap();
                assert_eq!(reply.len(), expected.len());
                let chunks: Vec<Vec<u8>> = reply.chunks(body.to_string(), chunk).collect();
                assert_eq!(chunks.concat(), expected, "chunk {chunk}");
                assert!(chunks.iter().all(|c| !c.is_empty()));
                if chunk == 1 << 16 {
                    assert_eq!(chunks.len(), 1);
                }
            }
            // The result is left as it was.
            assert_eq!(serde_json::to_vec(&r).unwrap(), expected);
        }
    }

    #[test]
    fn items_not_borrowed_from_the_body_are_refused() {
        let other = String::from(r#"{"metadata":{"name":"elsewhere"}}"#);
        let raw: &RawValue = serde_json::from_str(&other).unwrap();
        let mut r = result(Some(vec![raw]));
        assert!(FilterReply::of(&mut r, r#"{"Pod":{}}"#).is_none());
    }
}
