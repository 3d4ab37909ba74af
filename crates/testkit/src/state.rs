//! The Worker's state on disk (Miniflare's persist directory, or workerd's state directory): the
//! SQLite file of each Durable Object, for tests that read or corrupt what an object stored.

use std::path::{Path, PathBuf};

/// The SQLite files of every Colony Durable Object in a Worker's state directory.
pub fn colony_sqlite_files(persist_dir: &Path) -> Vec<PathBuf> {
    object_sqlite_files(persist_dir, "Colony")
}

/// The SQLite files of every Durable Object of the classes whose name ends with `class_suffix`.
pub fn object_sqlite_files(persist_dir: &Path, class_suffix: &str) -> Vec<PathBuf> {
    class_sqlite_files(&persist_dir.join("do"), class_suffix)
}

/// [`object_sqlite_files`] in a directory of class directories (`<unique key>/<id>.sqlite`):
/// Miniflare's `do/`, or workerd's `localDisk` directory ([`crate::workerd`]).
pub fn class_sqlite_files(dir: &Path, class_suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(classes) = std::fs::read_dir(dir) else {
        return out;
    };
    for class in classes.flatten() {
        if !class.file_name().to_string_lossy().ends_with(class_suffix) {
            continue;
        }
        for f in std::fs::read_dir(class.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "sqlite")
                && f.file_name() != "metadata.sqlite"
            {
                out.push(f.path());
            }
        }
    }
    out
}

/// Runs one SQL statement on `file` with the `sqlite3` CLI, asserting it succeeds.
pub fn sqlite(file: &Path, statement: &str) {
    let out = std::process::Command::new("sqlite3")
        .arg(file)
        .arg(statement)
        .output()
        .expect("sqlite3 (scripts/setup installs it)");
    assert!(
        out.status.success(),
        "sqlite3 {statement}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
