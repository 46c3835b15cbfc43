#!/usr/bin/env bash
# What torch's extension cache of 20 JIT builds costs `cudoctor check` on the GPU machine
# (issue 36: at most 5 ms; the evening run of 2026-12-04 measured +7.5 ms), and where it goes:
# scripts/bench/extension_cache.py in four layouts, each with the median of every phase of
# check (CUDOCTOR_TIMINGS) with and without the cache, side by side:
#   sm_80 builds in a foreign folder (py311_cu132: no environment loads them; on an sm_90 GPU
#     each is a finding), as the evening run had them;
#   sm_80 builds in the folder of the environment's own Python and torch (it loads them: they
#     are also judged with its libraries);
#   sm_90 builds in both folders (the GPU runs them: no finding), which tells the scan and
#     emulation of 20 more libraries from the judging and rendering of 20 more findings.
# Each table has the median wall and CPU time (user + system) of check; with COMPARE=OLD_BINARY
# (a build before a change) that binary is timed in the same interleaved runs, side by side.
# Usage: OUT=DIR [COMPARE=OLD_BINARY] scripts/device/extension_cache.sh [CUDOCTOR_BINARY] [ENV_PREFIX] [NVCC]
# Prints the tables; everything also lands in $OUT/extension_cache.md.
set -uo pipefail
bin=$(readlink -f "${1:-target/release/cudoctor}")
env=${2:-/opt/torch/.venv}
nvcc=${3:-/usr/local/cuda/bin/nvcc}
out=${OUT:?OUT must name the results directory}
here=$(cd "$(dirname "$0")" && pwd)
py="$env/bin/python3"
compare=()
if [ -n "${COMPARE:-}" ]; then
  [ -x "$COMPARE" ] || { echo "no cudoctor binary at COMPARE=$COMPARE" >&2; exit 2; }
  compare=(--compare "$(readlink -f "$COMPARE")")
fi
[ -x "$bin" ] || { echo "no cudoctor binary at $bin" >&2; exit 2; }
[ -x "$py" ] || { echo "no python at $py" >&2; exit 2; }
[ -x "$nvcc" ] || { echo "no nvcc at $nvcc" >&2; exit 2; }
mkdir -p "$out"
{
  date -u; uname -r; echo "cores: $(nproc)"; uptime
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1
  "$bin" --version; [ -n "${COMPARE:-}" ] && "$COMPARE" --version; "$nvcc" --version | tail -1
} | tee "$out/extension_cache.md"
for gencode in compute_80,sm_80 compute_90,sm_90; do
  for tag in py311_cu132 env; do
    echo "== $gencode, folder $tag ($(date +%T))" | tee -a "$out/extension_cache.md"
    timeout 280 python3 "$here/../bench/extension_cache.py" --nvcc "$nvcc" --gencode "$gencode" \
      --tag "$tag" --count 20 --runs 21 --timings --python "$py" "${compare[@]}" "$bin" 2>&1 |
      tee -a "$out/extension_cache.md"
  done
done
