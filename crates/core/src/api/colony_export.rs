//! `GET [/c/<cluster>]/v1/tenants/{tenant}/export` and `PUT …/import`: a colony's learned state
//! in a file ([`ColonyExport`]) — the trail per node (the faded outcome counts τ is read from),
//! the counters and shadow mode's summary ([`ExportedState`]); files written when the colony also
//! kept a deposit table still import, their learned counts kept and that table dropped — so that an operator can keep it before
//! a risky change or an account move and put it back (`acoctl export` / `acoctl import`).
//!
//! The file is versioned and checked before anything is changed: its `format` and `version`, the
//! cluster and tenant it came from (another one only when asked, `allowRename`), a SHA-256 of the
//! `state` exactly as written in the file, then every value in it. What is in flight is not in the
//! file: pending decisions, placements held for them, remembered pods and kept explanations (an
//! import replaces the colony as a reset would, then sets the learned state), so a placement
//! reported after an import for a pod scored before it is `unknownPod`.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use crate::colony::TenantColony;
use crate::names::validate_node_name;
use crate::shadow::ShadowSummary;

/// `format` of every export.
pub const FORMAT: &str = "aco-colony-export";
/// The version this code writes and reads.
pub const VERSION: u64 = 1;

/// What an export carries of a colony: everything prioritize and shadow mode read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportedState {
    pub colony: TenantColony,
    #[serde(default)]
    pub shadow: ShadowSummary,
}

/// The export file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ColonyExport {
    pub format: String,
    pub version: u64,
    pub cluster: String,
    pub tenant: String,
    pub exported_ms: u64,
    /// The colony's version when it was exported.
    pub colony_version: u64,
    /// `sha256:` and the hex SHA-256 of `state`'s bytes as they are in the file.
    pub checksum: String,
    pub state: Box<RawValue>,
}

/// Why an import is refused: the HTTP status, the field it names, the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub field: &'static str,
    pub message: String,
}

fn refuse(status: u16, field: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        field,
        message: message.into(),
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn checksum(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// `PUT …/import`'s reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReply {
    /// False when the colony already held exactly this state: nothing was written.
    pub changed: bool,
    /// The colony's version after the import.
    pub version: u64,
    /// Nodes with a trail in the imported state.
    pub trails: u64,
}

impl ExportedState {
    /// Every value a colony could not have made itself is refused, naming it.
    pub fn validate(&self) -> Result<(), String> {
        for (node, o) in &self.colony.pheromones.trails {
            // The trail table is keyed by text (scoring reads it with kube-scheduler's names as
            // `&str`); an imported table's names enter here, so they are checked here.
            validate_node_name(node).map_err(|e| format!("trail: {e}"))?;
            let ok = |v: f64| v.is_finite() && v >= 0.0;
            if !(ok(o.successes) && ok(o.failures)) {
                return Err(format!(
                    "trail of {node}: successes {} and failures {} must be finite and ≥ 0",
                    o.successes, o.failures
                ));
            }
            if !(ok(o.slowdown_sum) && ok(o.slowdown_runs)) {
                return Err(format!(
                    "trail of {node}: slowdownSum {} and slowdownRuns {} must be finite and ≥ 0",
                    o.slowdown_sum, o.slowdown_runs
                ));
            }
        }
        Ok(())
    }
}

impl ColonyExport {
    /// The file of `state`, exported from the colony of `cluster` × `tenant` at `version`.
    pub fn new(
        cluster: &str,
        tenant: &str,
        colony_version: u64,
        exported_ms: u64,
        state: &ExportedState,
    ) -> Result<Self, serde_json::Error> {
        let text = serde_json::to_string(state)?;
        Ok(Self {
            format: FORMAT.into(),
            version: VERSION,
            cluster: cluster.into(),
            tenant: tenant.into(),
            exported_ms,
            colony_version,
            checksum: checksum(text.as_bytes()),
            state: RawValue::from_string(text)?,
        })
    }

    /// The state in `text`, if it is an export this code reads, intact, of `cluster` × `tenant`
    /// (or of another colony when `allow_rename`), holding only values a colony could hold.
    pub fn read(
        text: &str,
        cluster: &str,
        tenant: &str,
        allow_rename: bool,
    ) -> Result<ExportedState, Refusal> {
        // Format and version first, alone: a later version may differ in anything else.
        #[derive(Deserialize)]
        struct Header {
            format: Option<String>,
            version: Option<serde_json::Value>,
        }
        let header: Header = serde_json::from_str(text)
            .map_err(|e| refuse(400, "format", format!("not an export file: {e}")))?;
        if header.format.as_deref() != Some(FORMAT) {
            return Err(refuse(
                400,
                "format",
                format!("format is {:?}, not {FORMAT:?}", header.format),
            ));
        }
        if header.version.as_ref().and_then(serde_json::Value::as_u64) != Some(VERSION) {
            return Err(refuse(
                400,
                "version",
                format!(
                    "export version {} is not the one this Worker reads ({VERSION})",
                    header.version.map_or("(none)".into(), |v| v.to_string())
                ),
            ));
        }
        let file: ColonyExport = serde_json::from_str(text)
            .map_err(|e| refuse(400, "state", format!("export file: {e}")))?;
        let sum = checksum(file.state.get().as_bytes());
        if file.checksum != sum {
            return Err(refuse(
                400,
                "checksum",
                format!(
                    "checksum {} does not match the state in the file ({sum}): it was changed or damaged",
                    file.checksum
                ),
            ));
        }
        for (field, theirs, ours) in [
            ("cluster", &file.cluster, cluster),
            ("tenant", &file.tenant, tenant),
        ] {
            if theirs != ours && !allow_rename {
                return Err(refuse(
                    409,
                    field,
                    format!(
                        "the file is the colony of {field} {theirs:?}, not {ours:?}; import it here with allowRename=true"
                    ),
                ));
            }
        }
        let state: ExportedState = serde_json::from_str(file.state.get())
            .map_err(|e| refuse(400, "state", e.to_string()))?;
        state.validate().map_err(|m| refuse(400, "state", m))?;
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heuristic::OutcomeStats;

    fn state() -> ExportedState {
        let mut s = ExportedState::default();
        s.colony.pheromones.trails.insert(
            "node-a".into(),
            OutcomeStats {
                successes: 3.0,
                failures: 1.0,
                as_of_ms: 10,
                slowdown_sum: 2.5,
                slowdown_runs: 2.0,
            },
        );
        s.colony.counters.deposits = 7;
        s
    }

    fn file(cluster: &str, tenant: &str) -> String {
        serde_json::to_string(&ColonyExport::new(cluster, tenant, 9, 100, &state()).unwrap())
            .unwrap()
    }

    #[test]
    fn an_export_reads_back_as_the_same_state() {
        let text = file("eu-1", "ml");
        assert_eq!(ColonyExport::read(&text, "eu-1", "ml", false), Ok(state()));
        let renamed = ColonyExport::read(&text, "us-2", "ml", true);
        assert_eq!(renamed, Ok(state()));
    }

    #[test]
    fn a_file_that_does_not_match_is_refused_by_name() {
        let text = file("eu-1", "ml");
        let field = |t: &str, cluster: &str, tenant: &str| {
            let r = ColonyExport::read(t, cluster, tenant, false).unwrap_err();
            (r.status, r.field)
        };
        assert_eq!(field(&text, "eu-1", "other"), (409, "tenant"));
        assert_eq!(field(&text, "us-2", "ml"), (409, "cluster"));
        let v2 = text.replace(r#""version":1"#, r#""version":2"#);
        assert_eq!(field(&v2, "eu-1", "ml"), (400, "version"));
        assert_eq!(field("{}", "eu-1", "ml"), (400, "format"));
        assert_eq!(field("[1]", "eu-1", "ml"), (400, "format"));
        // One digit of the trail changed: the checksum says so.
        let tampered = text.replace(r#""failures":1.0"#, r#""failures":9.0"#);
        assert_ne!(tampered, text);
        assert_eq!(field(&tampered, "eu-1", "ml"), (400, "checksum"));
        // Intact but holding what no colony holds.
        let mut bad = state();
        bad.colony
            .pheromones
            .trails
            .get_mut("node-a")
            .unwrap()
            .failures = -1.0;
        assert!(bad.validate().is_err());
        bad = state();
        bad.colony
            .pheromones
            .trails
            .get_mut("node-a")
            .unwrap()
            .slowdown_runs = f64::INFINITY;
        assert!(bad.validate().unwrap_err().contains("slowdownRuns"));
        bad = state();
        let trail = bad.colony.pheromones.trails.remove("node-a").unwrap();
        bad.colony
            .pheromones
            .trails
            .insert("Not A Node".into(), trail);
        let text =
            serde_json::to_string(&ColonyExport::new("eu-1", "ml", 1, 1, &bad).unwrap()).unwrap();
        assert_eq!(field(&text, "eu-1", "ml"), (400, "state"));
    }

    /// A file written when the colony kept a deposit table beside the outcome history: the
    /// history is the trail, the deposit table is dropped.
    #[test]
    fn a_file_with_the_old_deposit_table_imports_its_learned_counts() {
        let state = r#"{"colony":{"pheromones":{"epoch":4,"trails":{"node-a":{"tau":2.5,"epoch":3}}},"outcomes":{"node-a":{"successes":3.0,"failures":1.0,"asOfMs":10,"slowdownSum":2.5,"slowdownRuns":2.0}},"counters":{"deposits":7}}}"#;
        let file = format!(
            r#"{{"format":"{FORMAT}","version":1,"cluster":"eu-1","tenant":"ml","exportedMs":1,"colonyVersion":1,"checksum":"{}","state":{state}}}"#,
            checksum(state.as_bytes())
        );
        let read = ColonyExport::read(&file, "eu-1", "ml", false).unwrap();
        assert_eq!(read, self::state());
    }

    #[test]
    fn the_checksum_is_sha256_of_the_state_bytes() {
        // FIPS 180-2's "abc".
        assert_eq!(
            checksum(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
