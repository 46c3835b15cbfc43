#!/usr/bin/env bash
# Throughput of `cudoctor explain` on a real log, side by side with `grep -c` on the same file
# in the same run, plus explain's peak memory.
#
#   scripts/bench/explain_throughput.sh [LOG] [SIZE_MB]
#
# Without LOG, a log of SIZE_MB (default 200) is made by repeating the real logs and captured
# outputs stored in this repository (docs/device-runs: training, NCCL and probe logs, nvidia-smi,
# ldd, collect_env). Each tool runs three times; the median wall time counts. The binary is
# target/release/cudoctor (built if missing). Prints one line per tool and the machine.
set -euo pipefail
cd "$(dirname "$0")/../.."

log="${1:-}"
size_mb="${2:-200}"
bin="target/release/cudoctor"
[ -x "$bin" ] || cargo build --release -p cudoctor >&2

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ -z "$log" ]; then
  seed="$work/seed.log"
  find docs/device-runs -type f \( -name '*.log' -o -name '*.txt' -o -name '*.text' -o -name '*.out' \) -print0 \
    | sort -z | xargs -0 cat > "$seed"
  [ -s "$seed" ] || { echo "no real logs under docs/device-runs" >&2; exit 2; }
  log="$work/real.log"
  target=$((size_mb * 1024 * 1024))
  : > "$log"
  while [ "$(stat -c %s "$log")" -lt "$target" ]; do cat "$seed" "$seed" "$seed" "$seed" >> "$log"; done
fi
bytes="$(stat -c %s "$log")"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Wall seconds of one run of "$@" (output discarded).
wall() {
  local s e
  s="$(date +%s.%N)"
  "$@" > /dev/null || true  # explain exits 1 when it names a cause, grep -c when it counts 0
  e="$(date +%s.%N)"
  awk -v s="$s" -v e="$e" 'BEGIN { printf "%.6f\n", e - s }'
}
run3() { for _ in 1 2 3; do wall "$@"; done | median; }

t_explain="$(run3 "$bin" explain --no-machine --format json "$log")"
t_grep="$(run3 grep -c -i error "$log")"
t_grepf="$(run3 grep -c -F -i 'cuda error' "$log")"
rss_kib="n/a"
if command -v /usr/bin/time > /dev/null; then
  rss_kib="$({ /usr/bin/time -f '%M' "$bin" explain --no-machine --format json "$log" > /dev/null || true; } 2>&1 | tail -1)"
fi
"$bin" explain --no-machine --format json "$log" > "$work/explain.json" || true
stats="$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stats"]; print(s["lines"], s["candidate_lines"])' "$work/explain.json")"

mbps() { awk -v b="$bytes" -v t="$1" 'BEGIN { printf "%.1f\n", b / 1048576 / t }'; }
printf 'log: %s (%d MB, lines and prefilter candidates: %s)\n' "${1:-repeated docs/device-runs logs}" $((bytes / 1048576)) "$stats"
printf '%-34s %8.3f s %8s MB/s  peak RSS %s KiB\n' "cudoctor explain" "$t_explain" "$(mbps "$t_explain")" "$rss_kib"
printf '%-34s %8.3f s %8s MB/s\n' "grep -c -i error" "$t_grep" "$(mbps "$t_grep")"
printf '%-34s %8.3f s %8s MB/s\n' "grep -c -F -i 'cuda error'" "$t_grepf" "$(mbps "$t_grepf")"
printf 'machine: %s, %s CPUs, load %s; %s\n' "$(uname -m)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$("$bin" --version 2>/dev/null || echo cudoctor)"
