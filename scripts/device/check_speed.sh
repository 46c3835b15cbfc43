#!/usr/bin/env bash
# The speed of `cudoctor check` on a GPU machine (issue 21): the check benchmark against
# collect_env (bench_check.sh, as batch.sh's bench step), the per-probe timings
# (CUDOCTOR_TIMINGS), and how check grows with the environments (scripts/bench/check_scaling.py:
# the env hard-linked into 1, 5 and 20 environments and one with 100 extension packages).
# Runs in the repository root. Everything lands in $OUT (check_speed.txt, timings.txt,
# scaling.md).
# Usage: OUT=DIR scripts/device/check_speed.sh [CUDOCTOR_BINARY] [ENV_PREFIX]
set -uo pipefail
bin=$(readlink -f "${1:-target/release/cudoctor}")
env=${2:-/opt/torch/.venv}
out=${OUT:?OUT must name the results directory}
here=$(cd "$(dirname "$0")" && pwd)
py="$env/bin/python3"
[ -x "$bin" ] || { echo "no cudoctor binary at $bin" >&2; exit 2; }
[ -x "$py" ] || { echo "no python at $py" >&2; exit 2; }
mkdir -p "$out"
{
  date -u; uname -r; echo "cores: $(nproc)"; uptime
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
  "$py" -V; "$bin" --version
} >"$out/info.txt" 2>&1

echo "== bench ($(date +%T))"
timeout 300 "$here/bench_check.sh" "$bin" "$py" 11 >"$out/check_speed.txt" 2>&1
cat "$out/check_speed.txt"

echo "== timings ($(date +%T))"
for i in 1 2 3 4 5; do
  CUDOCTOR_TIMINGS=1 "$bin" check --python "$py" >/dev/null 2>>"$out/timings.txt"
  echo >>"$out/timings.txt"
done
tail -n 14 "$out/timings.txt"

echo "== scaling ($(date +%T))"
# Hard links need the work directory on the env's file system: beside the env, else under it.
work=$(dirname "$env")
[ -w "$work" ] || work="$env"
# The env's own python, so the extensions' ABI tag is the env's.
timeout 500 "$py" "$here/../bench/check_scaling.py" --env "$env" --work "$work" --runs 5 "$bin" \
  >"$out/scaling.md" 2>"$out/scaling.err"
echo "exit $?" >>"$out/scaling.err"
cat "$out/scaling.md" "$out/scaling.err"
