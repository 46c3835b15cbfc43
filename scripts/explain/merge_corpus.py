#!/usr/bin/env python3
"""Merges gathered corpus files into crates/cudoctor-explain/tests/corpus/wave3.toml.

Each input is a TOML file of [[case]] tables (id, source, established, expected, text), gathered
from public threads. Cases whose source already appears in another corpus file are dropped, ids
are made unique, and the result is written in a stable order. The tuning/test split is not
written here: tests/corpus.rs assigns each case to a half by its repository (FNV-1a-64 of
"<seed>:<owner>/<repo>", even = tuning), so every thread of one repository lands in one half.

usage: merge_corpus.py OUT IN.toml...
"""
import re
import sys
import tomllib
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "crates/cudoctor-explain/tests/corpus"
SEED = 35


def toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def literal_block(s: str) -> str:
    s = s.strip("\n")
    if "'''" in s:
        # A literal block cannot hold ''': fall back to a basic multi-line string.
        esc = s.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        return '"""\n' + esc + '\n"""'
    return "'''\n" + s + "\n'''"


def main() -> None:
    out = Path(sys.argv[1])
    known = set()
    for f in CORPUS.glob("*.toml"):
        if f.resolve() == out.resolve():
            continue
        known |= set(re.findall(r'source = "([^"]+)"', f.read_text()))
    cases, seen_sources, ids = [], set(), set()
    for path in sys.argv[2:]:
        data = tomllib.loads(Path(path).read_text())
        for c in data.get("case", []):
            src = c["source"].strip()
            if src in known or src in seen_sources:
                continue
            seen_sources.add(src)
            cid = c["id"]
            while cid in ids:
                cid += "-b"
            ids.add(cid)
            cases.append({**c, "id": cid, "source": src})
    cases.sort(key=lambda c: (c["source"], c["id"]))
    lines = [
        "# The third corpus (2026-12-04): real reports gathered from public threads with the search",
        "# tool, in four areas (PyTorch and extension builds; other frameworks and serving engines;",
        "# NCCL, containers, kernel modules and Xid lines; Chinese-language and hand-typed reports),",
        "# each with its thread and what the thread established. Merged by",
        "# scripts/explain/merge_corpus.py. Split by repository (tests/corpus.rs): the tuning half",
        "# may inform the clause lexicon and signatures; the test half is only measured, and its",
        "# misses are never printed. Negatives (expected = \"not_environment\") are program or data",
        "# bugs: any environment category for them is a false alarm.",
        "",
        f"split_seed = {SEED}",
        "",
    ]
    for c in cases:
        lines += [
            "[[case]]",
            f"id = {toml_str(c['id'])}",
            f"source = {toml_str(c['source'])}",
            f"established = {toml_str(c['established'])}",
            f"expected = {toml_str(c['expected'])}",
            f"text = {literal_block(c['text'])}",
            "",
        ]
    out.write_text("\n".join(lines))
    tomllib.loads(out.read_text())
    print(f"{len(cases)} cases -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
