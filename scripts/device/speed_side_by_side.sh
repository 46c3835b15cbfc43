#!/usr/bin/env bash
# Two or more cudoctor builds side by side on a GPU machine (issue 21): the scaling benchmark
# with every binary in one run, interleaved plain `check` runs of each (wall, CPU, max RSS), the
# per-probe timings of each, and where the time goes in the last binary (perf, when the machine
# has it). Everything lands in $OUT.
# Usage: OUT=DIR scripts/device/speed_side_by_side.sh ENV_PREFIX BIN...
set -uo pipefail
env=${1:?env prefix}
shift
out=${OUT:?OUT must name the results directory}
here=$(cd "$(dirname "$0")" && pwd)
py="$env/bin/python3"
mkdir -p "$out"
{
  date -u; uname -r; echo "cores: $(nproc)"; uptime
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
  "$py" -V
  for b in "$@"; do echo "$b: $("$b" --version)"; done
} >"$out/info.txt" 2>&1
cat "$out/info.txt"

echo "== interleaved plain checks ($(date +%T))"
"$py" - "$py" "$@" >"$out/interleaved.md" 2>&1 <<'PY'
import os, subprocess, sys, time, statistics
py, bins = sys.argv[1], sys.argv[2:]
res = {b: ([], [], []) for b in bins}
for _ in range(15):
    for b in bins:
        t = time.perf_counter()
        c = subprocess.Popen([b, "check", "--python", py], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, u = os.wait4(c.pid, 0)
        res[b][0].append((time.perf_counter() - t) * 1000)
        res[b][1].append((u.ru_utime + u.ru_stime) * 1000)
        res[b][2].append(u.ru_maxrss / 1024)
print("| binary | wall median | wall min | CPU median | max RSS median |")
print("|---|---|---|---|---|")
for b in bins:
    w, c, r = res[b]
    print(f"| {os.path.basename(b)} | {statistics.median(w):.1f} ms | {min(w):.1f} ms | {statistics.median(c):.1f} ms | {statistics.median(r):.1f} MiB |")
PY
cat "$out/interleaved.md"

for b in "$@"; do
  name=$(basename "$b")
  for i in 1 2 3; do
    CUDOCTOR_TIMINGS=1 "$b" check --python "$py" >/dev/null 2>>"$out/timings-$name.txt"
    echo >>"$out/timings-$name.txt"
  done
done
tail -n 14 "$out"/timings-*.txt

echo "== scaling ($(date +%T))"
work=$(dirname "$env")
[ -w "$work" ] || work="$env"
timeout 400 "$py" "$here/../bench/check_scaling.py" --env "$env" --work "$work" --runs 3 "$@" \
  >"$out/scaling.md" 2>"$out/scaling.err"
echo "exit $?" >>"$out/scaling.err"
cat "$out/scaling.md" "$out/scaling.err"

last="${!#}"
if command -v perf >/dev/null; then
  echo "== perf of $(basename "$last") ($(date +%T))"
  perf record -F 10000 -g -o "$out/perf.data" -- "$last" check --python "$py" >/dev/null 2>"$out/perf.err"
  perf report -i "$out/perf.data" --no-children --sort symbol -g none 2>/dev/null | grep '%' | head -60 >"$out/perf-self.txt"
  perf report -i "$out/perf.data" --children --sort symbol -g none 2>/dev/null | grep '%' | head -80 >"$out/perf-children.txt"
  rm -f "$out/perf.data"
  cut -c1-140 "$out/perf-self.txt" | head -30
else
  echo "no perf on this machine" | tee "$out/perf-self.txt"
fi
