#!/usr/bin/env bash
# On the GPU machine: explain's throughput and peak memory on a 1 GB log made of the repository's
# real logs, side by side with grep on the same file (scripts/bench/explain_throughput.sh).
# Output: $OUT/explain_throughput.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp}"
scripts/bench/explain_throughput.sh "" 1024 | tee "$out/explain_throughput.txt"
