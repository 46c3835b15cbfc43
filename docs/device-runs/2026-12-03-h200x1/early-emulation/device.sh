#!/usr/bin/env bash
# One device call: three builds side by side on the H200 machine, interleaved: main before this
# session (32a7793), the second emulation without symbol checks (caab0c7), and the emulation
# started beside its environment's listing (.whl/cudoctor). Writes $OUT/r.txt.
set -u
A=$PWD/.whl/cudoctor-before
N=$PWD/.whl/cudoctor-nosym
B=$PWD/.whl/cudoctor
PY=/opt/torch/.venv/bin/python
o=$OUT/r.txt
{
echo "== load"; uptime
echo "== same facts (before, early) and (nosym, early)"; timeout 120 python3 scripts/bench/same_facts.py $A $B /opt/torch/.venv; timeout 120 python3 scripts/bench/same_facts.py $N $B /opt/torch/.venv
for t in 1 3; do echo "-- CUDOCTOR_THREADS=$t"; CUDOCTOR_THREADS=$t timeout 120 python3 scripts/bench/same_facts.py $N $B /opt/torch/.venv; done
echo "== timings, 3 runs each"
for X in $N $B; do for i in 1 2 3; do echo "-- $(basename $X) run $i"; CUDOCTOR_TIMINGS=1 timeout 60 $X check --python $PY 2>&1 >/dev/null | grep -E "timing: (listing|kernels|driver|wheels|loader|framework-loader|collect) " | awk '$NF+0 > 0.5 || $(NF-1) ~ /\(/'; done; done
echo "== interleaved wall, 31 runs each"
for i in $(seq 31); do for m in before nosym early; do
  case $m in before) X=$A;; nosym) X=$N;; early) X=$B;; esac
  t0=$(date +%s%N); $X check --python $PY >/dev/null 2>&1; t1=$(date +%s%N); echo "$m $(( (t1 - t0) / 1000 ))"
done; done > /tmp/ab.txt
for m in before nosym early; do printf '%s median ' $m; grep "^$m " /tmp/ab.txt | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms (min %.1f, max %.1f, n %d)\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)/1000, a[1]/1000, a[NR]/1000, NR}'; done
echo "== bench_check (early)"; bash scripts/device/bench_check.sh $B $PY 9
echo "== rss_variants"; timeout 240 python3 scripts/bench/rss_variants.py --env /opt/torch/.venv --work /tmp --runs 5 $A $N $B
echo "== scaling"; timeout 240 python3 scripts/bench/check_scaling.py --env /opt/torch/.venv --work /tmp --runs 3 $N $B
echo "== load"; uptime
} > $o 2>&1
