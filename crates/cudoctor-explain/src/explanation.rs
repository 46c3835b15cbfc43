//! The result of `explain`: what the CLI prints as text or JSON.

use crate::category::Category;
use crate::signatures::Role;
use cudoctor_report::{Finding, FixStep};
use serde::Serialize;
use std::collections::BTreeMap;

/// One log line that supports the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatchedLine {
    /// 1-based line number in the input.
    pub line_no: u64,
    /// The cleaned line (colour codes and rank prefix removed), possibly shortened.
    pub text: String,
    /// The rank prefix the line carried (`[rank3]:`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The signature that matched it.
    pub signature: String,
}

/// Another signature that matched somewhere, not the answer (noted, e.g. an earlier warning).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlsoSeen {
    pub signature: String,
    pub category: Category,
    pub role: Role,
    pub line_no: u64,
    pub text: String,
    /// How many lines this signature matched in total.
    pub count: u64,
}

/// What was looked for, per category (shown when nothing matched).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LookedFor {
    pub category: Category,
    pub signatures: Vec<String>,
}

/// Counters of the scan, for the curious and for tests of the bounds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ScanStats {
    pub lines: u64,
    pub bytes: u64,
    /// Lines longer than the per-line cap; only their first part was examined.
    pub truncated_lines: u64,
    /// Lines the literal prefilter let through to the regexes.
    pub candidate_lines: u64,
    /// Lines holding a NUL byte (in the part examined): text logs have none, binary files many.
    pub binary_lines: u64,
    /// Lines whose body repeated one already read and found quiet: not read again.
    #[serde(default)]
    pub repeated_lines: u64,
    /// Lines passed over after one look: printable ASCII holding nothing any reader looks for.
    #[serde(default)]
    pub passed_over_lines: u64,
    /// A read error that ended the scan early (the answer covers what was read before it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_error: Option<String>,
}

impl ScanStats {
    /// Whether the input looks like binary data rather than a text log: at least half of its
    /// lines hold NUL bytes, which no log line does.
    pub fn looks_binary(&self) -> bool {
        self.binary_lines > 0 && self.binary_lines * 2 >= self.lines
    }
}

/// What the machine says about an explained cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A finding of `check` on this machine confirms the cause.
    Consistent,
    /// The rules that would see this cause had the facts they need and found nothing: the
    /// message was probably produced elsewhere (another machine, environment or state).
    Contradicts,
    /// The facts needed to judge were not available, or no rule judges this cause.
    Inconclusive,
}

/// The JSON of an explanation names each finding of `check` that bears on the cause by its
/// report id ("DRV004", "LIB004-2"), its code and its title.
fn serialize_judged_by<S: serde::Serializer>(
    findings: &[Finding],
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct JudgedBy<'a> {
        id: &'a str,
        code: &'a str,
        title: &'a str,
    }
    s.collect_seq(findings.iter().map(|f| JudgedBy {
        id: &f.id,
        code: &f.code,
        title: &f.title,
    }))
}

/// The machine check of an explanation: the findings `check` makes on the same snapshot,
/// mapped onto the explained cause (filled in by `cudoctor_analyse::confirm`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineCheck {
    pub verdict: Verdict,
    /// The findings of `check` that confirm the cause.
    #[serde(serialize_with = "serialize_judged_by")]
    pub findings: Vec<Finding>,
    /// The rules that judge this cause (what was looked for), written as their codes.
    pub judged_by: Vec<cudoctor_report::RuleCode>,
    pub evidence: Vec<String>,
    /// `check`'s fix for the confirming findings on this machine, step for step.
    pub fixes: Vec<FixStep>,
    pub contradictions: Vec<String>,
}

/// The explanation of an error message or a log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub category: Category,
    /// How sure the category is (0..1); 0 for unknown.
    pub confidence: f32,
    /// A one-line name of the problem.
    pub title: String,
    pub cause: String,
    /// Steps, most specific first; machine-specific steps come before the generic ones. Each
    /// a command (written for the environment given, else for the `python` on PATH) or prose.
    pub fix: Vec<FixStep>,
    /// Steps for the machine that wrote the log, when this machine contradicts the message: a
    /// group of their own under that heading, never numbered among this machine's steps.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fix_elsewhere: Vec<FixStep>,
    /// The binaries the log names (libraries, extension modules, torch's extension build
    /// directories), judged on the machine before it is said to contradict the message.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub named_binaries: Vec<crate::named::NamedBinary>,
    pub matched: Vec<MatchedLine>,
    /// Values read from the message (versions, architectures, library and symbol names).
    pub fields: BTreeMap<String, String>,
    /// The id of the winning signature; `None` when unknown.
    pub signature: Option<String>,
    /// The machine check the answer asks for when it is not its signature's (or it has none):
    /// an API gap between two installed packages read from the message's wording.
    #[serde(skip)]
    pub facts_check: Option<crate::FactsCheck>,
    /// Facts that support or qualify the answer (from the machine and from other log lines).
    pub evidence: Vec<String>,
    /// Other signatures that matched (earlier warnings, later symptoms).
    pub also_seen: Vec<AlsoSeen>,
    /// Present when nothing matched: what was looked for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub looked_for: Vec<LookedFor>,
    /// The check against a machine's snapshot, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineCheck>,
    /// Where the signature's knowledge comes from.
    pub sources: Vec<String>,
    pub stats: ScanStats,
}

impl Explanation {
    /// True when a signature explained the input.
    pub fn is_known(&self) -> bool {
        self.category != Category::Unknown
    }

    /// This answer said as another, read from what the log shows besides it (the GPU in use
    /// after a warning, the program's own error after a CUDA one): the new category, texts,
    /// fix and evidence; the lines it matched, its fields, what else was seen, the log's
    /// binaries and the scan's figures kept. What belonged to the answer replaced (its
    /// signature, its sources, its machine check) goes.
    pub fn said_instead(
        self,
        category: Category,
        confidence: f32,
        title: String,
        cause: String,
        fix: Vec<FixStep>,
        evidence: Vec<String>,
    ) -> Explanation {
        Explanation {
            category,
            confidence,
            title,
            cause,
            fix,
            fix_elsewhere: Vec::new(),
            named_binaries: self.named_binaries,
            matched: self.matched,
            fields: self.fields,
            signature: None,
            facts_check: None,
            evidence,
            also_seen: self.also_seen,
            looked_for: Vec::new(),
            machine: None,
            sources: Vec::new(),
            stats: self.stats,
        }
    }
}

impl Explanation {
    /// Adds the machine check. When the machine confirms the message with check's findings, the
    /// fix is check's for them, alone: the signature's generic steps ("if PyTorch has it,
    /// rebuild the extension") would second-guess the cause already found (`--no-machine` still
    /// gives them). Otherwise check's fixes come first, then the signature's own; when the
    /// machine contradicts the message, those are said to be for the machine that wrote the
    /// log, in a group of their own. An unknown explanation has nothing to check.
    pub fn with_machine(&mut self, check: MachineCheck) {
        if !self.is_known() {
            return;
        }
        let elsewhere = check.verdict == Verdict::Contradicts;
        let confirmed = check.verdict == Verdict::Consistent && !check.fixes.is_empty();
        let mut fix: Vec<FixStep> = check.fixes.clone();
        let own: Vec<FixStep> = self
            .fix
            .iter()
            .filter(|f| !confirmed && !fix.contains(f))
            .cloned()
            .collect();
        if elsewhere {
            self.fix_elsewhere = own;
        } else {
            fix.extend(own);
        }
        self.fix = fix;
        let mut evidence = check.evidence.clone();
        evidence.extend(
            check
                .contradictions
                .iter()
                .map(|c| format!("Contradiction: {c}")),
        );
        evidence.append(&mut self.evidence);
        self.evidence = evidence;
        self.machine = Some(check);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_check_names_its_findings_by_id_code_and_title() {
        static RULE: cudoctor_report::Rule<()> = cudoctor_report::Rule {
            code: "LIB004",
            name: "library-missing",
            layer: cudoctor_report::Layer::Libraries,
            severity: cudoctor_report::Severity::Error,
            summary: "",
            docs: "",
            check: (),
        };
        let mut f = RULE
            .finding("libcudnn.so.9 is missing")
            .cause("not installed");
        f.id = "LIB004-2".into();
        let check = MachineCheck {
            verdict: Verdict::Consistent,
            findings: vec![f],
            judged_by: vec![cudoctor_report::RuleCode::of(&RULE)],
            evidence: Vec::new(),
            fixes: Vec::new(),
            contradictions: Vec::new(),
        };
        let json = serde_json::to_value(&check).unwrap();
        assert_eq!(
            json["findings"],
            serde_json::json!([{"id": "LIB004-2", "code": "LIB004", "title": "libcudnn.so.9 is missing"}])
        );
        assert_eq!(json["judged_by"], serde_json::json!(["LIB004"]));
    }
}
