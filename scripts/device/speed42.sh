#!/usr/bin/env bash
# Issue 42 on the GPU machine, in parts (each fits one device call of under 10 minutes):
#   check     `check` as a user types it, two builds side by side (interleaved, ratios: N envs
#             against 1, after against before; scripts/bench/check_side_by_side.py), then the
#             after build's median beside collect_env's in one interleaved run (target: median
#             <= 35 ms and >= 150x collect_env), and CUDOCTOR_TIMINGS of one run of each.
#   deep      `check --deep` of both builds on the healthy machine: the wall time (target <= 8 s),
#             each probe's time, and the same findings (codes and severities) from both.
#   observer  scripts/device/observer_paired.sh: the observer's own time per step (target
#             <= 20 µs and <= 1% of a 1 ms step) and the paired difference with 95% intervals.
# Binaries: BEFORE (main's build) and AFTER (this branch's), release builds made on the CPU
# machine. Everything lands in $OUT.
# Usage: OUT=DIR scripts/device/speed42.sh check|deep|observer|all BEFORE AFTER [PYTHON]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
part=${1:?usage: OUT=DIR speed42.sh check|deep|observer|all BEFORE AFTER [PYTHON]}
before=$(readlink -f "${2:?before binary}")
after=$(readlink -f "${3:?after binary}")
py=${4:-/opt/torch/.venv/bin/python}
env=$(cd "$(dirname "$py")/.." && pwd)
out=${OUT:?set OUT}; mkdir -p "$out"
{ date -u; uptime; echo "cores: $(nproc)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
  echo "before: $("$before" --version | head -1)"; echo "after: $("$after" --version | head -1)"; } >"$out/info-$part.txt" 2>&1

median_ms() { sort -n | awk '{a[NR]=$1} END {printf "%.1f ms (min %.1f, max %.1f, n %d)", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)/1000, a[1]/1000, a[NR]/1000, NR}'; }

check_part() {
  local o=$out/check.txt
  {
    echo "== side by side (1, 2, 4 envs: hard links of $env beside it; the after build also with CUDOCTOR_THREADS=16)"
    timeout 400 python3 "$here/../bench/check_side_by_side.py" --env "$env" --work "$(dirname "$env")" --rounds 9 --timings "$before" "$after" "$after,CUDOCTOR_THREADS=16"
    echo "== check as typed (from /tmp), 31 runs of each build interleaved, beside collect_env"
    cd /tmp || exit 1
    : >/tmp/w42.txt
    for i in $(seq 31); do
      for b in before after; do
        bin=$before; [ $b = after ] && bin=$after
        t0=$(date +%s%N); "$bin" check >/dev/null 2>&1; t1=$(date +%s%N); echo "$b $(( (t1 - t0) / 1000 ))" >>/tmp/w42.txt
      done
    done
    for i in 1 2 3; do t0=$(date +%s%N); "$py" -m torch.utils.collect_env >/dev/null 2>&1; t1=$(date +%s%N); echo "collect_env $(( (t1 - t0) / 1000 ))" >>/tmp/w42.txt; done
    for m in before after collect_env; do printf '%s median ' $m; grep "^$m " /tmp/w42.txt | awk '{print $2}' | median_ms; echo; done
    python3 - /tmp/w42.txt <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    rows.setdefault(k, []).append(int(v) / 1000.0)
m = {k: statistics.median(v) for k, v in rows.items()}
print("after / before: %.2f; collect_env / after: %.0fx (target >= 150x); after median %.1f ms (target <= 35 ms)" % (
    m["after"] / m["before"], m["collect_env"] / m["after"], m["after"]))
PY
    echo "== nvidia-smi --query-gpu (the driver query's floor)"
    for i in 1 2 3 4 5; do t0=$(date +%s%N); nvidia-smi --query-gpu=name --format=csv,noheader >/dev/null 2>&1; t1=$(date +%s%N); echo "$(( (t1 - t0) / 1000 ))"; done | median_ms; echo
    for b in "$before" "$after"; do echo "-- CUDOCTOR_TIMINGS $b"; CUDOCTOR_TIMINGS=1 "$b" check 2>&1 >/dev/null | grep -E "timing|memory"; done
    uptime
  } >"$o" 2>&1
  cat "$o"
}

deep_part() {
  local o=$out/deep.txt
  {
    for b in before after; do
      bin=$before; [ $b = after ] && bin=$after
      t0=$(date +%s%N)
      timeout 300 "$bin" check --deep --python "$py" --format json >"$out/deep-$b.json" 2>"$out/deep-$b.err"
      rc=$?; t1=$(date +%s%N)
      echo "$b: rc $rc, wall $(( (t1 - t0) / 1000000 )) ms"
      "$bin" check --snapshot "$out/deep-$b.json" 2>/dev/null | sed -n '/Accelerated paths/,/Multi-GPU/p' >"$out/deep-$b.txt"
    done
    python3 - "$out/deep-before.json" "$out/deep-after.json" <<'PY'
import json, sys
def load(p):
    r = json.load(open(p))
    return r, sorted((f["code"], f["severity"]) for f in r.get("findings", []))
(b, fb), (a, fa) = load(sys.argv[1]), load(sys.argv[2])
print("findings before:", fb)
print("findings after: ", fa)
print("same findings:", "YES" if fb == fa else "NO")
d = a["snapshot"].get("deep") or {}
times = []
for r in d.get("runs", []):
    times.append(("torch probe", r.get("elapsed_s")))
    times.append(("compile test", r.get("compile_elapsed_s")))
    c = (r.get("result") or {}).get("compile") or {}
    print("compile: ok %s, first call %s s, not tested: %s" % (c.get("ok"), c.get("compile_s"), c.get("not_tested")))
    for s in (r.get("result") or {}).get("stages", []):
        print("  stage %-12s %s" % (s["name"], s.get("seconds") if s.get("seconds") is not None else s.get("skipped")))
for f in d.get("frameworks", []):
    times.append((f["framework"] + " probe", f.get("elapsed_s")))
wall = d.get("wall_s")
for name, t in times:
    print("%-14s %s s" % (name, "%.2f" % t if t is not None else "-"))
s = sum(t for _, t in times if t)
print("probes' wall %.2f s, their sum %.2f s, overlap ratio %.2f; target wall <= 8 s: %s" % (
    wall or 0, s, s / wall if wall else 0, "PASS" if wall and wall <= 8 else "FAIL"))
bd = b["snapshot"].get("deep") or {}
bt = [r.get("elapsed_s") or 0 for r in bd.get("runs", [])] + [f.get("elapsed_s") or 0 for f in bd.get("frameworks", [])]
print("before: torch probe %s s, frameworks after it %s s" % (bt[:1], bt[1:]))
PY
    cat "$out/deep-after.txt"
  } >"$o" 2>&1
  cat "$o"
}

case $part in
  check) check_part ;;
  deep) deep_part ;;
  observer) OUT=$out "$here/observer_paired.sh" "$after" "$before" "$py" ;;
  all) check_part; deep_part; OUT=$out "$here/observer_paired.sh" "$after" "$before" "$py" ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
esac
