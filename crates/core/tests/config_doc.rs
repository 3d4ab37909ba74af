//! docs/configuration.md's tables are generated from the declarations (`config_keys!` in
//! `config.rs`, `access::documented_vars`): this fails when the committed page differs from what
//! they generate, and `ACO_WRITE_DOCS=1 cargo test -p aco-core --test config_doc` rewrites it.

use aco_core::access::{documented_vars as access_vars, ExtenderAuth};
use aco_core::config::{Config, REPLACED_VARS};
use aco_core::config_doc::VarDoc;
use std::cell::RefCell;
use std::path::PathBuf;

const BEGIN: &str = "<!-- BEGIN GENERATED: config_keys! (crates/core/src/config.rs) -->\n";
const END: &str = "<!-- END GENERATED -->";

fn page() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md")
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn row(v: &VarDoc) -> String {
    let keys = v
        .keys
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut value = vec![v.format.to_string()];
    value.extend(v.checks.iter().map(|c| c.to_string()));
    format!(
        "| {} | {} | {} | {} |\n",
        keys,
        cell(&format!("`{}`", v.default))
            .replace("`(empty)`", "(empty)")
            .replace("`(unset)`", "(unset)"),
        cell(&value.join("; ")),
        cell(&v.meaning())
    )
}

fn table(rows: &[VarDoc]) -> String {
    let mut out = String::from("| var | default | value | meaning |\n|---|---|---|---|\n");
    for v in rows {
        out.push_str(&row(v));
    }
    out
}

/// What goes between the markers.
fn generated() -> String {
    let mut out = table(&Config::documented_vars());
    out.push_str("\nSecrets and the extender verbs' authentication (`aco_core::access`):\n\n");
    out.push_str(&table(&access_vars()));
    out.push_str("\nNo longer read, refused by name (`REPLACED_VARS`):\n\n");
    for (old, now) in REPLACED_VARS {
        out.push_str(&format!("- `{old}`: {now}.\n"));
    }
    out
}

#[test]
fn the_committed_page_is_what_the_declarations_generate() {
    let path = page();
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text
        .find(BEGIN)
        .expect("docs/configuration.md lost its BEGIN marker")
        + BEGIN.len();
    let end = start
        + text[start..]
            .find(END)
            .expect("docs/configuration.md lost its END marker");
    let want = generated();
    if std::env::var_os("ACO_WRITE_DOCS").is_some() {
        std::fs::write(&path, format!("{}{}{}", &text[..start], want, &text[end..])).unwrap();
        return;
    }
    assert!(
        text[start..end] == want,
        "docs/configuration.md differs from config_keys! and access::documented_vars; \
         regenerate it: ACO_WRITE_DOCS=1 cargo test -p aco-core --test config_doc"
    );
}

#[test]
fn every_var_has_a_format_and_a_meaning() {
    for v in Config::documented_vars().iter().chain(access_vars().iter()) {
        assert!(
            !v.format.is_empty(),
            "{:?}: no format for its reader (config_doc::reader_format)",
            v.keys
        );
        assert!(!v.meaning().is_empty(), "{:?}: no doc comment", v.keys);
    }
}

/// Every key a reader asks for, for a set of vars.
fn keys_read<T>(
    vars: &[(&str, &str)],
    read: impl Fn(&dyn Fn(&str) -> Option<String>) -> T,
) -> Vec<String> {
    let asked = RefCell::new(Vec::new());
    let lookup = |k: &str| {
        asked.borrow_mut().push(k.to_string());
        vars.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.to_string())
    };
    let _ = read(&lookup);
    asked.into_inner()
}

#[test]
fn every_key_the_readers_ask_for_is_documented() {
    let documented: Vec<&str> = Config::documented_vars()
        .iter()
        .chain(access_vars().iter())
        .flat_map(|v| v.keys.iter().copied())
        .chain(REPLACED_VARS.iter().map(|(k, _)| *k))
        .collect();
    let mut asked = keys_read(&[], |l| Config::from_vars(l));
    for mode in ["none", "path-token", "mtls"] {
        asked.extend(keys_read(&[("EXTENDER_AUTH", mode)], |l| {
            ExtenderAuth::from_vars(l)
        }));
    }
    asked.sort();
    asked.dedup();
    let missing: Vec<&String> = asked
        .iter()
        .filter(|k| !documented.contains(&k.as_str()))
        .collect();
    assert!(missing.is_empty(), "read but not documented: {missing:?}");
    assert!(asked.len() > 50, "only {} keys asked for", asked.len());
}
