#!/usr/bin/env bash
# Produces real error messages on the GPU machine, one log per case under $OUT/explain/, so
# that `cudoctor explain` can be checked on what this torch/driver really prints (the message
# formats change between releases). Each case runs in its own interpreter with a timeout; a
# case that cannot run here (no NCCL, one GPU...) writes why instead.
#
# Usage on the device machine: OUT=/some/dir PYTHON=/opt/torch/.venv/bin/python bash scripts/device/explain_real_errors.sh
# Then, where cudoctor is built: for f in $OUT/explain/*.log; do cudoctor explain --format json "$f"; done
set -u
OUT="${OUT:?set OUT}"
PY="${PYTHON:-python3}"
DIR="$OUT/explain"
mkdir -p "$DIR"

run() { # name, python code
  local name="$1" code="$2"
  timeout 300 "$PY" -c "$code" > "$DIR/$name.log" 2>&1
  echo "exit=$?" >> "$DIR/$name.log"
}

# out_of_memory: ask for far more than the GPU has
run oom 'import torch; torch.empty(int(4e12), dtype=torch.uint8, device="cuda")'

# not_environment: a class label outside [0, n_classes)
run device_assert 'import torch, torch.nn.functional as F
x = torch.randn(4, 3, device="cuda"); y = torch.tensor([0, 1, 2, 7], device="cuda")
F.cross_entropy(x, y); torch.cuda.synchronize()'

# not_environment: index out of range in an embedding
run embedding_index 'import torch
e = torch.nn.Embedding(10, 4).cuda(); e(torch.tensor([3, 12], device="cuda")); torch.cuda.synchronize()'

# not_environment: tensors on two devices
run same_device 'import torch; torch.ones(2, device="cuda") + torch.ones(2)'

# sdpa_fallback: force flash attention on inputs it rejects (fp32), with warnings on
run sdpa_flash_fp32 'import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
q = torch.randn(1, 8, 128, 64, device="cuda")
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
    F.scaled_dot_product_attention(q, q, q)'

# driver_missing (message only): a CPU tensor asked to be pinned to CUDA with CUDA hidden
CUDA_VISIBLE_DEVICES="" run no_visible_gpu 'import torch; torch.zeros(1).cuda()'

# nccl: an all-reduce with shared memory made unusable (tiny /dev/shm is not set up here;
# NCCL_SHM_DISABLE and P2P off only show NCCL logs; a timeout shows the watchdog message)
if [ "$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null)" -ge 2 ] 2>/dev/null; then
  cat > "$DIR/nccl_timeout.py" <<'PYEOF'
import datetime, os, time, torch, torch.distributed as dist
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=20))
r = dist.get_rank(); torch.cuda.set_device(r)
t = torch.ones(1, device="cuda")
if r == 0:
    dist.all_reduce(t)      # rank 1 never joins: the watchdog fires
    torch.cuda.synchronize()
else:
    time.sleep(60)
PYEOF
  (cd "$DIR" && TORCH_NCCL_ASYNC_ERROR_HANDLING=1 timeout 120 "$PY" -m torch.distributed.run --nproc-per-node 2 nccl_timeout.py > "$DIR/nccl_timeout.log" 2>&1; echo "exit=$?" >> "$DIR/nccl_timeout.log")
else
  echo "skipped: fewer than 2 GPUs" > "$DIR/nccl_timeout.log"
fi

"$PY" -c 'import torch, json; print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda}))' > "$DIR/versions.json" 2>&1
ls -l "$DIR"
