#!/usr/bin/env bash
# One device call: symbol lookups that read their entries (26e601d) against main before it
# (32a7793), side by side on the H200 machine. Writes $OUT/r.txt.
set -u
B=$PWD/.whl/cudoctor
A=$PWD/.whl/cudoctor-before
PY=/opt/torch/.venv/bin/python
o=$OUT/r.txt
{
echo "== check"; timeout 60 $B check --python $PY | head -40; echo "exit ${PIPESTATUS[0]}"
echo "== same facts (before, after)"; timeout 120 python3 scripts/bench/same_facts.py $A $B /opt/torch/.venv
echo "== timings, 5 runs (after)"
for i in 1 2 3 4 5; do echo "-- run $i"; CUDOCTOR_TIMINGS=1 timeout 60 $B check --python $PY 2>&1 >/dev/null | grep -E "listing|kernels|driver|wheels|loader|collect|memory"; done
echo "== interleaved wall, 25 runs each"
for i in $(seq 25); do for m in before after; do
  if [ $m = before ]; then X=$A; else X=$B; fi
  t0=$(date +%s%N); $X check --python $PY >/dev/null 2>&1; t1=$(date +%s%N); echo "$m $(( (t1 - t0) / 1000 ))"
done; done > /tmp/ab.txt
for m in before after; do printf '%s median ' $m; grep "^$m " /tmp/ab.txt | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms (min %.1f, max %.1f, n %d)\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)/1000, a[1]/1000, a[NR]/1000, NR}'; done
echo "== bench_check (after)"; bash scripts/device/bench_check.sh $B $PY 9
echo "== libs vs ldd (after)"; OUT=/tmp/lvl timeout 120 bash scripts/device/libs_vs_ldd.sh $B $PY >/dev/null 2>&1; echo "exit $?"; head -30 /tmp/lvl/summary.txt
echo "== rss_variants"; timeout 240 python3 scripts/bench/rss_variants.py --env /opt/torch/.venv --work /tmp --runs 5 $A $B
echo "== scaling"; timeout 240 python3 scripts/bench/check_scaling.py --env /opt/torch/.venv --work /tmp --runs 3 $A $B
} > $o 2>&1
