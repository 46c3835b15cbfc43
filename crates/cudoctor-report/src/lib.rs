//! The report vocabulary every judge of cudoctor speaks, below them all: a [`Finding`] (its
//! [`Layer`], [`Severity`], [`Confidence`], the [`Subject`]s it is about, its [`FixStep`]s),
//! the [`Rule`] that makes it, and a [`FindingRef`] as a comparison shows it. `analyse` makes
//! findings, `plan` and `explain` carry check's findings as these types (never as their words),
//! `render` prints them.

pub mod finding;
pub mod fix;
pub mod rule;

pub use finding::{Confidence, Finding, FindingRef, Layer, Severity, Subject};
pub use fix::{CommandTarget, FixStep};
pub use rule::{find_rule, Rule, RuleCode};

#[cfg(test)]
mod tests {
    use super::*;

    static RULE: Rule<()> = Rule {
        code: "DRV001",
        name: "no-driver",
        layer: Layer::Driver,
        severity: Severity::Error,
        summary: "",
        docs: "",
        check: (),
    };

    #[test]
    fn a_finding_leaves_out_what_it_does_not_say() {
        let f = Finding::new(&RULE, "no driver").prose("Install one.");
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["code"], "DRV001");
        assert_eq!(json["layer"], "driver");
        assert_eq!(json["fix"][0]["prose"], "Install one.");
        for absent in ["id", "confidence", "caused_by", "caused_by_id", "about"] {
            assert!(json.get(absent).is_none(), "{absent}");
        }
        assert_eq!(FindingRef::from(&f).title, "no driver");
        assert!(find_rule(&[&RULE], "drv001").is_some());
        assert_eq!(
            serde_json::to_value([RuleCode::of(&RULE)]).unwrap(),
            serde_json::json!(["DRV001"])
        );
    }
}
