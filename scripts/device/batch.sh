#!/usr/bin/env bash
# The whole verification batch on a GPU machine in one call: check in both loader settings, the
# check benchmark, libraries by stage against /proc/self/maps, the run observer, frameworks,
# the seeds' checks, explain on check's judges, and what torch says when SDPA refuses inputs.
# Everything lands in $OUT/batch.tar.gz (one file: the device tool brings few files back).
# Usage: OUT=DIR scripts/device/batch.sh PATH/TO/cudoctor [steps...]
# Steps: check bench staged observer frameworks seeds judges sdpa (default: all).
set -uo pipefail
bin=$(readlink -f "${1:?cudoctor binary}"); shift
steps=${*:-check bench staged observer frameworks seeds judges sdpa}
here=$(cd "$(dirname "$0")" && pwd)
py=/opt/torch/.venv/bin/python3
[ -x "$py" ] || py=$(command -v python3)
res=/tmp/cudoctor-batch; rm -rf "$res"; mkdir -p "$res"
has() { [[ " $steps " == *" $1 "* ]]; }
step() { echo "== $1 ($(date +%T))" | tee -a "$res/steps.log"; }
{ date -u; uname -a; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv; "$py" -V; } >"$res/info.txt" 2>&1
if has check; then step check
  "$bin" check --python "$py" >"$res/check.text" 2>&1; echo "exit $?" >>"$res/check.text"
  "$bin" check --python "$py" --format json >"$res/check.json" 2>"$res/check.json.err"
  LD_LIBRARY_PATH=/usr/local/cuda/lib64:/lib/x86_64-linux-gnu "$bin" check --python "$py" >"$res/check.llp.text" 2>&1
  "$bin" libs --python "$py" >"$res/libs.txt" 2>&1
fi
if has bench; then step bench
  timeout 300 "$here/bench_check.sh" "$bin" "$py" 7 >"$res/bench_check.txt" 2>&1
  for i in 1 2 3; do CUDOCTOR_TIMINGS=1 "$bin" check --python "$py" >/dev/null 2>>"$res/timings.txt"; echo >>"$res/timings.txt"; done
fi
if has staged; then step staged
  OUT="$res/staged" timeout 400 bash "$here/staged_maps.sh" "$bin" "$py" >"$res/staged_maps.txt" 2>&1
fi
if has observer; then step observer
  OUT="$res/observer" timeout 420 bash "$here/run_observer.sh" "$bin" "$py" >"$res/observer.log" 2>&1
  cp "$res/observer/expect.txt" "$res/run_observer_expect.txt" 2>/dev/null
fi
if has frameworks; then step frameworks
  OUT="$res/frameworks" timeout 300 bash "$here/frameworks_check.sh" "$bin" "$py" >"$res/frameworks.log" 2>&1
fi
if has seeds; then step seeds
  OUT="$res/seeds" CUDOCTOR="$bin" PY="$py" timeout 400 bash "$here/seeds_check.sh" >"$res/seeds.log" 2>&1
fi
if has judges; then step judges
  OUT="$res" PYTHON="$py" CUDOCTOR="$bin" timeout 300 bash "$here/explain_same_judges.sh" >"$res/judges.log" 2>&1
fi
if has sdpa; then step sdpa
  timeout 120 "$py" "$here/sdpa_reasons_probe.py" >"$res/sdpa_reasons.json" 2>&1
fi
step done
mkdir -p "$OUT"; tar czf "$OUT/batch.tar.gz" -C /tmp cudoctor-batch
