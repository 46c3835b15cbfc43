#!/usr/bin/env bash
# Times `cudoctor check` against `python -m torch.utils.collect_env` side by side on the same
# machine, interleaved, and reports the medians and their ratio.
# Usage: bench_check.sh CUDOCTOR_BINARY [PYTHON] [RUNS]
set -uo pipefail
bin=${1:?cudoctor binary}
py=${2:-$(command -v python3)}
runs=${3:-7}

now_ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

tc=(); tp=()
# One untimed run each so both start with warm file caches.
"$bin" check --python "$py" --format json >/dev/null 2>&1
"$py" -m torch.utils.collect_env >/dev/null 2>&1
for i in $(seq "$runs"); do
  t0=$(now_ns); "$bin" check --python "$py" >/dev/null 2>&1; t1=$(now_ns)
  tc+=($(( (t1 - t0) / 1000 )))
  t0=$(now_ns); "$py" -m torch.utils.collect_env >/dev/null 2>&1; t1=$(now_ns)
  tp+=($(( (t1 - t0) / 1000 )))
done
mc=$(printf '%s\n' "${tc[@]}" | median)
mp=$(printf '%s\n' "${tp[@]}" | median)
echo "machine: $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
echo "python: $py"
echo "runs: $runs each, interleaved"
echo "cudoctor check (static):            median $(awk -v v="$mc" 'BEGIN{printf "%.1f", v/1000}') ms  (all: ${tc[*]} us)"
echo "python -m torch.utils.collect_env:  median $(awk -v v="$mp" 'BEGIN{printf "%.1f", v/1000}') ms  (all: ${tp[*]} us)"
echo "ratio collect_env / cudoctor: $(awk -v a="$mp" -v b="$mc" 'BEGIN{printf "%.1f", a/b}')x (target: >= 50x)"
