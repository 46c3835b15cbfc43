#!/usr/bin/env bash
# One device call: trust checks of main's binary on the real H200 machine.
set -u
B=$PWD/.whl/cudoctor
PY=/opt/torch/.venv/bin/python
o=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $o/info.txt 2>&1
$PY -c "import torch,jax,cupy;print(torch.__version__,jax.__version__,cupy.__version__)" >> $o/info.txt 2>&1
$PY -m pip list 2>/dev/null | grep -i "bitsandbytes\|cufft\|flash\|xformers" >> $o/info.txt
run() { local name=$1; shift; timeout 120 "$@" > $o/$name.txt 2>&1; echo "exit $?" >> $o/$name.txt; }
run check $B check --python $PY
run check-json $B check --python $PY --format json
run check-V100 $B check --python $PY --gpu V100
run check-V100-json $B check --python $PY --gpu V100 --format json
run kernels $B kernels --python $PY
run kernels-json $B kernels --python $PY --format json
run plan $B plan --python $PY
run plan-V100 $B plan --python $PY --gpu V100
run libs $B libs --python $PY
printf 'RuntimeError: CUDA error: no kernel image is available for execution on the device\n' > /tmp/noimage.log
run explain-V100 $B explain --python $PY --gpu V100 /tmp/noimage.log
run explain-here $B explain --python $PY /tmp/noimage.log
run check-deep $B check --python $PY --deep
bash scripts/device/bench_check.sh $B $PY 9 > $o/bench_check.txt 2>&1
# Side by side: main's binary against the same with _exit at the end (no C exit handlers).
for b in cudoctor cudoctor-exit; do .whl/$b check --python $PY >/dev/null 2>&1; done
for i in $(seq 25); do for b in cudoctor cudoctor-exit; do
  t0=$(date +%s%N); .whl/$b check --python $PY >/dev/null 2>&1; t1=$(date +%s%N)
  echo "$b $(( (t1 - t0) / 1000 ))"
done; done > $o/exit_ab.txt
for b in cudoctor cudoctor-exit; do
  printf '%s median ' $b; grep "^$b " $o/exit_ab.txt | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms (min %.1f, max %.1f, n %d)\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)/1000, a[1]/1000, a[NR]/1000, NR}'
done > $o/exit_ab_summary.txt
cmp <(.whl/cudoctor check --python $PY --format json | python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps(d['findings']))") <(.whl/cudoctor-exit check --python $PY --format json | python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps(d['findings']))") && echo "same findings" >> $o/exit_ab_summary.txt
.whl/cudoctor-exit check --python $PY > /dev/null; echo "exit-binary status $?" >> $o/exit_ab_summary.txt
.whl/cudoctor check --python $PY > /dev/null; echo "main-binary status $?" >> $o/exit_ab_summary.txt
CUDOCTOR_TIMINGS=1 $B check --python $PY > /dev/null 2> $o/timings.txt
python3 - <<'PY' > $o/summary.txt 2>&1
import json,os
o=os.environ["OUT"]
def load(n):
    t=open(f"{o}/{n}.txt").read(); return json.loads(t[:t.rfind("exit")])
for n in ["check-json","check-V100-json"]:
    d=load(n)
    print(n)
    for f in d["findings"]:
        print("  ",f["code"],f["severity"],"caused_by=",f.get("caused_by"),"|",f["title"][:110])
d=load("kernels-json")
print("kernels not_judged:",[n["path"].rsplit("/",1)[-1] for n in d.get("not_judged",[])])
for g in d["gpus"]:
    kinds={}
    for l in g["libraries"]:
        k=l.get("verdict") or json.dumps({x:y for x,y in l.items() if x!="path"})
        kinds.setdefault(str(k),[]).append(l["path"].rsplit("/",1)[-1])
    print("gpu",g.get("name"),{k:len(v) for k,v in kinds.items()})
    for k,v in kinds.items():
        if "native" not in k: print("   ",k,v)
PY
python3 .whl/driver_rss.py > $o/driver_rss.txt 2>&1
