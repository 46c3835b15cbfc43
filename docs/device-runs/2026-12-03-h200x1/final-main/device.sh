#!/usr/bin/env bash
# One device call: main at the end of the session (.whl/cudoctor) against the build measured
# for issue 21 (857c675, .whl/cudoctor-857) on the H200 machine: the same facts, check / plan /
# check --deep as a user sees them, the interleaved wall, bench_check. Writes $OUT/*.
set -u
A=$PWD/.whl/cudoctor-857
B=$PWD/.whl/cudoctor
PY=/opt/torch/.venv/bin/python
o=$OUT/r.txt
{
echo "== load"; uptime
echo "== same facts (857c675, final)"; timeout 120 python3 scripts/bench/same_facts.py $A $B /opt/torch/.venv
echo "== check (text) exit status"; timeout 60 $B check --python $PY > $OUT/check.txt 2>&1; echo "rc $?"
timeout 60 $B check --python $PY --format json > $OUT/check.json 2>/dev/null; echo "json rc $?"
echo "== plan exit status"; timeout 60 $B plan --python $PY > $OUT/plan.txt 2>&1; echo "rc $?"
echo "== check --deep exit status"; timeout 300 $B check --deep --python $PY > $OUT/check-deep.txt 2>&1; echo "rc $?"
echo "== interleaved wall, 31 runs each"
for i in $(seq 31); do for m in m857 final; do
  case $m in m857) X=$A;; final) X=$B;; esac
  t0=$(date +%s%N); $X check --python $PY >/dev/null 2>&1; t1=$(date +%s%N); echo "$m $(( (t1 - t0) / 1000 ))"
done; done > /tmp/ab.txt
for m in m857 final; do printf '%s median ' $m; grep "^$m " /tmp/ab.txt | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms (min %.1f, max %.1f, n %d)\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)/1000, a[1]/1000, a[NR]/1000, NR}'; done
echo "== bench_check (final)"; bash scripts/device/bench_check.sh $B $PY 9
echo "== load"; uptime
} > $o 2>&1
