//! The fleet report and the semantic diff, as text, Markdown, HTML and JSON. Failing nodes come
//! first, then what differs, then what is the same everywhere; in a diff, the facts that matter
//! first and raw field changes last (listed only when asked).

use std::fmt::Write;

use cudoctor_fleet::{DiffReport, FactChange, FleetReport, Topic};

use cudoctor_types::inert::line;

use crate::html::esc;
use crate::layout::{wrap, WIDTH};
use crate::plural;

/// Node names shown before "and N more".
const NODES_SHOWN: usize = 8;
/// Nodes listed one per line (failed, with errors) before "and N more" in text.
const LINES_SHOWN: usize = 20;

fn node_list(nodes: &[String]) -> String {
    let mut s = nodes
        .iter()
        .take(NODES_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if nodes.len() > NODES_SHOWN {
        let _ = write!(s, " and {} more", nodes.len() - NODES_SHOWN);
    }
    s
}

fn fleet_headline(r: &FleetReport) -> String {
    let drift = r.drifting().count();
    let partial = r.findings.iter().filter(|f| !f.on_every_node).count();
    format!(
        "{} reported, {} failed; {} with errors; {} across nodes; {} only some nodes have.",
        plural(r.reported, "node", "nodes"),
        r.failed.len(),
        r.unhealthy.len(),
        plural(drift, "fact differs", "facts differ"),
        plural(partial, "finding", "findings"),
    )
}

/// The facts a reader wants to see even when they agree everywhere.
fn headline_fact(topic: Topic, name: &str) -> bool {
    matches!(
        topic,
        Topic::Driver | Topic::Gpus | Topic::Toolkit | Topic::Framework | Topic::Nccl
    ) || name.starts_with("torchvision in ")
        || name.starts_with("torchaudio in ")
        || name.starts_with("triton in ")
}

pub fn render_fleet_text(r: &FleetReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "cudoctor fleet: {}", fleet_headline(r));
    if !r.failed.is_empty() {
        let _ = writeln!(out, "\nNodes that did not report ({})", r.failed.len());
        let w = r.failed.iter().map(|f| f.node.len()).max().unwrap_or(0);
        for f in r.failed.iter().take(LINES_SHOWN) {
            let _ = writeln!(
                out,
                "  {:w$}  {:9}  {}",
                line(&f.node),
                f.kind.name(),
                line(&f.detail)
            );
        }
        if r.failed.len() > LINES_SHOWN {
            let _ = writeln!(
                out,
                "  and {} more (--format json lists every node)",
                r.failed.len() - LINES_SHOWN
            );
        }
    }
    if !r.unhealthy.is_empty() {
        let _ = writeln!(out, "\nNodes with errors ({})", r.unhealthy.len());
        let w = r.unhealthy.iter().map(|f| f.node.len()).max().unwrap_or(0);
        for v in r.unhealthy.iter().take(LINES_SHOWN) {
            let _ = writeln!(
                out,
                "  {:w$}  {} ({})",
                line(&v.node),
                plural(v.errors, "error", "errors"),
                line(&v.error_codes.join(", "))
            );
        }
        if r.unhealthy.len() > LINES_SHOWN {
            let _ = writeln!(
                out,
                "  and {} more (--format json lists every node)",
                r.unhealthy.len() - LINES_SHOWN
            );
        }
    }
    let drifting: Vec<_> = r.drifting().collect();
    if !drifting.is_empty() {
        let _ = writeln!(out, "\nFacts that differ (most nodes' value first)");
        for f in drifting {
            let _ = writeln!(out, "  {} · {}", f.topic.title(), line(&f.name));
            let _ = writeln!(
                out,
                "      {}  on {}{}",
                line(&f.majority),
                plural(f.majority_nodes, "node", "nodes"),
                if f.tie { " (a tie)" } else { "" }
            );
            for g in &f.others {
                let _ = writeln!(
                    out,
                    "      {}  on {}: {}",
                    line(&g.value),
                    g.nodes.len(),
                    line(&node_list(&g.nodes))
                );
            }
        }
    }
    let partial: Vec<_> = r.findings.iter().filter(|f| !f.on_every_node).collect();
    if !partial.is_empty() {
        let _ = writeln!(out, "\nFindings only some nodes have");
        for f in partial {
            let _ = writeln!(
                out,
                "  {:7} {}  on {} of {}: {}\n      {}",
                f.severity.name(),
                f.code,
                f.count,
                r.reported,
                line(&node_list(&f.nodes)),
                line(&f.title)
            );
        }
    }
    let same: Vec<_> = r
        .uniform()
        .filter(|f| headline_fact(f.topic, &f.name))
        .collect();
    if !same.is_empty() && r.reported > 0 {
        let _ = writeln!(out, "\nThe same on every node");
        let w = same.iter().map(|f| f.name.len()).max().unwrap_or(0).min(48);
        for f in &same {
            let _ = writeln!(out, "  {:w$}  {}", line(&f.name), line(&f.majority));
        }
        let rest = r.uniform().count() - same.len();
        if rest > 0 {
            let _ = writeln!(
                out,
                "  and {rest} more {} (packages, libraries, host; --format json lists all)",
                if rest == 1 { "fact" } else { "facts" }
            );
        }
    }
    let everywhere: Vec<_> = r.findings.iter().filter(|f| f.on_every_node).collect();
    if !everywhere.is_empty() {
        let codes: Vec<String> = everywhere
            .iter()
            .map(|f| format!("{} ({})", f.code, f.severity.name()))
            .collect();
        let _ = writeln!(out, "\nFindings on every node: {}", codes.join(", "));
    }
    out
}

pub fn render_fleet_markdown(r: &FleetReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## cudoctor fleet report\n\n**{}**\n",
        fleet_headline(r)
    );
    if !r.failed.is_empty() {
        let _ = writeln!(
            out,
            "### Nodes that did not report\n\n| node | | detail |\n|---|---|---|"
        );
        for f in &r.failed {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                cell(&f.node),
                f.kind.name(),
                cell(&f.detail)
            );
        }
        out.push('\n');
    }
    if !r.unhealthy.is_empty() {
        let _ = writeln!(
            out,
            "### Nodes with errors\n\n| node | errors | codes |\n|---|---|---|"
        );
        for v in &r.unhealthy {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                cell(&v.node),
                v.errors,
                v.error_codes.join(", ")
            );
        }
        out.push('\n');
    }
    let drifting: Vec<_> = r.drifting().collect();
    if !drifting.is_empty() {
        let _ = writeln!(
            out,
            "### Facts that differ\n\n| fact | most nodes | others |\n|---|---|---|"
        );
        for f in drifting {
            let others: Vec<String> = f
                .others
                .iter()
                .map(|g| {
                    format!(
                        "{} on {}: {}",
                        code(&g.value),
                        g.nodes.len(),
                        cell(&node_list(&g.nodes))
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} ({}) | {} |",
                cell(&f.name),
                code(&f.majority),
                f.majority_nodes,
                others.join("<br>")
            );
        }
        out.push('\n');
    }
    let partial: Vec<_> = r.findings.iter().filter(|f| !f.on_every_node).collect();
    if !partial.is_empty() {
        let _ = writeln!(out, "### Findings only some nodes have\n\n| code | severity | nodes | title |\n|---|---|---|---|");
        for f in partial {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} of {}: {} | {} |",
                f.code,
                f.severity.name(),
                f.count,
                r.reported,
                cell(&node_list(&f.nodes)),
                cell(&f.title)
            );
        }
        out.push('\n');
    }
    let same: Vec<_> = r
        .uniform()
        .filter(|f| headline_fact(f.topic, &f.name))
        .collect();
    if !same.is_empty() {
        let _ = writeln!(
            out,
            "### The same on every node\n\n| fact | value |\n|---|---|"
        );
        for f in same {
            let _ = writeln!(out, "| {} | {} |", cell(&f.name), code(&f.majority));
        }
    }
    out
}

pub fn render_fleet_html(r: &FleetReport) -> String {
    let mut out = page_start("cudoctor fleet report");
    let _ = writeln!(
        out,
        "<h1>cudoctor fleet report</h1>\n<p class=\"summary\">{}</p>",
        esc(&fleet_headline(r))
    );
    if !r.failed.is_empty() {
        let _ = writeln!(out, "<h2 class=\"error\">Nodes that did not report</h2>\n<table><tr><th>node</th><th></th><th>detail</th></tr>");
        for f in &r.failed {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&f.node),
                f.kind.name(),
                esc(&f.detail)
            );
        }
        out.push_str("</table>\n");
    }
    if !r.unhealthy.is_empty() {
        let _ = writeln!(out, "<h2 class=\"error\">Nodes with errors</h2>\n<table><tr><th>node</th><th>errors</th><th>codes</th></tr>");
        for v in &r.unhealthy {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&v.node),
                v.errors,
                esc(&v.error_codes.join(", "))
            );
        }
        out.push_str("</table>\n");
    }
    let drifting: Vec<_> = r.drifting().collect();
    if !drifting.is_empty() {
        let _ = writeln!(out, "<h2 class=\"warning\">Facts that differ</h2>\n<table><tr><th>fact</th><th>most nodes</th><th>others</th></tr>");
        for f in drifting {
            let others: Vec<String> = f
                .others
                .iter()
                .map(|g| {
                    format!(
                        "<code>{}</code> on {}: {}",
                        esc(&g.value),
                        g.nodes.len(),
                        esc(&node_list(&g.nodes))
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td><code>{}</code> ({})</td><td>{}</td></tr>",
                esc(&f.name),
                esc(&f.majority),
                f.majority_nodes,
                others.join("<br>")
            );
        }
        out.push_str("</table>\n");
    }
    let partial: Vec<_> = r.findings.iter().filter(|f| !f.on_every_node).collect();
    if !partial.is_empty() {
        let _ = writeln!(out, "<h2 class=\"warning\">Findings only some nodes have</h2>\n<table><tr><th>code</th><th>severity</th><th>nodes</th><th>title</th></tr>");
        for f in partial {
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{} of {}: {}</td><td>{}</td></tr>",
                esc(&f.code),
                f.severity.name(),
                f.count,
                r.reported,
                esc(&node_list(&f.nodes)),
                esc(&f.title)
            );
        }
        out.push_str("</table>\n");
    }
    let _ = writeln!(
        out,
        "<h2>The same on every node</h2>\n<table><tr><th>fact</th><th>value</th></tr>"
    );
    for f in r.uniform() {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td></tr>",
            esc(&f.name),
            esc(&f.majority)
        );
    }
    out.push_str("</table>\n</body>\n</html>\n");
    out
}

pub fn render_fleet_json(r: &FleetReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}

// ------------------------------------------------------------------------------------- diff

fn diff_headline(d: &DiffReport) -> String {
    format!(
        "{} that {}, {} appeared, {} gone, {}.",
        plural(d.changes.len(), "change", "changes"),
        if d.changes.len() == 1 {
            "matters"
        } else {
            "matter"
        },
        plural(d.findings_appeared.len(), "finding", "findings"),
        d.findings_gone.len(),
        plural(d.raw.len(), "raw field change", "raw field changes"),
    )
}

fn change_line(c: &FactChange) -> String {
    let rel = c
        .relative
        .filter(|r| r.is_finite())
        .map(|r| format!(" ({:+.0}%)", r * 100.0))
        .unwrap_or_default();
    match (&c.before, &c.after) {
        (Some(a), Some(b)) => format!("~ {}: {a} -> {b}{rel}", c.name),
        (None, Some(b)) => format!("+ {}: {b}", c.name),
        (Some(a), None) => format!("- {}: {a}", c.name),
        (None, None) => format!("~ {}", c.name),
    }
}

/// Changes grouped by topic: facts before `--deep` measurements and the host, which come after
/// the findings.
fn groups(d: &DiffReport, late: bool) -> Vec<(Topic, Vec<&FactChange>)> {
    let mut out: Vec<(Topic, Vec<&FactChange>)> = Vec::new();
    for c in &d.changes {
        if matches!(c.topic, Topic::Deep | Topic::Host) != late {
            continue;
        }
        match out.last_mut() {
            Some((t, v)) if *t == c.topic => v.push(c),
            _ => out.push((c.topic, vec![c])),
        }
    }
    out
}

pub fn render_diff_text(d: &DiffReport, verbose: bool) -> String {
    let mut out = String::new();
    let head = format!("cudoctor diff {} -> {}:", line(&d.before), line(&d.after));
    let headline = diff_headline(d);
    if head.chars().count() + 1 + headline.chars().count() <= WIDTH {
        let _ = writeln!(out, "{head} {headline}");
    } else {
        // Two long file names: the count of changes on a line of its own.
        let _ = writeln!(out, "{head}\n{}", wrap("    ", "    ", &headline, WIDTH));
    }
    let section = |out: &mut String, late: bool| {
        for (topic, changes) in groups(d, late) {
            let _ = writeln!(out, "{}", topic.title());
            for c in changes {
                let _ = writeln!(
                    out,
                    "{}",
                    wrap("  ", "      ", &line(&change_line(c)), WIDTH)
                );
            }
        }
    };
    section(&mut out, false);
    if !d.findings_appeared.is_empty() {
        let _ = writeln!(out, "Findings that appeared");
        for f in &d.findings_appeared {
            let _ = writeln!(
                out,
                "  + {:7} {} {}",
                f.severity.name(),
                f.code,
                line(&f.title)
            );
        }
    }
    if !d.findings_gone.is_empty() {
        let _ = writeln!(out, "Findings that went away");
        for f in &d.findings_gone {
            let _ = writeln!(
                out,
                "  - {:7} {} {}",
                f.severity.name(),
                f.code,
                line(&f.title)
            );
        }
    }
    section(&mut out, true);
    if verbose && !d.raw.is_empty() {
        let _ = writeln!(out, "Raw field changes");
        for r in &d.raw {
            let _ = match (&r.before, &r.after) {
                (Some(a), Some(b)) => {
                    writeln!(out, "  ~ {}: {} -> {}", line(&r.path), line(a), line(b))
                }
                (None, Some(b)) => writeln!(out, "  + {}: {}", line(&r.path), line(b)),
                (Some(a), None) => writeln!(out, "  - {}: {}", line(&r.path), line(a)),
                (None, None) => Ok(()),
            };
        }
    } else if !d.raw.is_empty() {
        let _ = writeln!(
            out,
            "({} not shown: --verbose lists them.)",
            plural(d.raw.len(), "raw field change", "raw field changes")
        );
    }
    if !d.changed() && d.raw.is_empty() {
        let _ = writeln!(out, "Nothing changed.");
    }
    out
}

pub fn render_diff_markdown(d: &DiffReport, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## cudoctor diff {} → {}\n\n**{}**\n",
        code(&d.before),
        code(&d.after),
        diff_headline(d)
    );
    let section = |out: &mut String, late: bool| {
        for (topic, changes) in groups(d, late) {
            let _ = writeln!(
                out,
                "### {}\n\n| fact | before | after |\n|---|---|---|",
                topic.title()
            );
            for c in changes {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} |",
                    cell(&c.name),
                    cell(c.before.as_deref().unwrap_or("—")),
                    cell(c.after.as_deref().unwrap_or("—"))
                );
            }
            out.push('\n');
        }
    };
    section(&mut out, false);
    for (title, list, mark) in [
        ("Findings that appeared", &d.findings_appeared, "+"),
        ("Findings that went away", &d.findings_gone, "−"),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "### {title}\n");
            for f in list {
                let _ = writeln!(
                    out,
                    "- {mark} **{}** {} {}",
                    f.severity.name(),
                    code(&f.code),
                    cell(&f.title)
                );
            }
            out.push('\n');
        }
    }
    section(&mut out, true);
    if verbose && !d.raw.is_empty() {
        let _ = writeln!(
            out,
            "### Raw field changes\n\n| field | before | after |\n|---|---|---|"
        );
        for r in &d.raw {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                code(&r.path),
                cell(r.before.as_deref().unwrap_or("—")),
                cell(r.after.as_deref().unwrap_or("—"))
            );
        }
    }
    out
}

pub fn render_diff_html(d: &DiffReport, verbose: bool) -> String {
    let mut out = page_start("cudoctor diff");
    let _ = writeln!(
        out,
        "<h1>cudoctor diff <code>{}</code> → <code>{}</code></h1>\n<p class=\"summary\">{}</p>",
        esc(&d.before),
        esc(&d.after),
        esc(&diff_headline(d))
    );
    let table = |out: &mut String, title: &str, rows: Vec<(String, String, String)>| {
        let _ = writeln!(
            out,
            "<h2>{}</h2>\n<table><tr><th></th><th>before</th><th>after</th></tr>",
            esc(title)
        );
        for (a, b, c) in rows {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&a),
                esc(&b),
                esc(&c)
            );
        }
        out.push_str("</table>\n");
    };
    let rows = |changes: Vec<&FactChange>| {
        changes
            .into_iter()
            .map(|c| {
                (
                    c.name.clone(),
                    c.before.clone().unwrap_or_else(|| "—".into()),
                    c.after.clone().unwrap_or_else(|| "—".into()),
                )
            })
            .collect::<Vec<_>>()
    };
    for (topic, changes) in groups(d, false) {
        table(&mut out, topic.title(), rows(changes));
    }
    for (title, list) in [
        ("Findings that appeared", &d.findings_appeared),
        ("Findings that went away", &d.findings_gone),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "<h2>{title}</h2>\n<ul>");
            for f in list {
                let _ = writeln!(
                    out,
                    "<li><b>{}</b> <code>{}</code> {}</li>",
                    f.severity.name(),
                    esc(&f.code),
                    esc(&f.title)
                );
            }
            out.push_str("</ul>\n");
        }
    }
    for (topic, changes) in groups(d, true) {
        table(&mut out, topic.title(), rows(changes));
    }
    if verbose && !d.raw.is_empty() {
        let raw = d
            .raw
            .iter()
            .map(|r| {
                (
                    r.path.clone(),
                    r.before.clone().unwrap_or_default(),
                    r.after.clone().unwrap_or_default(),
                )
            })
            .collect();
        table(&mut out, "Raw field changes", raw);
    }
    out.push_str("</body>\n</html>\n");
    out
}

pub fn render_diff_json(d: &DiffReport) -> String {
    serde_json::to_string_pretty(d).unwrap_or_default() + "\n"
}

fn cell(s: &str) -> String {
    cudoctor_types::inert::markdown(s)
}

/// A value shown as code in Markdown, on one line, whatever backticks or pipes it holds.
fn code(s: &str) -> String {
    cudoctor_types::inert::markdown_code(s)
}

fn page_start(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\
         body{{font-family:system-ui,sans-serif;margin:2em;max-width:80em}}\
         table{{border-collapse:collapse;margin-bottom:1em}}td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}}\
         .error{{color:#b00020}}.warning{{color:#9a6700}}code{{font-size:.9em}}\
         </style>\n</head>\n<body>\n",
        esc(title)
    )
}
