#!/usr/bin/env bash
# The run observer's overhead on the GPU machine, paired: PAIRS pairs of the same bf16 training
# (scripts/device/run_observer_gpt.py, STEPS steps, CUDA-synchronised median step time), each
# pair once without and once under `cudoctor run`, the order alternating between pairs so drift
# (clocks, caches) falls on both sides. Reports each pair's ratio and their median, beside the
# unpaired medians run_observer.sh reports (whose run-to-run spread was wider than the target).
# Usage: OUT=DIR [PAIRS=11] [STEPS=300] scripts/device/observer_overhead.sh [cudoctor] [python]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(readlink -f "${1:-.whl/cudoctor}")
py=${2:-/opt/torch/.venv/bin/python3}
pairs=${PAIRS:-11}
steps=${STEPS:-300}
out=${OUT:?OUT must name a directory}; mkdir -p "$out"
work=$(mktemp -d /tmp/cudoctor-overhead.XXXXXX)
model="$here/run_observer_gpt.py"
plain() { timeout 120 "$py" "$model" --dtype bf16 --steps "$steps" --timing "$work/plain$1.t" >>"$work/log" 2>&1; }
observed() { timeout 120 "$bin" run --out "$work/run$1.json" -- "$py" "$model" --dtype bf16 --steps "$steps" --timing "$work/observed$1.t" >>"$work/log" 2>&1; }
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) = 1 ]; then plain "$i"; observed "$i"; else observed "$i"; plain "$i"; fi
done
"$py" - "$work" "$pairs" "$steps" >"$out/observer_overhead_paired.txt" 2>&1 <<'PY'
import json, os, sys
work, pairs, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]
rows = []
for i in range(1, pairs + 1):
    try:
        p = json.load(open(os.path.join(work, "plain%d.t" % i)))["median_ms"]
        o = json.load(open(os.path.join(work, "observed%d.t" % i)))["median_ms"]
    except Exception as e:
        print("pair %d: not measured (%r)" % (i, e))
        continue
    try:
        s = json.load(open(os.path.join(work, "run%d.json" % i)))["summary"]
        own = (s["observer_ms_per_step"], s["observer_share_of_step"] * 100.0)
    except Exception:
        own = None
    rows.append((p, o, (o - p) / p * 100.0, own))
    print("pair %2d (%s first): without %.2f ms, with %.2f ms, %+.2f%%; observer's own time %s" % (
        i, "plain" if i % 2 else "observed", p, o, rows[-1][2], "%.3f ms a step (%.2f%%)" % own if own else "not reported"))
if rows:
    print("pairs: %d of %d, %d steps each" % (len(rows), pairs, steps))
    print("median of the pairs' overheads: %+.2f%%" % med([r[2] for r in rows]))
    print("unpaired: median without %.2f ms, with %.2f ms, %+.2f%%" % (
        med([r[0] for r in rows]), med([r[1] for r in rows]),
        (med([r[1] for r in rows]) - med([r[0] for r in rows])) / med([r[0] for r in rows]) * 100.0))
    owns = [r[3][1] for r in rows if r[3]]
    if owns:
        print("the observer's own time, timed inside each observed process: median %.2f%% of the step, max %.2f%% (target <= 5%%: %s)" % (
            med(owns), max(owns), "PASS" if med(owns) <= 5.0 else "FAIL"))
PY
cat "$out/observer_overhead_paired.txt"
