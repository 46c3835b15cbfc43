#!/usr/bin/env bash
# explain's throughput on the GPU machine, two builds side by side (fifth session, 2026-12-05):
# a 200 MB ordinary training log (scripts/bench/training_log.py: step lines, metric dicts, tqdm
# bars) and a 200 MB NCCL_DEBUG=INFO log (scripts/bench/nccl_info_log.py), each build run five
# times, alternated, CPU (user) time and peak memory read from the kernel's accounting of the
# child; the answers of both builds compared; then `check` of the new build on the machine.
# Usage: OUT=DIR scripts/device/w9_explain_speed.sh [AFTER] [BEFORE]
#   defaults: .whl/cudoctor, .whl/cudoctor-before
set -uo pipefail
cd "$(dirname "$0")/../.."
after=$(readlink -f "${1:-.whl/cudoctor}")
before=$(readlink -f "${2:-.whl/cudoctor-before}")
out=${OUT:-/tmp/w9}; mkdir -p "$out"
SECONDS=0
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
{
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "after: $("$after" --version 2>&1 | head -1)"
  echo "before: $("$before" --version 2>&1 | head -1)"
} | tee "$out/machine.txt"
python3 scripts/bench/training_log.py "$logs/train.log" 200 >/dev/null
python3 scripts/bench/nccl_info_log.py "$logs/nccl.log" 200 >/dev/null
ls -l "$logs" | tee -a "$out/machine.txt"
python3 - "$after" "$before" "$logs/train.log" "$logs/nccl.log" <<'PY' 2>&1 | tee "$out/speed.txt"
import os, resource, subprocess, sys, json, statistics
after, before, *logs = sys.argv[1:]
def run(binary, log):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([binary, "explain", "--no-machine", "--format", "json", log],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    answer = json.loads(p.stdout)
    answer.pop("build", None); answer.pop("stats", None)
    return r1.ru_utime - r0.ru_utime, r1.ru_maxrss, answer
for log in logs:
    mb = os.path.getsize(log) / 2**20
    times = {"after": [], "before": []}
    answers = {}
    for i in range(5):
        for name, b in (("after", after), ("before", before)) if i % 2 == 0 else (("before", before), ("after", after)):
            t, rss, a = run(b, log)
            times[name].append(t)
            answers[name] = a
    for name in ("before", "after"):
        med = statistics.median(times[name])
        print(f"{os.path.basename(log)} ({mb:.0f} MiB) {name}: user {' '.join(f'{t:.2f}' for t in times[name])} s, median {med:.2f} s = {mb/med:.0f} MB/s")
    print(f"{os.path.basename(log)}: same answer: {answers['after'] == answers['before']} ({answers['after'].get('category')})")
print("peak RSS of any child (KiB):", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
echo "== check (after)" | tee "$out/check.txt"
timeout 120 "$after" check 2>&1 | tee -a "$out/check.txt" | tail -15
echo "total ${SECONDS} s"
