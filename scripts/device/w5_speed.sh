#!/usr/bin/env bash
# Issue 42 (wave 5) in one device call of about 5-6 minutes, both builds side by side:
#  1. check as typed: scripts/device/check_floor.sh (medians, collect_env and nvidia-smi ratios,
#     each timing span's median, including the parts of an environment's reading; same facts);
#  2. the clock the observer reads (its clocksource and what one perf_counter_ns costs in
#     Python): the observer's own time is read from it;
#  3. the observer, paired: scripts/device/observer_paired.sh (plain, before, after rotated;
#     the step difference's 95% interval, the observer's own time per step by site).
# Usage: OUT=DIR [ROUNDS=10] scripts/device/w5_speed.sh [AFTER] [BEFORE] [PYTHON]
#   defaults: .whl/cudoctor, .whl/cudoctor-before, /opt/torch/.venv/bin/python
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
after=$(readlink -f "${1:-.whl/cudoctor}")
before=$(readlink -f "${2:-.whl/cudoctor-before}")
py=${3:-/opt/torch/.venv/bin/python}
out=${OUT:-/tmp/w5_speed}; mkdir -p "$out"
SECONDS=0
echo "== 1. check as typed"
OUT=$out/check timeout 300 "$here/check_floor.sh" "$after" "$before" "$py" 2>&1 | tee "$out/check.txt"
echo
echo "== 2. the clock"
cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>&1
"$py" -c '
import time, timeit
n = 200000
for name, f in (("perf_counter_ns", time.perf_counter_ns), ("perf_counter", time.perf_counter)):
    print("%s: %.0f ns per call (best of 5)" % (name, min(timeit.repeat(f, number=n, repeat=5)) / n * 1e9))
' 2>&1 | tee "$out/clock.txt"
echo
left=$((560 - SECONDS))
echo "== 3. the observer, paired ($left s left)"
if [ $left -gt 120 ]; then
  OUT=$out/observer ROUNDS=${ROUNDS:-10} timeout $((left - 10)) "$here/observer_paired.sh" "$after" "$before" "$py" >"$out/observer.txt" 2>&1
  echo "observer rc $?"; tail -30 "$out/observer/observer_paired.txt" 2>/dev/null || tail -30 "$out/observer.txt"
fi
echo "total ${SECONDS} s"
