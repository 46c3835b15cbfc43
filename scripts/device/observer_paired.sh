#!/usr/bin/env bash
# The `cudoctor run` observer's cost on the GPU machine, paired, with a 95% interval (issue 42).
# Each round runs the same short bf16 training (scripts/device/run_observer_gpt.py, a small model
# whose step is about 1 ms: the case where the observer's Python work shows most) once without
# the observer and once under each cudoctor given, in an order that rotates between rounds so
# clock and cache drift fall on every side. Per round, the difference of the CUDA-synchronised
# median steps (observed minus plain) is one sample; their mean gets a Student-t 95% interval
# and their median a distribution-free (sign-test) one. Beside that, the observer's own time as
# it measures it inside each observed process (its clock around its hooks: run.json's summary,
# observer_ms_per_step and observer_share_of_step), with its median and interval, and where it
# goes by site.
#
# Usage: OUT=DIR [ROUNDS=24] [STEPS=400] [SHAPE="--batch 1 --seq 128 --dim 256 --layers 4"] \
#          scripts/device/observer_paired.sh AFTER_CUDOCTOR [BEFORE_CUDOCTOR] [PYTHON]
# Targets (issue 42): the observer's own time <= 20 µs per step and <= 1% of a 1 ms step, and
# the paired difference's 95% interval at or under 1% of the step. Takes ~4-6 s per run: 24
# rounds of three runs are about 6 minutes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
after=$(readlink -f "${1:?usage: OUT=DIR observer_paired.sh AFTER_CUDOCTOR [BEFORE_CUDOCTOR] [PYTHON]}")
before=${2:-}
[ -n "$before" ] && before=$(readlink -f "$before")
py=${3:-/opt/torch/.venv/bin/python3}
rounds=${ROUNDS:-24}
steps=${STEPS:-400}
shape=${SHAPE:---batch 1 --seq 128 --dim 256 --layers 4}
out=${OUT:?OUT must name a directory}; mkdir -p "$out"
work=$(mktemp -d /tmp/cudoctor-paired.XXXXXX)
model="$here/run_observer_gpt.py"
# shellcheck disable=SC2086
plain() { timeout 120 "$py" "$model" --dtype bf16 --steps "$steps" $shape --timing "$work/plain.$1.t" >>"$work/log" 2>&1; }
# shellcheck disable=SC2086
observed() { # NAME BINARY ROUND
  timeout 120 "$2" run --out "$work/$1.$3.json" -- "$py" "$model" --dtype bf16 --steps "$steps" $shape --timing "$work/$1.$3.t" >>"$work/log" 2>&1
}
sides=(plain after)
[ -n "$before" ] && sides=(plain before after)
{ date -u; uptime; nvidia-smi -L 2>&1; "$py" -c 'import torch; print("torch", torch.__version__)' 2>&1
  "$after" --version 2>&1 | head -1; [ -n "$before" ] && "$before" --version 2>&1 | head -1
  echo "rounds $rounds, steps $steps, shape: $shape, sides: ${sides[*]}"; } >"$out/observer_paired_info.txt"
for r in $(seq 1 "$rounds"); do
  n=${#sides[@]}
  for k in $(seq 0 $((n - 1))); do
    side=${sides[$(((k + r) % n))]}
    case $side in
      plain) plain "$r" ;;
      after) observed after "$after" "$r" ;;
      before) observed before "$before" "$r" ;;
    esac
  done
done
"$py" - "$work" "$rounds" "${sides[@]}" >"$out/observer_paired.txt" 2>&1 <<'PY'
import json, math, os, statistics, sys

work, rounds, sides = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
# Student t, two-sided 95%, by degrees of freedom (beyond the table: the normal's 1.96 + 2.4/df).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
       20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
       29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000}

def t95(df):
    if df in T95:
        return T95[df]
    return 1.96 + 2.4 / df

def mean_ci(xs):
    n = len(xs)
    m = statistics.fmean(xs)
    if n < 2:
        return m, float("nan"), float("nan")
    h = t95(n - 1) * statistics.stdev(xs) / math.sqrt(n)
    return m, m - h, m + h

def median_ci(xs):
    """The median and the order statistics that bound it with >= 95% (sign test, binomial)."""
    xs = sorted(xs)
    n = len(xs)
    med = statistics.median(xs)
    # The largest k with P(Binomial(n, 1/2) < k) <= 2.5%: [x_k, x_{n-k+1}] covers the median.
    cdf, k = 0.0, 0
    for i in range(n + 1):
        p = math.comb(n, i) / 2 ** n
        if cdf + p > 0.025:
            break
        cdf += p
        k = i + 1
    if k == 0:
        return med, float("nan"), float("nan")
    return med, xs[k - 1], xs[n - k]

def load(path, key):
    try:
        with open(path) as f:
            return json.load(f)[key]
    except Exception:
        return None

rows = []
for r in range(1, rounds + 1):
    row = {"plain": load(os.path.join(work, "plain.%d.t" % r), "median_ms")}
    for side in sides[1:]:
        row[side] = load(os.path.join(work, "%s.%d.t" % (side, r)), "median_ms")
        row[side + "_own"] = load(os.path.join(work, "%s.%d.json" % (side, r)), "summary")
    rows.append(row)

print("rounds: %d; sides: %s" % (rounds, ", ".join(sides)))
plain = [r["plain"] for r in rows if r["plain"] is not None]
if plain:
    print("plain step: median %.3f ms (%d runs)" % (statistics.median(plain), len(plain)))
for side in sides[1:]:
    pairs = [(r["plain"], r[side]) for r in rows if r["plain"] is not None and r[side] is not None]
    print("\n== %s (%d complete pairs)" % (side, len(pairs)))
    if len(pairs) >= 2:
        d = [o - p for p, o in pairs]
        rel = [(o - p) / p * 100.0 for p, o in pairs]
        m, lo, hi = mean_ci(d)
        print("step difference, observed - plain: mean %+.4f ms, 95%% interval [%+.4f, %+.4f] ms" % (m, lo, hi))
        m, lo, hi = mean_ci(rel)
        print("  relative: mean %+.2f%%, 95%% interval [%+.2f%%, %+.2f%%]" % (m, lo, hi))
        m, lo, hi = median_ci(rel)
        print("  relative: median %+.2f%%, 95%% interval [%+.2f%%, %+.2f%%] (sign test)" % (m, lo, hi))
    own = [r[side + "_own"] for r in rows if r.get(side + "_own")]
    us = [s["observer_ms_per_step"] * 1000.0 for s in own if s.get("observer_ms_per_step") is not None]
    share = [s["observer_share_of_step"] * 100.0 for s in own if s.get("observer_share_of_step") is not None]
    if us:
        m, lo, hi = median_ci(us)
        print("observer's own time (its clock around its hooks): median %.1f µs per step, 95%% interval [%.1f, %.1f] (%d runs)" % (m, lo, hi, len(us)))
        print("  target <= 20 µs per step: %s" % ("PASS" if m <= 20.0 else "FAIL"))
    if share:
        m, lo, hi = median_ci(share)
        print("  share of the median step: median %.2f%%, 95%% interval [%.2f%%, %.2f%%]; target <= 1%%: %s" % (
            m, lo, hi, "PASS" if hi <= 1.0 else ("PASS (median)" if m <= 1.0 else "FAIL")))
    sites = {}
    for s in own:
        for x in s.get("observer_sites") or []:
            sites.setdefault(x["site"], []).append(x["us_per_step"])
    for name, xs in sorted(sites.items(), key=lambda kv: -statistics.median(kv[1])):
        print("  %-18s median %.1f µs per step" % (name, statistics.median(xs)))
if len(sides) == 3:
    both = [(r["before"], r["after"]) for r in rows if r.get("before") is not None and r.get("after") is not None]
    if len(both) >= 2:
        m, lo, hi = mean_ci([a - b for b, a in both])
        print("\nafter - before, paired: mean %+.4f ms, 95%% interval [%+.4f, %+.4f] ms" % (m, lo, hi))
PY
cp "$work/log" "$out/observer_paired.log" 2>/dev/null
cat "$out/observer_paired_info.txt" "$out/observer_paired.txt"
rm -rf "$work"
