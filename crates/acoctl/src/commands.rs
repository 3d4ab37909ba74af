//! What each subcommand asks the Worker and prints.

use std::io::{Read, Write};
use std::path::Path;

use aco_core::api::colony_export::ImportReply;
use aco_core::api::pheromones::{PheromoneTableReply, ResetReply};
use aco_core::cluster::{validate_tenant, DEFAULT_CLUSTER};
use aco_core::colony::explain_text;
use aco_core::colony::DecisionExplanation;
use aco_core::names::PodKey;
use aco_core::registry::Page;
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::cli::{Args, Command, Output};
use crate::client::Client;
use crate::{table, Failure};

/// Runs the command; the text to print on standard output.
pub fn run(args: Args) -> Result<String, Failure> {
    let client = Client::new(&args)?;
    let out = args.output;
    match args.command {
        Command::Clusters => clusters(&client, out),
        Command::Tenants => tenants(&client, out),
        Command::Trails { tenant } => trails(&client, out, &tenant),
        Command::Explain { tenant, pod } => explain(&client, out, &tenant, &pod),
        Command::Export { tenant, file } => export(&client, out, &tenant, &file),
        Command::Import {
            tenant,
            file,
            allow_rename,
        } => import(&client, out, &tenant, &file, allow_rename),
        Command::Reset { tenant, yes } => reset(&client, out, &tenant, yes),
    }
}

fn parse<T: DeserializeOwned>(what: &str, text: &str) -> Result<T, Failure> {
    serde_json::from_str(text)
        .map_err(|e| Failure::remote(format!("{what}: unexpected reply: {e}")))
}

fn json<T: Serialize + ?Sized>(value: &T) -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(value).unwrap_or_default()
    )
}

fn tenant_arg(tenant: &str) -> Result<(), Failure> {
    validate_tenant(tenant).map_err(|e| Failure::usage(format!("tenant: {e}")))
}

/// Every name of a paged listing (`Page::next` is the `after` of the next page).
fn all_pages(
    mut page: impl FnMut(Option<&str>) -> Result<Page, Failure>,
) -> Result<Vec<String>, Failure> {
    let mut names = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let p = page(after.as_deref())?;
        names.extend(p.names);
        match p.next {
            Some(n) => after = Some(n),
            None => return Ok(names),
        }
    }
}

fn after_query(after: Option<&str>) -> String {
    after.map(|a| format!("?after={a}")).unwrap_or_default()
}

fn clusters(client: &Client, out: Output) -> Result<String, Failure> {
    let named = all_pages(|after| {
        let text =
            client.call_global(Method::GET, &format!("/v1/clusters{}", after_query(after)))?;
        parse("clusters", &text)
    })?;
    let clusters: Vec<String> = std::iter::once(DEFAULT_CLUSTER.to_string())
        .chain(named)
        .collect();
    Ok(match out {
        Output::Json => json(&serde_json::json!({ "clusters": clusters })),
        Output::Table => {
            let rows: Vec<Vec<String>> = clusters.into_iter().map(|c| vec![c]).collect();
            table::render(&["CLUSTER"], &[], &rows)
        }
    })
}

fn tenants(client: &Client, out: Output) -> Result<String, Failure> {
    let tenants = all_pages(|after| {
        let text = client.call(
            Method::GET,
            &format!("/v1/tenants{}", after_query(after)),
            None,
        )?;
        parse("tenants", &text)
    })?;
    Ok(match out {
        Output::Json => json(&serde_json::json!({ "cluster": client.cluster, "tenants": tenants })),
        Output::Table => {
            let rows: Vec<Vec<String>> = tenants.into_iter().map(|t| vec![t]).collect();
            table::render(&["TENANT"], &[], &rows)
        }
    })
}

fn trails(client: &Client, out: Output, tenant: &str) -> Result<String, Failure> {
    tenant_arg(tenant)?;
    let text = client.call(
        Method::GET,
        &format!("/v1/tenants/{tenant}/pheromones"),
        None,
    )?;
    let t: PheromoneTableReply = parse("pheromones", &text)?;
    if out == Output::Json {
        return Ok(json(&t));
    }
    let c = &t.counters;
    let mut text = format!(
        "tenant {} (cluster {}): {} trails, version {}; τ learned from outcomes, for a batch pod paying \
         COST_REFERENCE $/h on the node (1 = nothing learned against it)\n\
         decisions {}, confirmed placements {}, placed elsewhere than answered {}, failed outcomes {}; pending {}, held {}, \
         confirmed pods {}, explained pods {}{}\n\n",
        t.tenant,
        client.cluster,
        t.nodes.len(),
        t.version,
        c.decisions,
        c.deposits,
        c.placements_elsewhere,
        c.failed_outcomes,
        t.pending_decisions,
        t.held_placements,
        t.confirmed_pods,
        t.explained_pods,
        if t.uncommitted { " (uncommitted changes)" } else { "" },
    );
    let rows: Vec<Vec<String>> = t
        .nodes
        .iter()
        .map(|n| {
            vec![
                n.node.clone(),
                format!("{:.4}", n.tau),
                format!("{:.2}", n.successes),
                format!("{:.2}", n.failures),
                n.reliability.map_or("–".into(), |r| format!("{r:.4}")),
                n.slowdown.map_or("–".into(), |s| format!("{s:.3}")),
            ]
        })
        .collect();
    let numbers = ["TAU", "SUCCESSES", "FAILURES", "RELIABILITY", "SLOWDOWN"];
    text.push_str(&table::render(
        &[
            "NODE",
            "TAU",
            "SUCCESSES",
            "FAILURES",
            "RELIABILITY",
            "SLOWDOWN",
        ],
        &numbers,
        &rows,
    ));
    Ok(text)
}

fn explain(client: &Client, out: Output, tenant: &str, pod: &str) -> Result<String, Failure> {
    tenant_arg(tenant)?;
    // Where the key enters: the command line.
    let pod = PodKey::parse(pod).map_err(|e| Failure::usage(format!("pod: {e}")))?;
    let text = client.call(
        Method::GET,
        &format!("/v1/tenants/{tenant}/decisions/{pod}"),
        None,
    )?;
    let e: DecisionExplanation = parse("explanation", &text)?;
    Ok(match out {
        Output::Json => json(&e),
        Output::Table => explain_text::render(&e),
    })
}

fn export(client: &Client, out: Output, tenant: &str, file: &Path) -> Result<String, Failure> {
    tenant_arg(tenant)?;
    let text = client.call(Method::GET, &format!("/v1/tenants/{tenant}/export"), None)?;
    // Summarised from the reply; the file is the reply's bytes, untouched (its checksum is of them).
    let v: serde_json::Value = parse("export", &text)?;
    let trails = v["state"]["colony"]["pheromones"]["trails"]
        .as_object()
        .map_or(0, |t| t.len());
    let summary = serde_json::json!({
        "cluster": v["cluster"], "tenant": v["tenant"], "colonyVersion": v["colonyVersion"],
        "exportedMs": v["exportedMs"], "checksum": v["checksum"], "trails": trails,
        "file": file.display().to_string(), "bytes": text.len(),
    });
    if file == Path::new("-") {
        return Ok(text + "\n");
    }
    write_atomically(file, text.as_bytes())?;
    Ok(match out {
        Output::Json => json(&summary),
        Output::Table => format!(
            "exported tenant {tenant} of cluster {} ({trails} trails, colony version {}, {} bytes, {}) to {}\n",
            client.cluster,
            v["colonyVersion"],
            text.len(),
            v["checksum"].as_str().unwrap_or_default(),
            file.display()
        ),
    })
}

/// Written beside the target, then renamed over it: a failed write leaves no half file.
fn write_atomically(file: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "export".into());
    let tmp = file.with_file_name(format!(".{name}.acoctl-tmp"));
    let failed = |e: std::io::Error| Failure::remote(format!("writing {}: {e}", file.display()));
    let mut f = std::fs::File::create(&tmp).map_err(failed)?;
    f.write_all(bytes).map_err(failed)?;
    f.sync_all().map_err(failed)?;
    std::fs::rename(&tmp, file).map_err(failed)
}

fn import(
    client: &Client,
    out: Output,
    tenant: &str,
    file: &Path,
    allow_rename: bool,
) -> Result<String, Failure> {
    tenant_arg(tenant)?;
    let mut bytes = Vec::new();
    let read = if file == Path::new("-") {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_end(&mut bytes).map(|_| ()))
    };
    read.map_err(|e| Failure::usage(format!("--file {}: {e}", file.display())))?;
    let query = if allow_rename {
        "?allowRename=true"
    } else {
        ""
    };
    let text = client.call(
        Method::PUT,
        &format!("/v1/tenants/{tenant}/import{query}"),
        Some(bytes),
    )?;
    let r: ImportReply = parse("import", &text)?;
    Ok(match out {
        Output::Json => json(&r),
        Output::Table if r.changed => format!(
            "imported {} trails into tenant {tenant} of cluster {}: colony version {}\n",
            r.trails, client.cluster, r.version
        ),
        Output::Table => format!(
            "tenant {tenant} of cluster {} already holds this state: nothing changed (version {})\n",
            client.cluster, r.version
        ),
    })
}

fn reset(client: &Client, out: Output, tenant: &str, yes: bool) -> Result<String, Failure> {
    tenant_arg(tenant)?;
    if !yes {
        return Err(Failure::usage(format!(
            "a reset forgets tenant {tenant}'s colony for good (export it first); pass --yes"
        )));
    }
    let text = client.call(
        Method::DELETE,
        &format!("/v1/tenants/{tenant}/pheromones"),
        None,
    )?;
    let r: ResetReply = parse("reset", &text)?;
    Ok(match out {
        Output::Json => json(&r),
        Output::Table => format!(
            "tenant {tenant} of cluster {} reset: colony version {}\n",
            client.cluster, r.version
        ),
    })
}
