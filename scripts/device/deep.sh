#!/usr/bin/env bash
# Verifies `cudoctor check --deep` on a GPU machine, three ways, and keeps the reports in $OUT:
#   baseline  the machine as it is: JSON, text, HTML (and a PNG of the HTML when a headless
#             browser exists; otherwise render it where cudoctor is developed)
#   fallback  CUDOCTOR_PROBE_DISABLE_FUSED=1: the probe switches the fused attention backends off
#             before measuring the default dispatch, so ACC001 must fire
#   p2p       NCCL_P2P_DISABLE=1: NCCL avoids NVLink/PCIe peer-to-peer; MGPU002 must fire on
#             NVLink machines, and MGPU001 where the bandwidth falls below the link's floor
# At most 8 files land in $OUT. Takes about 3-5 minutes (three probe runs; the second and third
# skip the stages they do not test).
# Usage: OUT=DIR scripts/device/deep.sh PATH/TO/cudoctor [PYTHON]
set -uo pipefail
bin=$(readlink -f "${1:?usage: OUT=DIR deep.sh PATH/TO/cudoctor [PYTHON]}")
OUT=${OUT:?set OUT to the output directory}
mkdir -p "$OUT"

py=${2:-}
if [ -z "$py" ]; then
  for c in /opt/torch/.venv/bin/python3 $(command -v -a python3 python 2>/dev/null); do
    if [ -x "$c" ] && timeout 60 "$c" -c 'import torch' >/dev/null 2>&1; then py=$c; break; fi
  done
fi
if [ -z "$py" ]; then
  py=$(command -v python3)
  echo "warning: no interpreter with torch found; probing $py (expect 'no torch')"
fi
echo "python: $py"
nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not available"

# probe NAME [VAR=VALUE...]: one --deep run, saved as JSON; the text report is rendered from it.
probe() {
  local name=$1; shift
  echo "== $name ($(date +%T))"
  local t0=$SECONDS
  env "$@" timeout 200 "$bin" check --deep --python "$py" --format json >"$OUT/$name.json"
  echo "exit status $? after $((SECONDS - t0)) s"
  "$bin" check --snapshot "$OUT/$name.json" --format text >"$OUT/$name.txt" 2>&1
}

probe baseline
"$bin" check --snapshot "$OUT/baseline.json" --format html >"$OUT/baseline.html" 2>&1
probe fallback CUDOCTOR_PROBE_DISABLE_FUSED=1 CUDOCTOR_PROBE_SKIP=all-reduce,compile,extensions
probe p2p NCCL_P2P_DISABLE=1 CUDOCTOR_PROBE_SKIP=sdpa,compile,extensions

# Render the HTML report to a picture where a headless browser is installed.
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    timeout 60 "$b" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1150,3000 \
      --screenshot="$OUT/baseline.png" "file://$OUT/baseline.html" >/dev/null 2>&1 && break
  fi
done
if [ ! -f "$OUT/baseline.png" ] && command -v wkhtmltoimage >/dev/null 2>&1; then
  timeout 60 wkhtmltoimage --width 1150 "$OUT/baseline.html" "$OUT/baseline.png" >/dev/null 2>&1
fi
[ -f "$OUT/baseline.png" ] || echo "no headless browser here: render baseline.html elsewhere"

# What each run must show.
expect() {
  if grep -q "$2" "$OUT/$1"; then echo "PASS $1: $3"; else echo "FAIL $1: $3 (no $2 in $1)"; fi
}
expect baseline.json '"picked"' "the probe named the backend the default dispatch ran"
expect fallback.txt "ACC001" "the forced math fallback is caught"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${gpus:-0}" -ge 2 ]; then
  expect baseline.json '"busbw_gbps"' "the all-reduce ran across $gpus GPUs"
  if nvidia-smi topo -m 2>/dev/null | grep -q 'NV[0-9]'; then
    expect p2p.txt "MGPU002" "P2P switched off on NVLink GPUs is caught"
  fi
fi
ls -la "$OUT"
