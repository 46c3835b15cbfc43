#!/usr/bin/env bash
# The session's merged work on the GPU machine in one call (under 10 minutes): check's speed
# side by side and the observer paired (scripts/device/w7_speed.sh), then the healthy machine's
# `check --deep` with its framework probes (ACC011's reading of a package API gap).
# Binaries: .whl/cudoctor-before, .whl/cudoctor. Usage: OUT=DIR scripts/device/w7_final.sh
set -u
here=$(cd "$(dirname "$0")" && pwd)
B=$(readlink -f .whl/cudoctor)
PY=/opt/torch/.venv/bin/python
o=${OUT:?set OUT}
SECONDS=0
{
echo "== machine"; date -u; uptime; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "before: $(.whl/cudoctor-before --version)"; echo "after: $($B --version)"
echo "== healthy check (after), as typed"
(cd /tmp && timeout 60 "$B" check > "$o/check.txt" 2>&1; echo "typed rc $?")
grep -E "^Verdict" "$o/check.txt"
echo "== check --deep (after)"
/usr/bin/time -f "deep wall %e s" timeout 150 "$B" check --deep --python "$PY" --format json > "$o/deep.json" 2> "$o/deep.err"; echo "deep rc $?"
tail -2 "$o/deep.err"
python3 - "$o/deep.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("findings:", sorted((f["code"], f["severity"]) for f in r.get("findings", [])))
for f in r.get("findings", []):
    if f["code"] == "ACC011":
        print(json.dumps({k: f.get(k) for k in ("title", "evidence", "cause", "fix", "confidence")}, indent=1))
for p in (r.get("snapshot") or {}).get("deep", {}).get("frameworks", []):
    res = p.get("result") or {}
    print(p.get("framework"), p.get("elapsed_s"), res.get("error"), res.get("api_gap"))
# Every time the deep facts carry (the probes' own clocks), to see where the wall goes.
def walk(node, path):
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, (int, float)) and (k.endswith("_s") or k.endswith("_ms") or "elapsed" in k):
                print("time %s.%s = %s" % (path, k, v))
            else:
                walk(v, path + "." + k)
    elif isinstance(node, list):
        for i, v in enumerate(node[:20]):
            walk(v, "%s[%d]" % (path, i))
walk((r.get("snapshot") or {}).get("deep", {}), "deep")
PY
} > "$o/r.txt" 2>&1
cat "$o/r.txt"
left=$((570 - SECONDS))
echo "== speed ($left s left)"
BUDGET=$((left - 10)) OUT=$o/speed ROUNDS=${ROUNDS:-8} timeout "$left" "$here/w7_speed.sh" "$B" .whl/cudoctor-before "$PY" > "$o/speed.txt" 2>&1
echo "speed rc $?"; tail -60 "$o/speed.txt"
echo "total ${SECONDS} s"
