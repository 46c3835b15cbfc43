//! The report's stylesheet, inlined into the page: no external asset.

pub(super) const CSS: &str = r#"
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dee8; --bg:#ffffff; --card:#f6f8fb;
        --err:#c62828; --warn:#b26a00; --info:#1565c0; --ok:#2e7d32; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1100px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 16px 0 6px; }
.summary { color: var(--muted); margin-bottom: 8px; }
.verdict { font-size: 24px; line-height: 1.3; font-weight: 700; margin: 0 0 6px; padding: 12px 16px;
           border-left: 8px solid var(--ok); background: var(--card); border-radius: 3px; color: var(--ok); }
.verdict.error { color: var(--err); border-left-color: var(--err); }
.verdict.warning { color: var(--warn); border-left-color: var(--warn); }
.meta { color: var(--muted); margin: 0 0 12px; }
.rule { border-top: 1px solid var(--line); margin-top: 12px; }
a.code { text-decoration: none; } a.code:hover { text-decoration: underline; }
.mark { display: inline-block; width: 1.3em; font-weight: 700; }
.mark.error { color: var(--err); } .mark.warning { color: var(--warn); } .mark.ok { color: var(--ok); }
table { border-collapse: collapse; margin: 6px 0 10px; }
td, th { padding: 3px 10px 3px 0; vertical-align: top; text-align: left; }
th { color: var(--muted); font-weight: 600; }
table.facts td:first-child { color: var(--muted); white-space: nowrap; }
table.grid td, table.grid th { border-bottom: 1px solid var(--line); padding: 3px 10px; }
table.grid td.num { text-align: right; font-variant-numeric: tabular-nums; }
.finding { border-left: 4px solid var(--line); background: var(--card); padding: 8px 12px; margin: 10px 0; border-radius: 3px; }
.finding.error { border-left-color: var(--err); } .finding.warning { border-left-color: var(--warn); }
.finding.info { border-left-color: var(--info); }
.sev { font-weight: 700; text-transform: uppercase; font-size: 11px; letter-spacing: .04em; }
.sev.error { color: var(--err); } .sev.warning { color: var(--warn); } .sev.info { color: var(--info); }
.code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; color: var(--muted); }
.title { font-weight: 600; }
.finding ul { margin: 4px 0; padding-left: 18px; }
pre { background: #eef1f6; padding: 6px 10px; border-radius: 3px; overflow-x: auto; margin: 4px 0;
      font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; } figcaption { color: var(--muted); font-size: 12px; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.note { color: var(--muted); font-size: 12px; }
"#;
