//! The report on hand-made records: well-formed XML, names escaped, one line per tenant × node
//! shown, and sensible output for empty and single-point records.

use quick_xml::events::Event;
use quick_xml::{Reader, XmlVersion};

use super::*;
use crate::replay_record::{NodeInfo, Placed, PodRecord, TrailSample};

/// Geometry attributes, whose values must all be finite numbers.
const GEOMETRY: [&str; 11] = [
    "x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "width", "height", "points",
];

/// Parses the whole document as XML; returns the `class` attribute of every element, in order.
/// Fails on mismatched or unclosed tags, broken attributes, unknown entities, characters XML
/// forbids or a coordinate that is not a finite number.
fn classes(doc: &str) -> Result<Vec<String>, String> {
    let mut reader = Reader::from_str(doc);
    reader.config_mut().check_end_names = true;
    let (mut depth, mut out) = (0usize, Vec::new());
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("at {}: {e}", reader.buffer_position()))?;
        let start = match &event {
            Event::Start(e) | Event::Empty(e) => Some(e.clone()),
            _ => None,
        };
        if let Some(e) = start {
            for a in e.attributes() {
                let a = a.map_err(|e| e.to_string())?;
                let value = a
                    .normalized_value(XmlVersion::Implicit1_0)
                    .map_err(|e| e.to_string())?;
                if a.key.0 == "class" {
                    out.push(value.into_owned());
                } else if GEOMETRY.contains(&a.key.0) {
                    let bad = value
                        .split([' ', ','])
                        .filter(|v| !v.is_empty())
                        .find(|v| !v.parse::<f64>().is_ok_and(f64::is_finite));
                    if let Some(v) = bad {
                        return Err(format!("coordinate {v:?} in {value:?}"));
                    }
                }
            }
        }
        match event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.checked_sub(1).ok_or("end tag without a start")?,
            Event::Text(t) => {
                let text = t.xml10_content();
                if let Some(c) = text
                    .chars()
                    .find(|c| (*c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r'))
                {
                    return Err(format!("control character {:?} in text", c));
                }
            }
            Event::GeneralRef(r) => {
                let known = r.is_char_ref() && r.resolve_char_ref().ok().flatten().is_some()
                    || matches!(
                        r.xml10_content().as_ref(),
                        "amp" | "lt" | "gt" | "quot" | "apos"
                    );
                if !known {
                    return Err(format!("unknown entity &{};", r.xml10_content()));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if depth == 0 {
        Ok(out)
    } else {
        Err(format!("{depth} element(s) left open"))
    }
}

fn count(classes: &[String], class: &str) -> usize {
    classes.iter().filter(|c| *c == class).count()
}

fn node(name: &str, model: Option<&str>, price: f64) -> NodeInfo {
    NodeInfo {
        name: name.into(),
        gpu_model: model.map(String::from),
        price_per_h: price,
    }
}

fn pod(step: usize, tenant: &str, name: &str, on: Option<(&str, f64, f64)>) -> PodRecord {
    PodRecord {
        step,
        hours: step as f64 / 10.0,
        tenant: tenant.into(),
        pod: name.into(),
        placed: on.map(|(node, price, marginal)| Placed {
            node: node.into(),
            price_per_h: price,
            marginal_per_h: marginal,
        }),
    }
}

/// Two tenants, 9 nodes with τ for tenant a (more than `TOP`), 3 for tenant b, over 3 samples.
fn busy_record() -> ReplayRecord {
    let nodes: Vec<NodeInfo> = (0..9)
        .map(|i| {
            node(
                &format!("n{i}"),
                (i % 2 == 0).then_some("T4"),
                0.5 + i as f64,
            )
        })
        .collect();
    let trails = (1..=3)
        .map(|k| TrailSample {
            step: k * 4,
            tenants: vec![
                (
                    "a".to_string(),
                    (0..9)
                        .map(|i| (format!("n{i}"), 1.0 + (i * k) as f64 / 10.0))
                        .collect(),
                ),
                (
                    "b".to_string(),
                    (0..3)
                        .map(|i| (format!("n{i}"), 2.0 - i as f64 / 10.0))
                        .collect(),
                ),
            ],
        })
        .collect();
    let pods = (1..=12)
        .map(|s| {
            pod(
                s,
                if s % 2 == 0 { "a" } else { "b" },
                &format!("p{s}"),
                (s != 5).then(|| (["n0", "n3", "n8"][s % 3], 1.0, 0.1 * s as f64)),
            )
        })
        .collect();
    ReplayRecord {
        title: "test".into(),
        nodes,
        tenants: vec!["a".into(), "b".into()],
        trails,
        pods,
    }
}

#[test]
fn draws_one_line_per_tenant_and_node_shown_and_summarises_the_rest() {
    let doc = render(&busy_record());
    let c = classes(&doc).unwrap();
    // Tenant a: TOP of its 9 nodes, plus the mean of the other 3; tenant b: all 3 nodes.
    assert_eq!(count(&c, "series"), NODES_PER_TENANT + 3);
    assert_eq!(count(&c, "others"), 1);
    assert!(doc.contains("mean of 3 other node(s)"));
    // Tenant a ranks n8..n3 highest (τ = 1 + 3i/10) and summarises n0..n2, which tenant b draws.
    assert_eq!(doc.matches("<title>n8</title></polyline>").count(), 1);
    assert_eq!(doc.matches("<title>n1</title></polyline>").count(), 1);
    // A dot and a grid cell per pod; the unschedulable one marked on the cost axis.
    assert_eq!(
        (count(&c, "pod"), count(&c, "cell"), count(&c, "unplaced")),
        (11, 12, 1)
    );
    assert_eq!((count(&c, "rolling"), count(&c, "cumulative")), (1, 1));
}

#[test]
fn names_are_escaped_everywhere() {
    let evil = "<script>alert('x')</script>&\"\u{1}";
    let mut r = busy_record();
    r.title = evil.into();
    r.tenants[0] = evil.into();
    r.nodes[0].name = evil.into();
    r.nodes[0].gpu_model = Some(evil.into());
    for s in &mut r.trails {
        s.tenants[0].0 = evil.into();
        s.tenants[0].1[8].0 = evil.into();
    }
    for p in &mut r.pods {
        p.pod = evil.into();
        if p.tenant == "a" {
            p.tenant = evil.into();
        }
        if let Some(pl) = &mut p.placed {
            pl.node = evil.into();
        }
    }
    let doc = render(&r);
    assert!(!doc.contains("<script"), "raw markup in the report");
    assert!(!doc.contains('\u{1}'));
    assert!(doc.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"));
    classes(&doc).unwrap();
}

#[test]
fn an_empty_record_is_a_valid_document_saying_there_is_no_data() {
    let doc = render(&ReplayRecord::default());
    let c = classes(&doc).unwrap();
    assert_eq!(count(&c, "nodata"), 3, "one note per section");
    assert_eq!(
        count(&c, "series") + count(&c, "pod") + count(&c, "cell"),
        0
    );
    assert!(doc.starts_with("<!DOCTYPE html>") && doc.contains("No data"));
}

#[test]
fn tenants_without_trails_and_runs_without_placements_say_so() {
    let mut r = busy_record();
    r.tenants.push("c".into());
    for p in &mut r.pods {
        p.placed = None;
    }
    let doc = render(&r);
    let c = classes(&doc).unwrap();
    assert_eq!(
        count(&c, "nodata"),
        2,
        "tenant c has no trail, no pod was placed"
    );
    assert_eq!((count(&c, "cell"), count(&c, "pod")), (12, 0));
}

#[test]
fn a_single_point_renders_finite_coordinates() {
    let r = ReplayRecord {
        title: "one".into(),
        nodes: vec![node("solo", None, 0.0)],
        tenants: vec!["t".into()],
        trails: vec![TrailSample {
            step: 1,
            tenants: vec![("t".into(), vec![("solo".into(), 0.0)])],
        }],
        pods: vec![pod(1, "t", "only", Some(("solo", 0.0, 0.0)))],
    };
    // `classes` rejects any coordinate that is not a finite number (a 0/0 would be NaN).
    let c = classes(&render(&r)).unwrap();
    assert_eq!(
        (count(&c, "series"), count(&c, "pod"), count(&c, "cell")),
        (1, 1, 1)
    );
}

#[test]
fn the_report_is_self_contained() {
    let doc = render(&busy_record());
    for needle in ["<script", "http://", "https://", "@import", "url("] {
        let allowed = needle == "http://"
            && doc.matches(needle).count() == doc.matches("xmlns=\"http://www.w3.org/").count();
        assert!(!doc.contains(needle) || allowed, "{needle} in the report");
    }
}

#[test]
fn write_creates_the_directory() {
    let dir = std::env::temp_dir().join(format!("aco-report-test-{}", std::process::id()));
    let path = dir.join("nested/report.html");
    write(&path, &busy_record()).unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        render(&busy_record())
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
