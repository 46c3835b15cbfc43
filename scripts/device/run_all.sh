#!/usr/bin/env bash
# One batch of verification on a GPU machine: cudoctor's reports there, the benchmarks against
# collect_env and cuobjdump, the loader against ldd, real error logs through explain, and (when
# the binary has it) the deep probes. Everything lands in $OUT/results.tar.gz.
# Usage: OUT=DIR scripts/device/run_all.sh PATH/TO/cudoctor [steps...]
# Steps: info check bench kernels libs explain deep (default: all).
set -uo pipefail
bin=$(readlink -f "${1:?cudoctor binary}"); shift
steps=${*:-info check bench kernels libs explain deep}
here=$(cd "$(dirname "$0")" && pwd)
res=/tmp/cudoctor-results; rm -rf "$res"; mkdir -p "$res"
py=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
prefix=$("$py" -c 'import sys; print(sys.prefix)')
has() { [[ " $steps " == *" $1 "* ]]; }
step() { echo "== $1 ($(date +%T))"; }

if has info; then step info
  { date -u; uname -a; nproc; free -g | head -2; nvidia-smi; nvidia-smi topo -m; "$py" -V; echo "prefix $prefix"
    "$py" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'; env | grep -E '^(CUDA|NCCL|NVIDIA|LD_LIBRARY|PATH|TORCH)' | sort; } >"$res/info.txt" 2>&1
fi
if has check; then step check
  for f in text json markdown; do
    /usr/bin/time -v "$bin" check --python "$py" --format $f >"$res/check.$f" 2>"$res/check.$f.time"; echo "exit $?" >>"$res/check.$f.time"
  done
  "$bin" check --python "$py" --save "$res/snapshot.json" >/dev/null 2>&1
  "$bin" kernels --python "$py" >"$res/kernels.txt" 2>&1
  "$bin" libs --python "$py" >"$res/libs.txt" 2>&1
  "$bin" plan >"$res/plan.txt" 2>&1
  "$bin" plan --format json >"$res/plan.json" 2>&1
fi
if has bench; then step bench
  timeout 300 "$here/bench_check.sh" "$bin" "$py" 7 >"$res/bench_check.txt" 2>&1
fi
if has kernels; then step kernels
  OUT="$res/kernels" timeout 400 "$here/kernels_bench.sh" "$bin" "$prefix" >"$res/kernels_bench.log" 2>&1
fi
if has libs; then step libs
  OUT="$res/libs" timeout 200 "$here/libs_vs_ldd.sh" "$bin" "$py" >"$res/libs_vs_ldd.log" 2>&1
fi
if has explain; then step explain
  OUT="$res" PYTHON="$py" timeout 300 bash "$here/explain_real_errors.sh" >"$res/explain_gen.log" 2>&1
  for f in "$res"/explain/*.log; do
    [ -f "$f" ] && "$bin" explain --format json "$f" >"${f%.log}.explain.json" 2>&1
  done
fi
if has deep && [ -x "$here/deep.sh" ]; then step deep
  OUT="$res/deep" timeout 400 "$here/deep.sh" "$bin" >"$res/deep.log" 2>&1
fi
step done
tar czf "$OUT/results.tar.gz" -C /tmp cudoctor-results
ls -la "$res"
