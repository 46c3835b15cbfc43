//! The pins a framework's metadata puts on its companions, against what is installed.

use cudoctor_types::Requirement;

use crate::frameworks::FrameworkView;
use crate::Context;

/// Whether a pin is torch's (FW022 judges those).
pub fn is_torch_pin(name: &str) -> bool {
    matches!(name, "torch" | "torchvision" | "torchaudio")
}

/// The pins of `v` that bind this environment and that the installed companion does not
/// meet, with the parsed requirement.
pub fn unmet<'a>(
    ctx: &Context<'a>,
    v: FrameworkView<'a>,
) -> Vec<(&'a cudoctor_snapshot::CompanionPin, Requirement)> {
    let mut out: Vec<(&cudoctor_snapshot::CompanionPin, Requirement)> = Vec::new();
    for (c, r) in ctx.applicable_pins(v) {
        let Some(installed) = &c.installed else {
            continue;
        };
        if r.admits(installed) == Some(false)
            && !out.iter().any(|(o, q)| {
                o.required_by == c.required_by && q.name == r.name && q.specifiers == r.specifiers
            })
        {
            out.push((c, r));
        }
    }
    out
}
