//! The Worker's settings as documentation: what `config_keys!` (`config.rs`) and the access vars
//! (`access.rs`) declare, in the shape docs/configuration.md shows. The page's tables are
//! generated from these (`crates/core/tests/config_doc.rs` fails when they differ), so a var is
//! documented where it is declared, once.

use crate::config::{EtaFactorSet, TenantPolicy, TenantSource};

/// One row of the configuration table: the keys it reads, its default as a var's text would
/// write it, how its text is read, the checks of its value, and its doc comment's lines.
#[derive(Debug, Clone, PartialEq)]
pub struct VarDoc {
    pub keys: &'static [&'static str],
    pub default: String,
    pub format: &'static str,
    pub checks: &'static [&'static str],
    pub doc: &'static [&'static str],
}

impl VarDoc {
    /// The doc comment as one paragraph.
    pub fn meaning(&self) -> String {
        self.doc
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How a reader of `config.rs` reads a var's text, by the reader's name.
pub fn reader_format(reader: &str) -> &'static str {
    match reader {
        "number" => "number",
        "text" => "text",
        "text_list" => "comma-separated list",
        "label_pairs" => "comma-separated `label=value` pairs",
        "tenant_source_rule" => "`label-then-namespace`, `namespace` or `label`",
        "factor_set" => {
            "comma-separated subset of `reliability`, `cost`, `headroom`, `spike`, \
             `fragmentation`, `performance`, or `all`"
        }
        "flag" => "`true` or `false`",
        "location_hint" => {
            "empty or one of `wnam`, `enam`, `sam`, `weur`, `eeur`, `apac`, `oc`, `afr`, `me`"
        }
        "tenant_names" => "comma-separated tenant names; a regular expression matched whole",
        "cluster_names" => {
            "comma-separated cluster ids (DNS labels); a regular expression matched whole"
        }
        _ => "",
    }
}

/// A default value as the var's text would write it.
pub trait Documented {
    fn documented(&self) -> String;
}

/// Numbers and flags are written as they are read.
macro_rules! documented_as_displayed {
    ($($t:ty),*) => {
        $(impl Documented for $t {
            fn documented(&self) -> String {
                self.to_string()
            }
        })*
    };
}

documented_as_displayed!(f64, u64, usize, bool);

impl Documented for String {
    fn documented(&self) -> String {
        if self.is_empty() {
            "(empty)".into()
        } else {
            self.clone()
        }
    }
}

impl Documented for Vec<String> {
    fn documented(&self) -> String {
        self.join(",")
    }
}

impl Documented for Vec<(String, String)> {
    fn documented(&self) -> String {
        self.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Documented for TenantSource {
    fn documented(&self) -> String {
        match self {
            TenantSource::LabelThenNamespace => "label-then-namespace",
            TenantSource::Namespace => "namespace",
            TenantSource::Label => "label",
        }
        .into()
    }
}

impl Documented for EtaFactorSet {
    fn documented(&self) -> String {
        if *self == EtaFactorSet::ALL {
            return "all".into();
        }
        let on = [
            self.reliability,
            self.cost,
            self.headroom,
            self.spike,
            self.fragmentation,
            self.performance,
        ];
        EtaFactorSet::NAMES
            .iter()
            .zip(on)
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Documented for Option<TenantPolicy> {
    fn documented(&self) -> String {
        match self {
            None => "(unset)".into(),
            Some(p) => p.names.join(","),
        }
    }
}
