#!/usr/bin/env bash
# One device call (2026-12-04 evening): the merged wave on the healthy H200 (no false finding;
# before/after facts equal), issue 42's check and --deep parts side by side (BEFORE: main at
# 8dbb8a0, the session's start; AFTER: the merged main), the extension-cache benchmark (issue
# 36), explain's throughput on three 200 MB logs. Binaries: .whl/cudoctor-before, .whl/cudoctor.
set -u
A=$PWD/.whl/cudoctor-before
B=$PWD/.whl/cudoctor
PY=/opt/torch/.venv/bin/python
ENV=/opt/torch/.venv
o=$OUT
{
echo "== machine"; date -u; uptime; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "before: $($A --version)"; echo "after: $($B --version)"
echo "== healthy check, as typed and with --python (after)"
(cd /tmp && timeout 60 $B check > $o/check-typed.txt 2>&1; echo "typed rc $?")
timeout 60 $B check --python $PY > $o/check.txt 2>&1; echo "python rc $?"
timeout 60 $B check --python $PY --format json > $o/check.json 2>/dev/null; echo "json rc $?"
python3 -c "
import json; r=json.load(open('$o/check.json'))
print('findings:', sorted((f['code'], f['severity']) for f in r.get('findings', [])))"
grep -E "^(No problems|Verdict|[0-9]+ (error|warning))" $o/check.txt | head
echo "== same facts, before and after"
timeout 120 python3 scripts/bench/same_facts.py $A $B $ENV 2>&1 | tail -20
} > $o/r.txt 2>&1
echo "== issue 42: check"; OUT=$o/speed timeout 180 scripts/device/speed42.sh check $A $B $PY > $o/speed-check.txt 2>&1; tail -25 $o/speed-check.txt
echo "== issue 42: deep"; OUT=$o/speed timeout 100 scripts/device/speed42.sh deep $A $B $PY > $o/speed-deep.txt 2>&1; tail -30 $o/speed-deep.txt
{
echo "== issue 36: a torch extension cache of 20 builds"
timeout 100 python3 scripts/bench/extension_cache.py --nvcc /usr/local/cuda/bin/nvcc --count 20 --runs 15 --python $PY $B 2>&1 | tail -12
echo "== explain throughput, three 200 MB logs, before and after"
python3 scripts/bench/training_log.py /tmp/train.log 200
python3 scripts/bench/nccl_info_log.py /tmp/nccl.log 200
find docs/device-runs -type f \( -name '*.log' -o -name '*.txt' -o -name '*.text' -o -name '*.out' \) -print0 | sort -z | xargs -0 cat > /tmp/seed.log
: > /tmp/real.log; while [ $(stat -c %s /tmp/real.log) -lt 209715200 ]; do cat /tmp/seed.log /tmp/seed.log /tmp/seed.log /tmp/seed.log >> /tmp/real.log; done
for f in train real nccl; do for b in A B; do bin=$A; [ $b = B ] && bin=$B
  python3 - "$f" "$b" "$bin" <<'PY'
import os, resource, subprocess, sys, time
f, b, binary = sys.argv[1:4]
mb = os.path.getsize(f"/tmp/{f}.log") / 1048576
runs = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with open(f"/tmp/{f}-{b}.json", "w") as out:
        subprocess.run([binary, "explain", "--no-machine", "--format", "json", f"/tmp/{f}.log"], stdout=out, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    runs.append((after.ru_utime - before.ru_utime, wall, after.ru_maxrss))
runs.sort()
u, w, rss = runs[1]
print(f"{f} {b}: median user {u:.2f} s ({mb / u:.0f} MB/s of CPU), wall {w:.2f} s ({mb / w:.0f} MB/s), max RSS of children {rss} KiB")
PY
done; python3 -c "
import json;a=json.load(open('/tmp/$f-A.json'));b=json.load(open('/tmp/$f-B.json'));print('$f', b['stats']);a.pop('stats');b.pop('stats');print('$f same answer:', a['category']==b['category'], a.get('title')==b.get('title'))"; done
} > $o/r2.txt 2>&1
cat $o/r.txt $o/r2.txt
left=$((560 - SECONDS))
echo "== issue 42: observer, paired ($left s left)"
if [ $left -gt 90 ]; then
  OUT=$o/observer ROUNDS=${ROUNDS:-10} timeout $left scripts/device/observer_paired.sh $B $A $PY > $o/observer.txt 2>&1; echo "observer rc $?"; tail -25 $o/observer.txt
fi
echo "total ${SECONDS} s"
