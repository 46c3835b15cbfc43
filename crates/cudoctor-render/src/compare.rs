//! The fleet report and the semantic diff, as text, Markdown, HTML and JSON. Failing nodes come
//! first, then what differs, then what is the same everywhere; in a diff, the facts that matter
//! first and raw field changes last (listed only when asked).

use std::fmt::Write;

use cudoctor_fleet::{DiffReport, FactChange, FleetReport, Topic};

use cudoctor_types::inert::line;

use crate::doc::{self, Block, Span, Tone};
use crate::layout::{width, wrap};
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
    let _ = writeln!(
        out,
        "{}",
        wrap("cudoctor fleet: ", "    ", &fleet_headline(r), width())
    );
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
            let title = format!("{} · {}", f.topic.title(), line(&f.name));
            let _ = writeln!(out, "{}", wrap("  ", "      ", &title, width()));
            let majority = format!(
                "{}  on {}{}",
                line(&f.majority),
                plural(f.majority_nodes, "node", "nodes"),
                if f.tie { " (a tie)" } else { "" }
            );
            let _ = writeln!(out, "{}", wrap("      ", "        ", &majority, width()));
            for g in &f.others {
                let other = format!(
                    "{}  on {}: {}",
                    line(&g.value),
                    g.nodes.len(),
                    line(&node_list(&g.nodes))
                );
                let _ = writeln!(out, "{}", wrap("      ", "        ", &other, width()));
            }
        }
    }
    let partial: Vec<_> = r.findings.iter().filter(|f| !f.on_every_node).collect();
    if !partial.is_empty() {
        let _ = writeln!(out, "\nFindings only some nodes have");
        for f in partial {
            let head = format!(
                "{:7} {}  on {} of {}: {}",
                f.severity.name(),
                f.code,
                f.count,
                r.reported,
                line(&node_list(&f.nodes)),
            );
            let _ = writeln!(
                out,
                "{}\n{}",
                wrap("  ", "        ", &head, width()),
                wrap("      ", "      ", &line(&f.title), width())
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
            let head = format!("  {:w$}  ", line(&f.name));
            let hang = " ".repeat(w + 4);
            let _ = writeln!(out, "{}", wrap(&head, &hang, &line(&f.majority), width()));
        }
        let rest = r.uniform().count() - same.len();
        if rest > 0 {
            let more = format!(
                "and {rest} more {} (packages, libraries, host; --format json lists all)",
                if rest == 1 { "fact" } else { "facts" }
            );
            let _ = writeln!(out, "{}", wrap("  ", "    ", &more, width()));
        }
    }
    let everywhere: Vec<_> = r.findings.iter().filter(|f| f.on_every_node).collect();
    if !everywhere.is_empty() {
        let codes: Vec<String> = everywhere
            .iter()
            .map(|f| format!("{} ({})", f.code, f.severity.name()))
            .collect();
        let _ = writeln!(
            out,
            "\n{}",
            wrap(
                "Findings on every node: ",
                "    ",
                &codes.join(", "),
                width()
            )
        );
    }
    out
}

/// The fleet report as a document, for Markdown and HTML alike.
fn fleet_doc(r: &FleetReport) -> Vec<Block> {
    let mut doc = vec![
        Block::Title(doc::text("cudoctor fleet report")),
        Block::Summary(fleet_headline(r)),
    ];
    if !r.failed.is_empty() {
        doc.push(Block::table(
            "Nodes that did not report",
            Tone::Error,
            vec!["node", "", "detail"],
            r.failed
                .iter()
                .map(|f| {
                    vec![
                        doc::text(&f.node),
                        doc::text(f.kind.name()),
                        doc::text(&f.detail),
                    ]
                })
                .collect(),
        ));
    }
    if !r.unhealthy.is_empty() {
        doc.push(Block::table(
            "Nodes with errors",
            Tone::Error,
            vec!["node", "errors", "codes"],
            r.unhealthy
                .iter()
                .map(|v| {
                    vec![
                        doc::text(&v.node),
                        doc::text(v.errors.to_string()),
                        doc::text(v.error_codes.join(", ")),
                    ]
                })
                .collect(),
        ));
    }
    let drifting: Vec<_> = r.drifting().collect();
    if !drifting.is_empty() {
        let rows = drifting
            .into_iter()
            .map(|f| {
                let mut others = Vec::new();
                for (i, g) in f.others.iter().enumerate() {
                    if i > 0 {
                        others.push(Span::Break);
                    }
                    others.push(Span::Code(g.value.clone()));
                    others.push(Span::Text(format!(
                        " on {}: {}",
                        g.nodes.len(),
                        node_list(&g.nodes)
                    )));
                }
                vec![
                    doc::text(&f.name),
                    vec![
                        Span::Code(f.majority.clone()),
                        Span::Text(format!(" ({})", f.majority_nodes)),
                    ],
                    others,
                ]
            })
            .collect();
        doc.push(Block::table(
            "Facts that differ",
            Tone::Warning,
            vec!["fact", "most nodes", "others"],
            rows,
        ));
    }
    let partial: Vec<_> = r.findings.iter().filter(|f| !f.on_every_node).collect();
    if !partial.is_empty() {
        doc.push(Block::table(
            "Findings only some nodes have",
            Tone::Warning,
            vec!["code", "severity", "nodes", "title"],
            partial
                .into_iter()
                .map(|f| {
                    vec![
                        doc::code(&f.code),
                        doc::text(f.severity.name()),
                        doc::text(format!(
                            "{} of {}: {}",
                            f.count,
                            r.reported,
                            node_list(&f.nodes)
                        )),
                        doc::text(&f.title),
                    ]
                })
                .collect(),
        ));
    }
    let same: Vec<_> = r
        .uniform()
        .filter(|f| headline_fact(f.topic, &f.name))
        .collect();
    if !same.is_empty() {
        doc.push(Block::table(
            "The same on every node",
            Tone::Plain,
            vec!["fact", "value"],
            same.into_iter()
                .map(|f| vec![doc::text(&f.name), doc::code(&f.majority)])
                .collect(),
        ));
    }
    doc
}

pub fn render_fleet_markdown(r: &FleetReport) -> String {
    doc::markdown(&fleet_doc(r))
}

pub fn render_fleet_html(r: &FleetReport) -> String {
    doc::html("cudoctor fleet report", &fleet_doc(r))
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
    if head.chars().count() + 1 + headline.chars().count() <= width() {
        let _ = writeln!(out, "{head} {headline}");
    } else {
        // Two long file names: the count of changes on a line of its own.
        // File names wider than the line each start a line of their own, whole.
        let _ = writeln!(
            out,
            "{}\n{}",
            wrap("", "    ", &head, width()),
            wrap("    ", "    ", &headline, width())
        );
    }
    let section = |out: &mut String, late: bool| {
        for (topic, changes) in groups(d, late) {
            let _ = writeln!(out, "{}", topic.title());
            for c in changes {
                let _ = writeln!(
                    out,
                    "{}",
                    wrap("  ", "      ", &line(&change_line(c)), width())
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

/// The diff as a document, for Markdown and HTML alike.
fn diff_doc(d: &DiffReport, verbose: bool) -> Vec<Block> {
    let mut doc = vec![
        Block::Title(vec![
            Span::Text("cudoctor diff ".into()),
            Span::Code(d.before.clone()),
            Span::Text(" → ".into()),
            Span::Code(d.after.clone()),
        ]),
        Block::Summary(diff_headline(d)),
    ];
    let or_dash = |v: &Option<String>| doc::text(v.as_deref().unwrap_or("—"));
    let section = |doc: &mut Vec<Block>, late: bool| {
        for (topic, changes) in groups(d, late) {
            doc.push(Block::table(
                topic.title(),
                Tone::Plain,
                vec!["fact", "before", "after"],
                changes
                    .into_iter()
                    .map(|c| vec![doc::text(&c.name), or_dash(&c.before), or_dash(&c.after)])
                    .collect(),
            ));
        }
    };
    section(&mut doc, false);
    for (title, list, mark) in [
        ("Findings that appeared", &d.findings_appeared, "+ "),
        ("Findings that went away", &d.findings_gone, "− "),
    ] {
        if !list.is_empty() {
            doc.push(Block::list(
                title,
                Tone::Plain,
                list.iter()
                    .map(|f| {
                        vec![
                            Span::Text(mark.into()),
                            Span::Bold(f.severity.name().into()),
                            Span::Text(" ".into()),
                            Span::Code(f.code.clone()),
                            Span::Text(format!(" {}", f.title)),
                        ]
                    })
                    .collect(),
            ));
        }
    }
    section(&mut doc, true);
    if verbose && !d.raw.is_empty() {
        doc.push(Block::table(
            "Raw field changes",
            Tone::Plain,
            vec!["field", "before", "after"],
            d.raw
                .iter()
                .map(|r| vec![doc::code(&r.path), or_dash(&r.before), or_dash(&r.after)])
                .collect(),
        ));
    }
    doc
}

pub fn render_diff_markdown(d: &DiffReport, verbose: bool) -> String {
    doc::markdown(&diff_doc(d, verbose))
}

pub fn render_diff_html(d: &DiffReport, verbose: bool) -> String {
    doc::html("cudoctor diff", &diff_doc(d, verbose))
}

pub fn render_diff_json(d: &DiffReport) -> String {
    serde_json::to_string_pretty(d).unwrap_or_default() + "\n"
}
