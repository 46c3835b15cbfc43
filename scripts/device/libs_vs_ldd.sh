#!/usr/bin/env bash
# Compare `cudoctor libs` (the loader emulation) with the real `ldd` on torch's libraries.
#
# Usage: scripts/device/libs_vs_ldd.sh CUDOCTOR_BINARY [PYTHON]
#   CUDOCTOR_BINARY  the cudoctor CLI (it runs `libs --format json PATH...`)
#   PYTHON           the interpreter of the torch environment (default: python3 on PATH); only
#                    used here to locate torch, never by cudoctor itself.
#
# For every torch/lib/*.so* and torch/_C*.so it runs both tools (each file alone, as `ldd FILE`
# does, with this shell's LD_LIBRARY_PATH), compares the resolved path of every library (all
# of them, and the CUDA ones separately), then loads torch/_C*.so the way `import torch` does
# with symbol checking and records the timing. Results go to $OUT (default ./libs-vs-ldd-out):
# summary.txt, summary.json, and the raw outputs under raw/. Exit status 0 when every CUDA
# library resolves identically. Takes a few seconds; well under 2 minutes.
set -u -o pipefail

CUDOCTOR=${1:?usage: $0 CUDOCTOR_BINARY [PYTHON]}
PY=${2:-python3}
OUT=${OUT:-$PWD/libs-vs-ldd-out}
mkdir -p "$OUT/raw/cudoctor" "$OUT/raw/ldd"

TORCH_DIR=$("$PY" -c 'import importlib.util as u; print(u.find_spec("torch").submodule_search_locations[0])') || {
    echo "torch not found for $PY" | tee "$OUT/summary.txt"
    exit 2
}
echo "torch: $TORCH_DIR" >"$OUT/raw/context.txt"
{
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    uname -a
    ldd --version | head -1
} >>"$OUT/raw/context.txt"

shopt -s nullglob
FILES=("$TORCH_DIR"/_C*.so "$TORCH_DIR"/lib/*.so "$TORCH_DIR"/lib/*.so.*)
if [ ${#FILES[@]} -eq 0 ]; then
    echo "no libraries under $TORCH_DIR" | tee "$OUT/summary.txt"
    exit 2
fi

: >"$OUT/raw/timings.tsv"
for f in "${FILES[@]}"; do
    b=$(basename "$f")
    t0=$(date +%s%N)
    "$CUDOCTOR" libs --format json "$f" >"$OUT/raw/cudoctor/$b.json" 2>"$OUT/raw/cudoctor/$b.stderr"
    echo "cudoctor_rc=$?" >>"$OUT/raw/cudoctor/$b.stderr"
    t1=$(date +%s%N)
    ldd "$f" >"$OUT/raw/ldd/$b.txt" 2>&1
    t2=$(date +%s%N)
    printf '%s\t%d\t%d\n' "$b" $(((t1 - t0) / 1000000)) $(((t2 - t1) / 1000000)) >>"$OUT/raw/timings.tsv"
done

# The process of `import torch`: _C.so with its undefined symbols checked.
C_SO=("$TORCH_DIR"/_C*.so)
t0=$(date +%s%N)
"$CUDOCTOR" libs --format json "${C_SO[0]}" >"$OUT/raw/import_torch.json" 2>"$OUT/raw/import_torch.stderr"
t1=$(date +%s%N)
echo "import_torch_ms=$(((t1 - t0) / 1000000))" >>"$OUT/raw/context.txt"

"$PY" - "$OUT" "${FILES[@]}" <<'PYEOF'
import json, os, re, sys

out = sys.argv[1]
files = sys.argv[2:]
CUDA = re.compile(r"^lib(cudart|cudnn(_\w+)?|nccl|cublas|cublasLt|cufft|cufftw|curand|cusparse|cusparseLt|"
                  r"cusolver|cusolverMg|nvrtc|nvrtc-builtins|nvJitLink|cupti|cufile|nvshmem_host|cuda|nvidia-ml)"
                  r"(\.alt)?\.so")

def ldd_lines(path):
    objs = []
    for line in open(path, errors="replace"):
        if not line.startswith("\t"):
            continue
        body = line[1:].rstrip("\n")
        if " => " in body:
            name, rest = body.split(" => ", 1)
            if rest.strip() == "not found":
                objs.append((name, None))
            else:
                objs.append((name, rest.rsplit(" (0x", 1)[0]))
        elif " (0x" in body:
            name = body.rsplit(" (0x", 1)[0]
            if not name.startswith("linux-vdso") and not name.startswith("linux-gate"):
                objs.append((name, name))
    return objs

VIA = {}

def ours_lines(report):
    VIA.clear()
    # ldd's order: breadth-first load order; a "not found" placeholder where each missing
    # library was searched; the dynamic loader right after the last real object before it.
    objs = report.get("objects", [])
    seen = set()
    view = []
    last_real = -1
    if objs:
        seen.add(objs[0]["path"])
    for o in objs:
        for n in o.get("needed", []):
            p = n.get("resolved")
            if p is None:
                view.append((n["name"], None))
                VIA.setdefault(n["name"], "missing")
            elif p not in seen:
                VIA.setdefault(n["name"], n["via"])
                seen.add(p)
                if n["name"].startswith("ld-linux") and os.path.basename(p) == n["name"]:
                    view.insert(last_real + 1, (p, p))
                    last_real += 1
                else:
                    view.append((n["name"], p))
                    last_real = len(view) - 1
    return view

results = []
all_ok = cuda_ok = True
for f in files:
    b = os.path.basename(f)
    entry = {"file": f}
    try:
        report = json.load(open(os.path.join(out, "raw/cudoctor", b + ".json")))
    except Exception as e:
        entry.update(status="cudoctor-failed", error=str(e))
        results.append(entry)
        all_ok = cuda_ok = False
        continue
    ours = ours_lines(report)
    real = ldd_lines(os.path.join(out, "raw/ldd", b + ".txt"))
    cuda_ours = [x for x in ours if CUDA.match(os.path.basename(x[0]))]
    cuda_real = [x for x in real if CUDA.match(os.path.basename(x[0]))]
    entry["identical"] = ours == real
    entry["cuda_identical"] = sorted(cuda_ours, key=str) == sorted(cuda_real, key=str)
    entry["cuda"] = []
    for n, p in cuda_ours:
        c = {"name": n, "cudoctor": p, "via": VIA.get(n, "?")}
        if c not in entry["cuda"]:
            entry["cuda"].append(c)
    if not entry["identical"]:
        entry["only_cudoctor"] = [x for x in ours if x not in real]
        entry["only_ldd"] = [x for x in real if x not in ours]
    all_ok &= entry["identical"]
    cuda_ok &= entry["cuda_identical"]
    results.append(entry)

imp = {}
try:
    r = json.load(open(os.path.join(out, "raw/import_torch.json")))
    imp = {
        "objects": len(r["objects"]),
        "missing": [(o["path"], n["name"]) for o in r["objects"] for n in o["needed"] if n["via"] == "missing"],
        "unresolved_symbols": {o["path"]: len(o["unresolved_symbols"]) for o in r["objects"] if o["unresolved_symbols"]},
        "cuda_loaded": sorted({o["path"] for o in r["objects"] if CUDA.match(os.path.basename(o.get("soname") or o["path"]))}),
    }
except Exception as e:
    imp = {"error": str(e)}

summary = {"files": len(results), "all_identical": all_ok, "cuda_identical": cuda_ok, "results": results, "import_torch": imp}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
with open(os.path.join(out, "summary.txt"), "w") as t:
    t.write(f"files compared: {len(results)}\n")
    t.write(f"every library identical to ldd: {all_ok}\n")
    t.write(f"every CUDA library identical to ldd: {cuda_ok}\n\n")
    for e in results:
        mark = "OK " if e.get("identical") else ("CUDA-OK " if e.get("cuda_identical") else "DIFF")
        t.write(f"{mark} {e['file']}\n")
        for c in e.get("cuda", []):
            t.write(f"      {c['name']} -> {c['cudoctor'] or 'not found'} (via {c['via']})\n")
        for k in ("only_cudoctor", "only_ldd", "error"):
            if e.get(k):
                t.write(f"      {k}: {e[k]}\n")
    t.write("\nimport torch (torch/_C*.so loaded into one process, symbols checked):\n")
    t.write(json.dumps(imp, indent=2) + "\n")
    t.write("\ntimings (file, cudoctor ms, ldd ms):\n" + open(os.path.join(out, "raw/timings.tsv")).read())
print(open(os.path.join(out, "summary.txt")).read())
sys.exit(0 if cuda_ok else 1)
PYEOF
