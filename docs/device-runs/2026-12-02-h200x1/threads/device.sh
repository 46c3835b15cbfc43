#!/usr/bin/env bash
# One device call: main against threads, side by side. Results under $OUT.
set -u
M=$PWD/.whl/cudoctor-main; T=$PWD/.whl/cudoctor-threads; V=/opt/torch/.venv; PY=$V/bin/python3
t0=$(date +%s); left() { echo $(( 400 - ($(date +%s) - t0) )); }
{ nproc; uptime; date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; $T --version; } > $OUT/info.txt 2>&1
{ python3 scripts/bench/same_facts.py $M $T $V; CUDOCTOR_THREADS=1 python3 scripts/bench/same_facts.py $M $T $V; } > $OUT/same_facts.txt 2>&1
for b in main threads; do for i in 1 2 3; do CUDOCTOR_TIMINGS=1 .whl/cudoctor-$b check --python $PY 2>&1 >/dev/null | tail -40; echo; done > $OUT/timings-$b.txt; done
timeout $(left) python3 scripts/bench/rss_variants.py --env $V --runs 9 --variant t4=CUDOCTOR_THREADS=4 --variant t16=CUDOCTOR_THREADS=16 $M $T > $OUT/rss_variants.md 2>&1
echo "after rss: $(left) s left" >> $OUT/info.txt
for b in main threads; do timeout $(( $(left) / 2 )) scripts/device/bench_check.sh .whl/cudoctor-$b $PY 7 > $OUT/bench_check-$b.txt 2>&1; done
echo "after bench: $(left) s left" >> $OUT/info.txt
timeout $(left) python3 scripts/bench/check_scaling.py --env $V --runs 3 $M $T > $OUT/scaling.md 2>&1
echo "end: $(left) s left; $(uptime)" >> $OUT/info.txt
