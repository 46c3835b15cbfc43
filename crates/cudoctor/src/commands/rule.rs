//! `cudoctor rule CODE` and `cudoctor rules`.

use anyhow::bail;
use cudoctor_render::{render_rule_doc, render_rules_json, render_rules_text};

use crate::cli::TextFormat;
use crate::Outcome;

pub fn show(code: &str) -> anyhow::Result<Outcome> {
    match render_rule_doc(code) {
        Some(doc) => crate::out!("{doc}"),
        None => bail!("no rule {code:?}; `cudoctor rules` lists them"),
    }
    Ok(Outcome::Healthy)
}

pub fn list(format: TextFormat) -> anyhow::Result<Outcome> {
    match format {
        TextFormat::Json => crate::out!("{}", render_rules_json()),
        TextFormat::Text => crate::out!("{}", render_rules_text()),
    }
    Ok(Outcome::Healthy)
}
