#!/usr/bin/env bash
# One device call (2026-12-04): an extension JIT-built by torch.utils.cpp_extension for sm_80
# fails on the H200; check, kernels, explain of its log and run name it; the rebuild fix (the
# GPU's TORCH_CUDA_ARCH_LIST, the stale build directory removed) makes it run. Then the health
# layer against nvidia-smi -q, the healthy machine's check / check --deep, and check's wall
# beside collect_env. Binary: .whl/cudoctor (main, built on the CPU machine). Writes $OUT/*.
set -u
B=$PWD/.whl/cudoctor
PY=/opt/torch/.venv/bin/python
export TORCH_EXTENSIONS_DIR=/tmp/torch_ext
o=$OUT/r.txt
{
echo "== load"; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== build the sm_80 extension and run it on the H200"
cat > /tmp/ext.py <<'PY'
import os, sys, torch
from torch.utils.cpp_extension import load_inline
cuda = r'''
__global__ void add_one(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
void launch(torch::Tensor x) { add_one<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), x.numel());
  cudaError_t e = cudaGetLastError();
  TORCH_CHECK(e == cudaSuccess, "CUDA error: ", cudaGetErrorString(e)); }
'''
cpp = "void launch(torch::Tensor x);"
m = load_inline(name="sm80_ext", cpp_sources=cpp, cuda_sources=cuda, functions=["launch"], verbose=True,
                extra_include_paths=[], with_cuda=True)
x = torch.zeros(1024, device="cuda")
m.launch(x)
torch.cuda.synchronize()
print("ok", float(x.sum()))
PY
export MAX_JOBS=16
TORCH_CUDA_ARCH_LIST=8.0 timeout 400 $PY /tmp/ext.py > $OUT/ext-fail.log 2>&1; echo "ext rc $?"
tail -5 $OUT/ext-fail.log
ls -la /tmp/torch_ext/*/sm80_ext/ 2>&1 | head
echo "== check (text)"; timeout 120 $B check --python $PY > $OUT/check.txt 2>&1; echo "rc $?"
grep -n -E "KRN00|sm80_ext" $OUT/check.txt | head
echo "== kernels of the cache"; timeout 60 $B kernels /tmp/torch_ext 2>&1 | head -20
echo "== explain of the failure log"; timeout 120 $B explain --python $PY $OUT/ext-fail.log > $OUT/explain.txt 2>&1; echo "rc $?"
head -60 $OUT/explain.txt
echo "== run -- python (the observer at the failure)"
TORCH_CUDA_ARCH_LIST=8.0 timeout 300 $B run --out $OUT/run.json -- $PY /tmp/ext.py > $OUT/run.txt 2>&1; echo "rc $?"
tail -30 $OUT/run.txt
echo "== the rebuild fix: the GPU's arch list, the stale build directory removed"
rm -rf /tmp/torch_ext/*/sm80_ext /tmp/torch_ext/sm80_ext
TORCH_CUDA_ARCH_LIST=9.0 timeout 400 $PY /tmp/ext.py > $OUT/ext-fixed.log 2>&1; echo "fixed rc $?"; tail -2 $OUT/ext-fixed.log
timeout 120 $B check --python $PY > $OUT/check-after.txt 2>&1; echo "check after rc $?"; grep -c KRN002 $OUT/check-after.txt
echo "== health facts vs nvidia-smi -q"
timeout 60 $B check --python $PY --format json > $OUT/check.json 2>/dev/null; echo "json rc $?"
nvidia-smi -q > $OUT/smi-q.txt 2>&1
python3 - "$OUT/check.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
snap = s.get("snapshot", s)
drv = snap.get("driver", {})
for g in drv.get("gpus", []):
    print(json.dumps({k: g.get(k) for k in g if k not in ("name",)}, default=str)[:3000])
print("findings:", [(f["code"], f["severity"], f["title"][:80]) for f in s.get("findings", [])])
PY
grep -E -A3 "^    (Persistence Mode|Ecc Mode|ECC Errors|Retired Pages|Remapped Rows|Clocks Event Reasons|GPU Link Info|Inforom)" $OUT/smi-q.txt | head -80
echo "== check --deep"; timeout 300 $B check --deep --python $PY > $OUT/check-deep.txt 2>&1; echo "rc $?"; tail -15 $OUT/check-deep.txt
echo "== check timings (in the repository copy, whose pyproject.toml makes it a project; and in /tmp)"
CUDOCTOR_TIMINGS=1 timeout 60 $B check 2>&1 >/dev/null | tail -25
(cd /tmp && CUDOCTOR_TIMINGS=1 timeout 60 $B check 2>&1 >/dev/null | tail -25)
echo "== check wall (no options, run from /tmp) vs collect_env, interleaved"
cd /tmp
for i in $(seq 21); do t0=$(date +%s%N); $B check >/dev/null 2>&1; t1=$(date +%s%N); echo "check $(( (t1 - t0) / 1000 ))"; done > /tmp/w.txt
for i in 1 2 3; do t0=$(date +%s%N); $PY -m torch.utils.collect_env >/dev/null 2>&1; t1=$(date +%s%N); echo "collect_env $(( (t1 - t0) / 1000 ))"; done >> /tmp/w.txt
for m in check collect_env; do printf '%s median ' $m; grep "^$m " /tmp/w.txt | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms (min %.1f, max %.1f, n %d)\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)/1000, a[1]/1000, a[NR]/1000, NR}'; done
echo "== load"; uptime
} > $o 2>&1
