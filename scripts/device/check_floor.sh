#!/usr/bin/env bash
# Issue 42, check as a user types it, on the GPU machine, in one call (about 2-3 minutes):
#  1. `check` (no options, from /tmp) of BEFORE and AFTER interleaved, ROUNDS runs each, beside
#     `python -m torch.utils.collect_env` (3 runs) and `nvidia-smi --query-gpu` (the floor):
#     medians side by side and the ratios (target: AFTER median <= 35 ms and >= 150x collect_env);
#  2. where the time goes: CUDOCTOR_TIMINGS of SPANS_ROUNDS runs of each build interleaved, the
#     median end and length of each span (python: the environments' reading, the serial part
#     before the wheels, the listings and the loader; driver: the driver query beside them);
#  3. the same facts from both builds (scripts/bench/same_facts.py) for the env and as typed.
# Usage: OUT=DIR [ROUNDS=31] [SPANS_ROUNDS=15] scripts/device/check_floor.sh [AFTER] [BEFORE] [PYTHON]
#   defaults: .whl/cudoctor, .whl/cudoctor-before, /opt/torch/.venv/bin/python
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
after=$(readlink -f "${1:-.whl/cudoctor}")
before=$(readlink -f "${2:-.whl/cudoctor-before}")
py=${3:-/opt/torch/.venv/bin/python}
env=$(cd "$(dirname "$py")/.." && pwd)
out=${OUT:-/tmp/check_floor}; mkdir -p "$out"
rounds=${ROUNDS:-31}
spans=${SPANS_ROUNDS:-15}
{
  echo "== machine"; date -u; uptime; echo "cores: $(nproc)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
  echo "before: $("$before" --version | head -1)"; echo "after: $("$after" --version | head -1)"
} | tee "$out/info.txt"
cd /tmp || exit 1
python3 - "$before" "$after" "$py" "$rounds" "$spans" "$out" <<'PY'
import os, re, statistics, subprocess, sys, time

before, after, py, rounds, spans, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
builds = {"before": before, "after": after}


def wall(cmd, env=None):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, timeout=120)
    return (time.perf_counter() - t) * 1000.0


def med(v):
    return "%.1f ms (min %.1f, max %.1f, n %d)" % (statistics.median(v), min(v), max(v), len(v))


print("== 1. check as typed (from /tmp), %d runs of each build interleaved, beside collect_env" % rounds)
times = {"before": [], "after": []}
for r in range(rounds):
    order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
    for b in order:
        times[b].append(wall([builds[b], "check"]))
import shutil
smi = ["nvidia-smi", "--query-gpu=name,driver_version,memory.used", "--format=csv,noheader"]
floor = [wall(smi) for _ in range(7)] if shutil.which("nvidia-smi") else [0.0]
collect_env = [wall([py, "-m", "torch.utils.collect_env"]) for _ in range(3)]
m = {k: statistics.median(v) for k, v in times.items()}
ce = statistics.median(collect_env)
for b in ("before", "after"):
    print("%-12s median %s" % (b, med(times[b])))
print("%-12s median %s" % ("collect_env", med(collect_env)))
print("%-12s median %s" % ("nvidia-smi", med(floor)))
print()
print("| | before | after | after / before |")
print("|---|---|---|---|")
print("| check median | %.1f ms | %.1f ms | %.2f |" % (m["before"], m["after"], m["after"] / m["before"]))
print("| collect_env / check | %.0fx | %.0fx | |" % (ce / m["before"], ce / m["after"]))
print("| check - nvidia-smi floor | %.1f ms | %.1f ms | |" % (m["before"] - statistics.median(floor), m["after"] - statistics.median(floor)))
print("targets: after median <= 35 ms: %s; >= 150x collect_env: %s" % (
    "PASS" if m["after"] <= 35 else "FAIL", "PASS" if ce / m["after"] >= 150 else "FAIL"))

print()
print("== 2. CUDOCTOR_TIMINGS, %d runs of each build interleaved (as typed, from /tmp): median first start / end / length (a span of each environment: its first start, last end, longest)" % spans)
span_re = re.compile(r"timing: (\S+)\s+([\d.]+) ms ->\s+([\d.]+) ms \(([\d.]+) ms\)")
rows = {"before": {}, "after": {}}
for r in range(spans):
    for b in (["before", "after"] if r % 2 == 0 else ["after", "before"]):
        env = dict(os.environ, CUDOCTOR_TIMINGS="1")
        p = subprocess.run([builds[b], "check"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
        seen = {}
        for name, start, end, length in span_re.findall(p.stderr):
            # A span that runs once per environment (listing, loader): its last end and its longest.
            # A span that runs once per environment: its first start too.
            st, e, l = seen.get(name, (1e9, 0.0, 0.0))
            seen[name] = (min(st, float(start)), max(e, float(end)), max(l, float(length)))
        for name, (st, e, l) in seen.items():
            rows[b].setdefault(name, []).append((e, l, st))
names = [n for n in ("kb", "platform", "health", "python-find", "python", "env-headers", "env-sites", "env-packages", "env-frameworks", "env-declared", "env-installer", "env-numpy", "driver", "discovery", "toolkit", "wheels", "listing", "framework-loader", "loader", "kernels", "collect", "judge", "render", "teardown") if n in rows["after"] or n in rows["before"]]
print("| span | before: starts, ends at, lasts | after: starts, ends at, lasts | after / before (length) |")
print("|---|---|---|---|")
for n in names:
    cells = []
    lens = {}
    for b in ("before", "after"):
        v = rows[b].get(n)
        if not v:
            cells.append("-")
            continue
        e = statistics.median(x[0] for x in v)
        l = statistics.median(x[1] for x in v)
        st = statistics.median(x[2] for x in v)
        lens[b] = l
        cells.append("%.1f, %.1f ms, %.1f ms" % (st, e, l))
    ratio = "%.2f" % (lens["after"] / lens["before"]) if len(lens) == 2 and lens["before"] > 0 else "-"
    print("| %s | %s | %s | %s |" % (n, cells[0], cells[1], ratio))
PY
echo
echo "== 3. same facts, before and after ($env, and as typed from /tmp)"
timeout 120 python3 "$here/../bench/same_facts.py" "$before" "$after" "$env" 2>&1 | tail -5
for b in before after; do
  bin=$before; [ $b = after ] && bin=$after
  timeout 60 "$bin" check --format json >"$out/typed-$b.json" 2>/dev/null
done
python3 - "$out/typed-before.json" "$out/typed-after.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
f = lambda r: sorted((x["code"], x["severity"]) for x in r.get("findings", []))
print("as typed, findings before:", f(a))
print("as typed, findings after: ", f(b), "(same)" if f(a) == f(b) else "(DIFFERENT)")
PY
uptime
