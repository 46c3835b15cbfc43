//! `cudoctor rule CODE` and `cudoctor rules`.

use anyhow::bail;
use cudoctor_render::{
    render_rule_doc, render_rule_json, render_rules_json, render_rules_markdown, render_rules_text,
};

use crate::cli::IssueFormat;
use crate::Outcome;

pub fn show(code: &str, format: IssueFormat) -> anyhow::Result<Outcome> {
    let doc = match format {
        IssueFormat::Json => {
            render_rule_json(code).map(|j| crate::build_info::with_build_header(&j))
        }
        IssueFormat::Text | IssueFormat::Markdown => render_rule_doc(code),
    };
    match doc {
        Some(doc) => crate::out!("{doc}"),
        None => bail!("no rule {code:?}; `cudoctor rules` lists them"),
    }
    Ok(Outcome::Healthy)
}

pub fn list(format: IssueFormat) -> anyhow::Result<Outcome> {
    match format {
        IssueFormat::Json => crate::out!(
            "{}",
            crate::build_info::with_build_header(&render_rules_json())
        ),
        IssueFormat::Text => crate::out!("{}", render_rules_text()),
        IssueFormat::Markdown => crate::out!("{}", render_rules_markdown()),
    }
    Ok(Outcome::Healthy)
}
