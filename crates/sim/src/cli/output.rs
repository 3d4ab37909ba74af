//! Where a subcommand's files go: `<dir>/<name>.md` (the table printed), `<dir>/<name>.json`
//! (its rows) and any other `<dir>/<name><suffix>` file, the folder made on the first write.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::trace::Error;

/// The folder and file prefix of one subcommand's output (`--out`, `--name`).
#[derive(Debug, Clone)]
pub struct Output {
    pub dir: PathBuf,
    pub name: String,
}

impl Output {
    pub fn new(dir: &Path, name: &str) -> Self {
        Output {
            dir: dir.to_path_buf(),
            name: name.to_string(),
        }
    }

    /// `<dir>/<name><suffix>`, e.g. `path("-placements.csv")`.
    pub fn path(&self, suffix: &str) -> PathBuf {
        self.dir.join(format!("{}{suffix}", self.name))
    }

    /// Writes `<name><suffix>`, making the folder first.
    pub fn write(&self, suffix: &str, contents: impl AsRef<[u8]>) -> Result<(), Error> {
        std::fs::create_dir_all(&self.dir)?;
        std::fs::write(self.path(suffix), contents)?;
        Ok(())
    }

    /// Says on stderr which files were written (`suffixes` of `<dir>/<name>`).
    pub fn announce(&self, suffixes: &[&str]) {
        let files: Vec<String> = suffixes
            .iter()
            .map(|s| self.path(s).display().to_string())
            .collect();
        eprintln!("wrote {}", files.join(", "));
    }

    /// The table as `<name>.md` and the rows as pretty-printed `<name>.json`.
    pub fn tables<T: Serialize + ?Sized>(&self, markdown: &str, rows: &T) -> Result<(), Error> {
        self.write(".md", markdown)?;
        self.write(".json", serde_json::to_string_pretty(rows)?)
    }
}
