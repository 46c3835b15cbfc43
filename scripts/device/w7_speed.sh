#!/usr/bin/env bash
# Issue 42 (wave 7) in one device call of about 6-8 minutes, both builds side by side:
#  1. check as typed: scripts/device/check_floor.sh (medians beside collect_env and nvidia-smi,
#     the ratios and targets; each timing span's median start, end and length, the parts of an
#     environment's reading included; the same facts from both builds);
#  2. check as typed again, the builds interleaved by scripts/bench/check_as_typed.py: wall, CPU
#     and the end of the last timing span (the collection without the process's start and exit),
#     and where the critical path's spans start and end (the loader should now start when the
#     environment's packages are read, not when the whole reading ends);
#  3. the clock the observer reads (clocksource, one perf_counter_ns in Python);
#  4. the observer, paired: scripts/device/observer_paired.sh (plain, before, after rotated; the
#     step difference's 95% interval, the observer's own time per step by site), in what is left
#     of the call's 560 s.
# Usage: OUT=DIR [ROUNDS=10] scripts/device/w7_speed.sh [AFTER] [BEFORE] [PYTHON]
#   defaults: .whl/cudoctor, .whl/cudoctor-before, /opt/torch/.venv/bin/python
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
after=$(readlink -f "${1:-.whl/cudoctor}")
before=$(readlink -f "${2:-.whl/cudoctor-before}")
py=${3:-/opt/torch/.venv/bin/python}
out=${OUT:-/tmp/w7_speed}; mkdir -p "$out"
SECONDS=0
echo "== 1. check as typed (check_floor.sh)"
OUT=$out/check timeout 240 "$here/check_floor.sh" "$after" "$before" "$py" 2>&1 | tee "$out/check.txt"
echo
echo "== 2. check as typed, interleaved, with the end of the last span (check_as_typed.py)"
(cd /tmp && timeout 120 python3 "$here/../bench/check_as_typed.py" --rounds 31 "$before" "$after") 2>&1 | tee "$out/as_typed.txt"
echo
echo "== 3. the clock"
cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>&1
"$py" -c '
import time, timeit
n = 200000
for name, f in (("perf_counter_ns", time.perf_counter_ns), ("perf_counter", time.perf_counter)):
    print("%s: %.0f ns per call (best of 5)" % (name, min(timeit.repeat(f, number=n, repeat=5)) / n * 1e9))
' 2>&1 | tee "$out/clock.txt"
echo
left=$((${BUDGET:-560} - SECONDS))
echo "== 4. the observer, paired ($left s left)"
if [ $left -gt 120 ]; then
  OUT=$out/observer ROUNDS=${ROUNDS:-10} timeout $((left - 10)) "$here/observer_paired.sh" "$after" "$before" "$py" >"$out/observer.txt" 2>&1
  echo "observer rc $?"; tail -30 "$out/observer/observer_paired.txt" 2>/dev/null || tail -30 "$out/observer.txt"
fi
echo "total ${SECONDS} s"
