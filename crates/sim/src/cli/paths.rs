//! Where relative paths on the command line point: the checkout the command runs in (the
//! nearest folder above the working directory that holds the repository's shipped data), else
//! the checkout the binary was built from. Shipped data (`data/prices`, `data/openb-sample`),
//! the default data folders (`data/openb`, `data/usage`) and the default output folder
//! (`target/aco-sim/<subcommand>`) are all under it, so `aco-sim` behaves the same from the
//! repository root, from `crates/sim` and from a copy of the repository elsewhere.

use std::path::{Path, PathBuf};

/// A file every checkout ships and no other folder is likely to hold.
const MARKER: &str = "data/openb-sample/nodes.csv";

/// The checkout the command runs in, else the one the binary was built from.
pub fn checkout() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    checkout_from(&cwd).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The nearest folder at or above `dir` that holds [`MARKER`].
pub fn checkout_from(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(MARKER).is_file())
        .map(Path::to_path_buf)
}

/// A path given on the command line: as given if it exists (or is absolute), else relative to
/// the [`checkout`] when it exists there, else as given (for the error message).
pub fn repo_path(p: &Path) -> PathBuf {
    repo_path_in(p, &checkout())
}

/// [`repo_path`] against `checkout`.
pub fn repo_path_in(p: &Path, checkout: &Path) -> PathBuf {
    if p.exists() || p.is_absolute() {
        return p.to_path_buf();
    }
    let alt = checkout.join(p);
    if alt.exists() {
        alt
    } else {
        p.to_path_buf()
    }
}

/// `--out` as given, else `target/aco-sim/<subcommand>` under the [`checkout`]: a plain run
/// never overwrites the committed results in `docs/sim` (regenerated with `--out docs/sim`).
pub fn out_dir(given: Option<&Path>, subcommand: &str) -> PathBuf {
    given.map_or_else(
        || checkout().join("target/aco-sim").join(subcommand),
        Path::to_path_buf,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkout_is_the_nearest_folder_with_the_shipped_sample() {
        let root = std::env::temp_dir().join(format!("aco-sim-paths-{}", std::process::id()));
        let deep = root.join("copy/crates/sim/src");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(checkout_from(&deep), None);
        std::fs::create_dir_all(root.join("copy/data/openb-sample")).unwrap();
        std::fs::write(root.join("copy").join(MARKER), "sn\n").unwrap();
        assert_eq!(checkout_from(&deep), Some(root.join("copy")));
        assert_eq!(checkout_from(&root.join("copy")), Some(root.join("copy")));
        assert_eq!(checkout_from(&root), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn outputs_default_under_target_and_keep_a_given_folder() {
        assert_eq!(
            out_dir(None, "saturate"),
            checkout().join("target/aco-sim/saturate")
        );
        assert_eq!(
            out_dir(Some(Path::new("docs/sim")), "saturate"),
            PathBuf::from("docs/sim")
        );
    }
}
