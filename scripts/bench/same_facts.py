#!/usr/bin/env python3
"""Two cudoctor builds judge the same: for each env, `check --format json` of both binaries,
compared on what collection found (every snapshot section but timings and the tool's own
version/time fields) and on the findings. A speed change must leave every fact as it was.

    scripts/bench/same_facts.py BEFORE AFTER ENV_PREFIX...
"""
import json
import subprocess
import sys

VOLATILE = {"collected_at", "elapsed_ms", "duration_ms", "timings", "tool_version", "started_at"}


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def facts(binary, env):
    out = subprocess.run(
        [binary, "check", "--python", f"{env}/bin/python", "--format", "json"],
        capture_output=True, timeout=120,
    )
    d = json.loads(out.stdout)
    return strip(d.get("snapshot", {})), [(f["code"], f["severity"], f["title"]) for f in d["findings"]]


def diff(a, b, path=""):
    if type(a) is not type(b):
        return [path]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += diff(a.get(k), b.get(k), f"{path}.{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path} (length {len(a)} vs {len(b)})"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path]


def main():
    before, after, envs = sys.argv[1], sys.argv[2], sys.argv[3:]
    bad = 0
    for env in envs:
        (sa, fa), (sb, fb) = facts(before, env), facts(after, env)
        d = diff(sa, sb)
        same_findings = fa == fb
        print(f"{env}: {'same' if not d and same_findings else 'DIFFERENT'}"
              f" ({len(fa)} findings; {len(d)} differing fields)")
        for p in d[:20]:
            print(f"  field {p}")
        if not same_findings:
            print(f"  findings before: {fa}\n  findings after:  {fb}")
        bad += bool(d) or not same_findings
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
