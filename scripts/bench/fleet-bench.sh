#!/usr/bin/env bash
# The fleet report over 1,000 snapshots made by perturbing the real ones of docs/device-runs
# (scripts/bench/perturb-snapshots.py), timed side by side with a previous cudoctor when one is
# given: wall time (median of 5) and peak memory (max RSS), at 250 and 1,000 nodes so memory
# growth per node shows. Target: 1,000 nodes in under 2 s.
#
#   scripts/bench/fleet-bench.sh NEW_BINARY [OLD_BINARY]      (results as Markdown on stdout)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
new="${1:?usage: fleet-bench.sh NEW_BINARY [OLD_BINARY]}"
old="${2:-}"
# In memory where possible: 1,000 snapshots are about 100 MiB, and disk caches are not the subject.
work="$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)"
trap 'rm -rf "$work"' EXIT

mix="$(python3 "$root/scripts/bench/perturb-snapshots.py" "$work/fleet" 1000)"
mkdir -p "$work/fleet250"
for f in $(ls "$work/fleet" | head -n 250); do ln -s "$work/fleet/$f" "$work/fleet250/$f"; done
bytes="$(du -sbL "$work/fleet" | cut -f1)"

# Of 5 runs: median wall seconds, median CPU seconds (user + system), max RSS in MiB.
measure() {
  local runs=() cpus=()
  local rss=0
  for _ in 1 2 3 4 5; do
    /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || [ $? = 1 ] ||
      { echo "failed: $* $(cat "$work/err")" >&2; exit 1; }
    # GNU time puts "Command exited with non-zero status 1" first when the report found problems.
    read -r s k u y < <(tail -n 1 "$work/time")
    runs+=("$s")
    cpus+=("$(awk -v u="$u" -v y="$y" 'BEGIN {printf "%.2f", u + y}')")
    [ "$k" -gt "$rss" ] && rss="$k"
  done
  printf '%s %s %s\n' "$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 3p)" \
    "$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n 3p)" "$((rss / 1024))"
}

echo "### fleet report benchmark"
echo
echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))," \
  "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg) at start."
echo "Input: 1,000 snapshots, $((bytes / 1048576)) MiB of JSON, perturbed from the real H200 snapshots: $mix."
echo
echo "| binary | nodes | format | wall (median of 5) | CPU user+sys (median) | max RSS |"
echo "|---|---|---|---|---|---|"
row() {
  local label="$1" nodes="$2" format="$3"; shift 3
  read -r s c m < <(measure "$@")
  echo "| $label | $nodes | $format | $s s | $c s | $m MiB |"
  echo "$s" >"$work/last"
}
row new 250 text "$new" fleet "$work"/fleet250/*.json
row new 1000 text "$new" fleet "$work"/fleet/*.json
new_s="$(cat "$work/last")"
row new 1000 json "$new" fleet --format json "$work"/fleet/*.json
if [ -n "$old" ]; then
  row previous 250 text "$old" fleet "$work"/fleet250/*.json
  row previous 1000 text "$old" fleet "$work"/fleet/*.json
fi
echo
"$new" fleet "$work"/fleet/*.json >"$work/report.txt" || true
echo "First lines of the new report:"
echo
echo '```'
head -n 24 "$work/report.txt"
echo '```'
if awk -v s="$new_s" 'BEGIN {exit !(s < 2.0)}'; then
  echo
  echo "Target met: 1,000 nodes in $new_s s (< 2 s)."
else
  echo
  echo "Target NOT met: 1,000 nodes in $new_s s (>= 2 s)."
fi
