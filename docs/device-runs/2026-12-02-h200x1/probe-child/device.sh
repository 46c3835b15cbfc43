#!/usr/bin/env bash
# One device call: the driver probe in a child process against the same binary asking in its
# own process (CUDOCTOR_DRIVER_PROBE=this-process), side by side on the H200 machine.
set -u
B=$PWD/.whl/cudoctor
PY=/opt/torch/.venv/bin/python
o=$OUT/r.txt
{
echo "== check (child)"; timeout 60 $B check --python $PY | head -30; echo "exit ${PIPESTATUS[0]}"
for m in child this-process; do
  if [ $m = child ]; then unset CUDOCTOR_DRIVER_PROBE; else export CUDOCTOR_DRIVER_PROBE=this-process; fi
  timeout 60 $B check --python $PY --format json > /tmp/$m.json
  echo "== timings ($m)"; CUDOCTOR_TIMINGS=1 timeout 60 $B check --python $PY 2>&1 >/dev/null | tail -12
done
unset CUDOCTOR_DRIVER_PROBE
python3 - <<'PY'
import json
a=json.load(open("/tmp/child.json")); b=json.load(open("/tmp/this-process.json"))
for k in ["driver","multigpu"]:
    x=a["snapshot"][k]; y=b["snapshot"][k]
    if k=="driver":
        for g in x["gpus"]+y["gpus"]: g.pop("memory_used_mib",None)
    if k=="multigpu": x={"t":x.get("topology"),"a":x.get("attempts")}; y={"t":y.get("topology"),"a":y.get("attempts")}
    print(k, "same" if x==y else "DIFFERENT\n"+json.dumps(x)[:1500]+"\n"+json.dumps(y)[:1500])
print("findings same" if [f["code"] for f in a["findings"]]==[f["code"] for f in b["findings"]] else "findings differ")
print([ (f["code"],f["severity"]) for f in a["findings"]])
PY
echo "== probe child alone: max RSS"
python3 -c "
import os,subprocess
for i in range(3):
    p=subprocess.Popen(['$B','__probe-driver-libraries','topology'],stdout=subprocess.DEVNULL)
    _,_,u=os.wait4(p.pid,0); print('child maxrss %.1f MiB'%(u.ru_maxrss/1024))"
echo "== interleaved wall, 21 runs each"
for i in $(seq 21); do for m in child this-process; do
  if [ $m = child ]; then unset CUDOCTOR_DRIVER_PROBE; else export CUDOCTOR_DRIVER_PROBE=this-process; fi
  t0=$(date +%s%N); $B check --python $PY >/dev/null 2>&1; t1=$(date +%s%N); echo "$m $(( (t1 - t0) / 1000 ))"
done; done > /tmp/ab.txt
unset CUDOCTOR_DRIVER_PROBE
for m in child this-process; do printf '%s median ' $m; grep "^$m " /tmp/ab.txt | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms (min %.1f, max %.1f, n %d)\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)/1000, a[1]/1000, a[NR]/1000, NR}'; done
echo "== bench_check"; bash scripts/device/bench_check.sh $B $PY 9
echo "== rss_variants"; timeout 200 python3 scripts/bench/rss_variants.py --env /opt/torch/.venv --work /tmp --runs 5 --variant this-process=CUDOCTOR_DRIVER_PROBE=this-process $B
} > $o 2>&1
