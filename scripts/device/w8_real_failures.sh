#!/usr/bin/env bash
# Real failures of every framework on this machine (torch, a JIT-built extension, NCCL, JAX,
# CuPy, numba-cuda), each produced in its own interpreter with a timeout, and `explain` of
# each log twice: on this machine (its judges) and with --no-machine (the text alone). The
# logs come back as parser fixtures; what each failure is, is known by construction.
# Binary: .whl/cudoctor. Usage on the device machine: OUT=DIR bash scripts/device/w8_real_failures.sh
set -u
B=$(readlink -f .whl/cudoctor)
PY=/opt/torch/.venv/bin/python
o=${OUT:?set OUT}
D=$o/real
mkdir -p "$D"
export TORCH_EXTENSIONS_DIR=/tmp/torch_ext MAX_JOBS=16
SECONDS=0
case_py() { # name, timeout, python code (env from the caller)
  timeout -k 5 "$2" "$PY" -c "$3" > "$D/$1.log" 2>&1
  echo "exit=$?" >> "$D/$1.log"
  echo "$1 done at ${SECONDS}s"
}
{
echo "== machine"; date -u; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$B" --version
echo "== healthy check"; (cd /tmp && timeout 60 "$B" check > "$o/check.txt" 2>&1; echo "rc $?"); grep -E "^Verdict|errors|No problems" "$o/check.txt" | tail -2

# A JIT extension built for sm_80 (no kernel image on sm_90), and one that writes out of bounds
# (a program bug: an illegal address).
cat > /tmp/ext.py <<'PY'
import sys, torch
from torch.utils.cpp_extension import load_inline
bad = len(sys.argv) > 1
cuda = r'''
__global__ void add_one(float* x, long n, long stride) { long i = (blockIdx.x * (long)blockDim.x + threadIdx.x) * stride; if (stride > 1 || i < n) x[i] += 1.0f; }
void launch(torch::Tensor x, int64_t stride) { add_one<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), x.numel(), stride);
  cudaError_t e = cudaGetLastError();
  TORCH_CHECK(e == cudaSuccess, "CUDA error: ", cudaGetErrorString(e)); }
'''
cpp = "void launch(torch::Tensor x, int64_t stride);"
m = load_inline(name="oob_ext" if bad else "sm80_ext", cpp_sources=cpp, cuda_sources=cuda, functions=["launch"], verbose=True, with_cuda=True)
x = torch.zeros(1024, device="cuda")
m.launch(x, 1 << 26 if bad else 1)
torch.cuda.synchronize()
print("ok", float(x.sum()))
PY
TORCH_CUDA_ARCH_LIST=8.0 timeout -k 5 300 "$PY" /tmp/ext.py > "$D/torch_ext_sm80.log" 2>&1; echo "exit=$?" >> "$D/torch_ext_sm80.log"; echo "ext sm80 at ${SECONDS}s"
TORCH_CUDA_ARCH_LIST=9.0 timeout -k 5 300 "$PY" /tmp/ext.py oob > "$D/torch_ext_oob.log" 2>&1; echo "exit=$?" >> "$D/torch_ext_oob.log"; echo "ext oob at ${SECONDS}s"

CUDA_VISIBLE_DEVICES="" case_py torch_hidden 60 'import torch; torch.zeros(1).cuda()'
CUDA_VISIBLE_DEVICES=7 case_py torch_bad_ordinal 60 'import torch; print(torch.cuda.is_available()); torch.zeros(1, device="cuda")'
case_py torch_oom 60 'import torch; x = torch.empty(int(3e11), dtype=torch.float32, device="cuda")'
case_py torch_device_index 60 'import torch; torch.zeros(1, device="cuda:3")'
case_py torch_half_cpu 60 'import torch; a = torch.randn(4, 4, dtype=torch.half); b = torch.randn(4, 4, device="cuda"); print(a @ b)'

# NCCL: two ranks on one GPU (a duplicate GPU); a socket interface that does not exist.
cat > /tmp/nccl_one_gpu.py <<'PY'
import datetime, os, torch, torch.distributed as dist
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=30))
torch.cuda.set_device(0)
t = torch.ones(1, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
print("sum", t.item())
PY
(cd /tmp && NCCL_DEBUG=WARN timeout -k 5 120 "$PY" -m torch.distributed.run --nproc-per-node 2 /tmp/nccl_one_gpu.py > "$D/nccl_duplicate_gpu.log" 2>&1; echo "exit=$?" >> "$D/nccl_duplicate_gpu.log"); echo "nccl dup at ${SECONDS}s"
(cd /tmp && NCCL_SOCKET_IFNAME=nosuchif0 NCCL_DEBUG=WARN timeout -k 5 120 "$PY" -m torch.distributed.run --nproc-per-node 1 /tmp/nccl_one_gpu.py > "$D/nccl_no_ifname.log" 2>&1; echo "exit=$?" >> "$D/nccl_no_ifname.log"); echo "nccl ifname at ${SECONDS}s"

# JAX
case_py jax_oom 90 'import jax, jax.numpy as jnp; x = jnp.ones((int(6e10),), dtype=jnp.float32); print(x.sum())'
CUDA_VISIBLE_DEVICES="" JAX_PLATFORMS=cuda case_py jax_hidden 90 'import jax; print(jax.devices())'
CUDA_VISIBLE_DEVICES="" case_py jax_hidden_default 90 'import jax; print(jax.devices()); print(jax.default_backend())'

# CuPy
case_py cupy_oom 90 'import cupy; x = cupy.empty(int(3e11), dtype=cupy.float32)'
CUDA_VISIBLE_DEVICES="" case_py cupy_hidden 90 'import cupy; print(cupy.cuda.runtime.getDeviceCount()); cupy.zeros(1)'
case_py cupy_sm80_cubin 120 'import cupy
src = r"""extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }"""
m = cupy.RawModule(code=src, backend="nvcc", options=("-arch=sm_80",))
f = m.get_function("k"); x = cupy.zeros(32, dtype=cupy.float32); f((1,), (32,), (x,)); cupy.cuda.Device().synchronize(); print(x.sum())'
case_py cupy_kernel_syntax 120 'import cupy
k = cupy.RawKernel(r"""extern "C" __global__ void k(float* x) { x[threadIdx.x] += undefined_name; }""", "k")
x = cupy.zeros(32, dtype=cupy.float32); k((1,), (32,), (x,))'

# numba-cuda
case_py numba_jit 120 'from numba import cuda
import numpy as np
@cuda.jit
def k(x):
    i = cuda.grid(1)
    if i < x.size: x[i] += 1
x = cuda.to_device(np.zeros(32)); k[1, 32](x); print(x.copy_to_host().sum())'

echo "== explain each log (on this machine, then the text alone)"
for f in "$D"/*.log; do
  n=$(basename "$f" .log)
  timeout 120 "$B" explain --python "$PY" --format json "$f" > "$D/$n.machine.json" 2> "$D/$n.machine.err"; m=$?
  timeout 60 "$B" explain --no-machine --format json "$f" > "$D/$n.text.json" 2>/dev/null
  timeout 120 "$B" explain --python "$PY" "$f" > "$D/$n.machine.txt" 2>&1
  python3 - "$n" "$m" "$D/$n.machine.json" "$D/$n.text.json" "$f" <<'PY'
import json, sys
n, rc, mj, tj, log = sys.argv[1:]
def cat(p):
    try:
        r = json.load(open(p)); return r.get("category"), (r.get("machine") or {}).get("verdict") if isinstance(r.get("machine"), dict) else r.get("machine")
    except Exception as e: return ("ERR", str(e)[:60])
last = [l for l in open(log, errors="replace").read().splitlines() if l.strip()][-3:]
print(f"{n:22} rc={rc} machine={cat(mj)} text={cat(tj)[0]} | {' / '.join(x[:90] for x in last)}")
PY
done
echo "== explain of the sm_80 extension's failure, as a user sees it"
cat "$D/torch_ext_sm80.machine.txt" | head -50
echo "total ${SECONDS} s"; uptime
} > "$o/r.txt" 2>&1
cat "$o/r.txt"
