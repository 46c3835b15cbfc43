#!/usr/bin/env bash
# check's wall on the H200 after the inforom question left the default check: 31 runs from
# /tmp beside collect_env, the timings of one run, and CUDOCTOR_INFOROM=1 still answered.
set -u
B=$PWD/.whl/cudoctor
PY=/opt/torch/.venv/bin/python
cd /tmp
{
uptime
CUDOCTOR_TIMINGS=1 $B check 2>&1 >/dev/null | grep -E "driver|collect|python|wheels|loader"
for i in $(seq 31); do t0=$(date +%s%N); $B check >/dev/null 2>&1; t1=$(date +%s%N); echo "check $(( (t1 - t0) / 1000 ))"; done > /tmp/w.txt
for i in 1 2 3; do t0=$(date +%s%N); $PY -m torch.utils.collect_env >/dev/null 2>&1; t1=$(date +%s%N); echo "collect_env $(( (t1 - t0) / 1000 ))"; done >> /tmp/w.txt
for m in check collect_env; do printf '%s median ' $m; grep "^$m " /tmp/w.txt | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms (min %.1f, max %.1f, n %d)\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)/1000, a[1]/1000, a[NR]/1000, NR}'; done
echo "== CUDOCTOR_INFOROM=1"; CUDOCTOR_INFOROM=1 $B check --format json 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin); print([g["health"].get("inforom_valid") for g in s["snapshot"]["driver"]["gpus"]], [f["code"] for f in s["findings"]])'
$B check --format json 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin); print([g["health"].get("inforom_valid") for g in s["snapshot"]["driver"]["gpus"]], [f["code"] for f in s["findings"]])'
uptime
} > $OUT/speed.txt 2>&1
cat $OUT/speed.txt
