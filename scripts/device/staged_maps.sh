#!/usr/bin/env bash
# The libraries a real workload maps, stage by stage, against cudoctor's prediction, on the GPU
# machine: import; CUDA init; matmul; Conv2d (cuDNN's sub-libraries); bf16 SDPA; torch.compile.
# Default loader settings, and with LD_LIBRARY_PATH=/usr/local/cuda/lib64:/lib/x86_64-linux-gnu.
# Usage: OUT=DIR scripts/device/staged_maps.sh PATH/TO/cudoctor
set -uo pipefail
bin=$(readlink -f "${1:?cudoctor binary}")
py=$(command -v python3)
[ -x /opt/torch/.venv/bin/python3 ] && py=/opt/torch/.venv/bin/python3
out=${OUT:-/tmp/staged}; mkdir -p "$out"
cat >/tmp/staged.py <<'PY'
import sys, json
stages = {}
def snap(name):
    s = set()
    for l in open('/proc/self/maps'):
        f = l.split()
        if len(f) >= 6 and '.so' in f[-1]:
            s.add(f[-1])
    stages[name] = sorted(s)
import torch; snap('import torch')
import torchvision, torchaudio; snap('import companions')
torch.cuda.init(); torch.zeros(1, device='cuda'); snap('cuda init')
a = torch.randn(512, 512, device='cuda'); (a @ a).sum().item(); snap('matmul')
c = torch.nn.Conv2d(3, 8, 3).cuda(); c(torch.randn(1, 3, 32, 32, device='cuda')).sum().item(); snap('conv2d')
q = torch.randn(1, 8, 256, 64, device='cuda', dtype=torch.bfloat16)
torch.nn.functional.scaled_dot_product_attention(q, q, q).sum().item(); snap('sdpa')
try:
    f = torch.compile(lambda x: (x * 2).sin())
    f(torch.randn(64, device='cuda')).sum().item(); snap('compile')
except Exception as e:
    print('compile failed:', e, file=sys.stderr)
json.dump(stages, sys.stdout)
PY
for mode in default llp; do
  if [ $mode = llp ]; then export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/lib/x86_64-linux-gnu; else unset LD_LIBRARY_PATH; fi
  timeout 300 "$py" -I /tmp/staged.py >"$out/maps.$mode.json" 2>"$out/maps.$mode.err"
  "$bin" check --python "$py" --format json >"$out/check.$mode.json" 2>"$out/check.$mode.err"
  "$bin" check --python "$py" >"$out/check.$mode.txt" 2>&1
done
python3 - "$out" "$py" <<'PY' | tee "$out/compare.txt"
import json, sys, os
out, py = sys.argv[1], sys.argv[2]
prefix = os.path.realpath(sys.prefix) if False else None
FAM = ("torch/", "torchvision/", "torchvision.libs/", "torchaudio/", "torchaudio.libs/", "nvidia/")
CUDA = ("libcuda.", "libcudart", "libcudnn", "libcublas", "libnccl", "libnvrtc", "libnvJitLink", "libcusparse", "libcufft", "libcurand", "libcusolver", "libcupti", "libnvidia-", "libnvToolsExt", "libcufile", "libnvshmem", "libnvjpeg")
def interest(p):
    rel = p.split('/site-packages/', 1)
    return (len(rel) == 2 and rel[1].startswith(FAM)) or os.path.basename(p).startswith(CUDA)
for mode in ("default", "llp"):
    maps = json.load(open(f"{out}/maps.{mode}.json"))
    chk = json.load(open(f"{out}/check.{mode}.json"))
    procs = chk["snapshot"]["loader"]["processes"]
    objs = [o for p in procs for o in p["objects"]]
    real_of = lambda o: os.path.realpath(o.get("real_path") or o["path"])
    imp = {real_of(o) for o in objs if o.get("stage", "import") == "import" and interest(real_of(o))}
    ondemand = {real_of(o) for o in objs if o.get("stage") == "on_demand" and interest(real_of(o))}
    prev = set()
    print(f"== {mode}: findings", [(f["code"], f["severity"]) for f in chk["findings"]])
    for stage, libs in maps.items():
        libs = {os.path.realpath(l) for l in libs if interest(l)}
        new = libs - prev
        prev = libs
        if stage == "import companions":
            print(f"{mode} import: mapped-not-predicted {sorted(libs - imp)}  predicted-not-mapped {sorted(imp - libs)}")
        else:
            print(f"{mode} {stage}: new {sorted(os.path.basename(x) for x in new)}; of them predicted on demand: {sorted(os.path.basename(x) for x in new & ondemand)}; from another dir than predicted: {sorted(x for x in new if os.path.basename(x) in {os.path.basename(y) for y in ondemand} and x not in ondemand)}")
PY
