#!/usr/bin/env bash
# The merged wave 5 on the GPU machine, beside scripts/device/w5_speed.sh (one call each): the
# healthy H200 with no false finding (check as typed and with --python, check --deep), the same
# facts before and after, explain's throughput on a 200 MB training log before and after, and
# the extension-cache phases (issue 36). Binaries: .whl/cudoctor-before, .whl/cudoctor.
set -u
A=$PWD/.whl/cudoctor-before
B=$PWD/.whl/cudoctor
PY=/opt/torch/.venv/bin/python
ENV=/opt/torch/.venv
o=$OUT
SECONDS=0
{
echo "== machine"; date -u; uptime; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "before: $($A --version)"; echo "after: $($B --version)"
echo "== healthy check, as typed and with --python (after)"
(cd /tmp && timeout 60 $B check > $o/check-typed.txt 2>&1; echo "typed rc $?")
timeout 60 $B check --python $PY > $o/check.txt 2>&1; echo "python rc $?"
timeout 60 $B check --python $PY --format json > $o/check.json 2>/dev/null; echo "json rc $?"
(cd /tmp && timeout 60 $B check --format json > $o/check-typed.json 2>/dev/null; echo "typed json rc $?")
for f in check check-typed; do python3 -c "
import json; r=json.load(open('$o/$f.json'))
print('$f findings:', sorted((f['code'], f['severity']) for f in r.get('findings', [])))"; done
grep -E "^(No problems|Summary|Verdict)" $o/check.txt $o/check-typed.txt | head
echo "== same facts, before and after"
timeout 120 python3 scripts/bench/same_facts.py $A $B $ENV 2>&1 | tail -12
echo "== check --deep (after), wall"
/usr/bin/time -f "deep wall %e s" timeout 120 $B check --deep --python $PY > $o/deep.txt 2>&1; echo "deep rc $?"; tail -3 $o/deep.txt
grep -E "^(Summary|No problems)" $o/deep.txt
} > $o/r.txt 2>&1
cat $o/r.txt
echo "== explain throughput, 200 MB training log, before and after"
python3 scripts/bench/training_log.py /tmp/train.log 200 > /dev/null 2>&1
for b in A B; do bin=$A; [ $b = B ] && bin=$B
  python3 - "$b" "$bin" <<'PY'
import os, resource, subprocess, sys, time
b, binary = sys.argv[1:3]
mb = os.path.getsize("/tmp/train.log") / 1048576
runs = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run([binary, "explain", "--no-machine", "--format", "json", "/tmp/train.log"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    runs.append((after.ru_utime - before.ru_utime, wall))
runs.sort()
u, w = runs[1]
print(f"train {b}: median user {u:.2f} s ({mb / u:.0f} MB/s of CPU), wall {w:.2f} s ({mb / w:.0f} MB/s)")
PY
done
left=$((580 - SECONDS))
echo "== issue 36: extension cache phases ($left s left)"
if [ $left -gt 60 ]; then
  OUT=$o/extcache timeout $left scripts/device/extension_cache.sh $B $ENV /usr/local/cuda/bin/nvcc > $o/extcache.txt 2>&1; echo "extcache rc $?"; tail -40 $o/extcache.txt
fi
echo "total ${SECONDS} s"
