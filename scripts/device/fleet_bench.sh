#!/usr/bin/env bash
# The fleet benchmark (scripts/bench/fleet-bench.sh) on the GPU machine, plus a real fleet of
# that machine: its own snapshot judged beside 999 perturbed copies, and `fleet node` frames
# read back with `fleet collect --from-log` (no Slurm there). Results in $OUT/fleet/.
# Usage: OUT=DIR scripts/device/fleet_bench.sh PATH/TO/cudoctor
set -uo pipefail
bin=$(readlink -f "${1:?cudoctor binary}")
here=$(cd "$(dirname "$0")" && pwd)
res="${OUT:?}/fleet"; mkdir -p "$res"
py=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
timeout 300 "$here/../bench/fleet-bench.sh" "$bin" >"$res/bench.md" 2>"$res/bench.err"
echo "exit $?" >>"$res/bench.err"
# This machine's own snapshot as the seed of a 1,000-node fleet.
"$bin" check --python "$py" --save "$res/self.json" >/dev/null 2>&1
work=$(mktemp -d)
python3 "$here/../bench/perturb-snapshots.py" "$work/fleet" 1000 "$res/self.json" >"$res/self-mix.json"
/usr/bin/time -v "$bin" fleet "$work"/fleet/*.json >"$res/self-fleet.txt" 2>"$res/self-fleet.time"
"$bin" fleet node --python "$py" >"$res/node.frames" 2>"$res/node.err"
"$bin" fleet collect --from-log "$res/node.frames" --format json >"$res/from-log.json" 2>>"$res/node.err"
"$bin" check --format prometheus --python "$py" >"$res/check.prom" 2>"$res/check.prom.err"
rm -rf "$work"
