//! A small document of headings, tables and lists, written once by a report and rendered as
//! Markdown or as HTML: the fleet report and the diff say the same in both formats.

use std::fmt::Write;

use crate::html::esc;

/// A piece of inline text.
pub(crate) enum Span {
    Text(String),
    Code(String),
    Bold(String),
    /// A line break inside a table cell.
    Break,
}

/// Inline text: spans in order.
pub(crate) type Inline = Vec<Span>;

pub(crate) fn text(s: impl Into<String>) -> Inline {
    vec![Span::Text(s.into())]
}

pub(crate) fn code(s: impl Into<String>) -> Inline {
    vec![Span::Code(s.into())]
}

/// How a section's heading is coloured in HTML.
#[derive(Clone, Copy)]
pub(crate) enum Tone {
    Plain,
    Warning,
    Error,
}

pub(crate) enum Block {
    Title(Inline),
    Summary(String),
    /// A headed section and what it holds.
    Section {
        title: String,
        tone: Tone,
        body: Body,
    },
}

pub(crate) enum Body {
    Table {
        headers: Vec<&'static str>,
        rows: Vec<Vec<Inline>>,
    },
    List(Vec<Inline>),
}

impl Block {
    pub(crate) fn table(
        title: impl Into<String>,
        tone: Tone,
        headers: Vec<&'static str>,
        rows: Vec<Vec<Inline>>,
    ) -> Block {
        Block::Section {
            title: title.into(),
            tone,
            body: Body::Table { headers, rows },
        }
    }

    pub(crate) fn list(title: impl Into<String>, tone: Tone, items: Vec<Inline>) -> Block {
        Block::Section {
            title: title.into(),
            tone,
            body: Body::List(items),
        }
    }
}

fn markdown_inline(spans: &Inline) -> String {
    spans
        .iter()
        .map(|s| match s {
            Span::Text(t) => cudoctor_types::inert::markdown(t),
            Span::Code(t) => cudoctor_types::inert::markdown_code(t),
            Span::Bold(t) => format!("**{}**", cudoctor_types::inert::markdown(t)),
            Span::Break => "<br>".to_string(),
        })
        .collect()
}

fn html_inline(spans: &Inline) -> String {
    spans
        .iter()
        .map(|s| match s {
            Span::Text(t) => esc(t),
            Span::Code(t) => format!("<code>{}</code>", esc(t)),
            Span::Bold(t) => format!("<b>{}</b>", esc(t)),
            Span::Break => "<br>".to_string(),
        })
        .collect()
}

pub(crate) fn markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Title(t) => {
                let _ = writeln!(out, "## {}\n", markdown_inline(t));
            }
            Block::Summary(s) => {
                let _ = writeln!(out, "**{s}**\n");
            }
            Block::Section { title, body, .. } => {
                let _ = writeln!(out, "### {}\n", cudoctor_types::inert::markdown(title));
                markdown_body(&mut out, body);
            }
        }
    }
    out
}

fn markdown_body(out: &mut String, body: &Body) {
    match body {
        Body::Table { headers, rows } => {
            let _ = writeln!(out, "| {} |", headers.join(" | "));
            let _ = writeln!(out, "|{}", "---|".repeat(headers.len()));
            for row in rows {
                let cells: Vec<String> = row.iter().map(markdown_inline).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
            out.push('\n');
        }
        Body::List(items) => {
            for i in items {
                let _ = writeln!(out, "- {}", markdown_inline(i));
            }
            out.push('\n');
        }
    }
}

pub(crate) fn html(title: &str, blocks: &[Block]) -> String {
    let mut out = page_start(title);
    for b in blocks {
        match b {
            Block::Title(t) => {
                let _ = writeln!(out, "<h1>{}</h1>", html_inline(t));
            }
            Block::Summary(s) => {
                let _ = writeln!(out, "<p class=\"summary\">{}</p>", esc(s));
            }
            Block::Section { title, tone, body } => {
                let class = match tone {
                    Tone::Plain => "",
                    Tone::Warning => " class=\"warning\"",
                    Tone::Error => " class=\"error\"",
                };
                let _ = writeln!(out, "<h2{class}>{}</h2>", esc(title));
                html_body(&mut out, body);
            }
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn html_body(out: &mut String, body: &Body) {
    match body {
        Body::Table { headers, rows } => {
            let head: String = headers
                .iter()
                .map(|h| format!("<th>{}</th>", esc(h)))
                .collect();
            let _ = writeln!(out, "<table><tr>{head}</tr>");
            for row in rows {
                let cells: String = row
                    .iter()
                    .map(|c| format!("<td>{}</td>", html_inline(c)))
                    .collect();
                let _ = writeln!(out, "<tr>{cells}</tr>");
            }
            out.push_str("</table>\n");
        }
        Body::List(items) => {
            out.push_str("<ul>\n");
            for i in items {
                let _ = writeln!(out, "<li>{}</li>", html_inline(i));
            }
            out.push_str("</ul>\n");
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_document_two_formats_each_escaped() {
        let blocks = vec![
            Block::Title(text("report")),
            Block::table(
                "a | b",
                Tone::Error,
                vec!["fact", "value"],
                vec![vec![text("x<y"), code("a`b")]],
            ),
            Block::list(
                "c",
                Tone::Plain,
                vec![vec![Span::Bold("error".into()), Span::Break]],
            ),
        ];
        let md = markdown(&blocks);
        assert!(
            md.starts_with("## report\n\n### a \\| b\n\n| fact | value |\n|---|---|\n"),
            "{md}"
        );
        let h = html("t", &blocks);
        assert!(h.contains("<h2 class=\"error\">a | b</h2>"), "{h}");
        assert!(
            h.contains("<tr><td>x&lt;y</td><td><code>a`b</code></td></tr>"),
            "{h}"
        );
        assert!(h.contains("<li><b>error</b><br></li>"), "{h}");
        assert!(h.ends_with("</body>\n</html>\n"));
    }
}
