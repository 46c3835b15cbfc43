#!/usr/bin/env bash
# The libraries a real workload maps, stage by stage, against cudoctor's staged prediction, on
# the GPU machine: import (torch, torchvision, torchaudio); CUDA init; matmul; Conv2d (cuDNN's
# sub-libraries); bf16 SDPA; torch.compile (Triton); an NCCL all-reduce (one rank).
# Twice: default loader settings, and LD_LIBRARY_PATH=/usr/local/cuda/lib64:/lib/x86_64-linux-gnu.
# Records, per setting, /proc/self/maps after each stage (maps.MODE.json), `libs --format json`
# (libs.MODE.json), `check --format json` (check.MODE.json) and prints per stage the
# predicted-not-mapped and mapped-not-predicted CUDA/torch/driver/Triton libraries
# (compare.txt); LIB007 findings are listed per setting.
# Usage: OUT=DIR scripts/device/staged_maps.sh PATH/TO/cudoctor
set -uo pipefail
bin=$(readlink -f "${1:?cudoctor binary}")
py=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
out=${OUT:-/tmp/staged}; mkdir -p "$out"
cat >"$out/staged.py" <<'PY'
import sys, json, os
stages = {}
def snap(name):
    s = set()
    for l in open('/proc/self/maps'):
        f = l.split()
        if len(f) >= 6 and '.so' in f[-1]:
            s.add(f[-1])
    stages[name] = sorted(s)
def stage(name, fn):
    try:
        fn()
    except Exception as e:
        print(f'{name} failed: {e!r}', file=sys.stderr)
    snap(name)
import torch; snap('import torch')
import torchvision, torchaudio; snap('import')
stage('cuda_init', lambda: (torch.cuda.init(), torch.zeros(1, device='cuda')))
def matmul():
    a = torch.randn(512, 512, device='cuda'); (a @ a).sum().item()
stage('matmul', matmul)
def conv():
    c = torch.nn.Conv2d(3, 8, 3).cuda(); c(torch.randn(1, 3, 32, 32, device='cuda')).sum().item()
stage('first_convolution', conv)
def sdpa():
    q = torch.randn(1, 8, 256, 64, device='cuda', dtype=torch.bfloat16)
    torch.nn.functional.scaled_dot_product_attention(q, q, q).sum().item()
stage('sdpa', sdpa)
def compile_():
    f = torch.compile(lambda x: (x * 2).sin())
    f(torch.randn(64, device='cuda')).sum().item()
stage('compile', compile_)
def nccl():
    import torch.distributed as dist
    os.environ.setdefault('MASTER_ADDR', '127.0.0.1'); os.environ.setdefault('MASTER_PORT', '29511')
    dist.init_process_group('nccl', rank=0, world_size=1)
    t = torch.ones(1, device='cuda'); dist.all_reduce(t); torch.cuda.synchronize()
    dist.destroy_process_group()
stage('nccl', nccl)
json.dump(stages, sys.stdout)
PY
for mode in default llp; do
  if [ $mode = llp ]; then export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/lib/x86_64-linux-gnu; else unset LD_LIBRARY_PATH; fi
  timeout 400 "$py" -I "$out/staged.py" >"$out/maps.$mode.json" 2>"$out/maps.$mode.err"
  timeout 120 "$bin" libs --python "$py" --format json >"$out/libs.$mode.json" 2>"$out/libs.$mode.err"
  timeout 120 "$bin" libs --python "$py" >"$out/libs.$mode.txt" 2>&1
  timeout 120 "$bin" check --python "$py" --format json >"$out/check.$mode.json" 2>"$out/check.$mode.err"
  timeout 120 "$bin" check --python "$py" >"$out/check.$mode.txt" 2>&1
done
unset LD_LIBRARY_PATH
python3 - "$out" <<'PY' | tee "$out/compare.txt"
import json, sys, os
out = sys.argv[1]
FAM = ("torch/", "torchvision/", "torchvision.libs/", "torchaudio/", "torchaudio.libs/", "nvidia/", "triton/")
CUDA = ("libcuda.", "libcudart", "libcudnn", "libcublas", "libnccl", "libnvrtc", "libnvJitLink", "libcusparse", "libcufft", "libcurand", "libcusolver", "libcupti", "libnvidia-", "libnvToolsExt", "libcufile", "libnvshmem", "libnvjpeg")
def interest(p):
    rel = p.split('/site-packages/', 1)
    return (len(rel) == 2 and rel[1].startswith(FAM)) or os.path.basename(p).startswith(CUDA)
# Each recorded stage and the cudoctor stages whose libraries it should hold (cumulative).
ORDER = ["import", "cuda_init", "first_convolution", "compile"]
STAGE_OF = {"import": "import", "cuda_init": "cuda_init", "matmul": "cuda_init",
            "first_convolution": "first_convolution", "sdpa": "first_convolution",
            "compile": "compile", "nccl": "compile"}
real = lambda p: os.path.realpath(p)
for mode in ("default", "llp"):
    try:
        maps = json.load(open(f"{out}/maps.{mode}.json"))
        libs = json.load(open(f"{out}/libs.{mode}.json"))
        chk = json.load(open(f"{out}/check.{mode}.json"))
    except Exception as e:
        print(f"== {mode}: missing output: {e}"); continue
    objs = libs["objects"]
    dirs = [d for d in libs.get("runtime_dirs", [])]
    print(f"== {mode}: findings", [(f["code"], f["severity"]) for f in chk["findings"]])
    for f in chk["findings"]:
        if f["code"] == "LIB007":
            print("   LIB007:", f["title"]); [print("     ", e) for e in f["evidence"]]; print("      fix:", f.get("fix"))
    for d in dirs:
        print(f"   predicted location ({d['stage']}): {d['path']} — {d['what']}")
    for stage, mapped in maps.items():
        if stage == "import torch":
            continue
        upto = ORDER[: ORDER.index(STAGE_OF[stage]) + 1]
        pred, cond = set(), set()
        for o in objs:
            st = o.get("stage", "import")
            if st in upto and interest(real(o.get("real_path") or o["path"])):
                (cond if (o.get("opened_by") or {}).get("conditional") else pred).add(real(o.get("real_path") or o["path"]))
        m = {real(p) for p in mapped if interest(p)}
        def in_dirs(p):
            return any(p.startswith(d["path"].split("<")[0].rstrip("/")) for d in dirs if d["stage"] in upto)
        missing = sorted(pred - m)
        extra = sorted(p for p in m - pred - cond if not in_dirs(p))
        print(f"{mode} {stage}: predicted-not-mapped {missing}")
        print(f"{mode} {stage}: mapped-not-predicted {extra}")
        print(f"{mode} {stage}: conditional predicted {sorted(os.path.basename(p) for p in cond)}, mapped {sorted(os.path.basename(p) for p in cond & m)}")
PY
