//! Text torch printed (a reason, an exception) explained by the explain engine.

use crate::{Finding, FixStep};

/// Runs a text torch printed (a reason, an exception) through the explain engine and, when it
/// names a known cause, adds that cause and its fixes to `f`, the fixes first. Pure: the
/// engine works on the text alone with its built-in data, without the machine.
pub fn with_explanation(mut f: Finding, text: &str, target: &cudoctor_plan::TargetEnv) -> Finding {
    let Ok(engine) = cudoctor_explain::builtin_engine() else {
        return f;
    };
    let e = engine.explain_for(text.as_bytes(), target);
    let (true, Some(signature)) = (e.is_known(), e.signature.as_deref()) else {
        return f;
    };
    f = f.evidence(format!("explain: {} ({signature})", e.category));
    f.cause = if f.cause.is_empty() {
        e.cause.clone()
    } else {
        format!("{} {}", f.cause, e.cause)
    };
    // The explain engine's steps come typed, their commands written for the probed env.
    let mut fixes: Vec<FixStep> = e.fix.clone();
    fixes.extend(f.fix.into_iter().filter(|x| !e.fix.contains(x)));
    f.fix = fixes;
    f
}
