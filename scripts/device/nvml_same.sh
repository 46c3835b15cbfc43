#!/usr/bin/env bash
# Checks on a GPU machine that two cudoctor binaries read the same facts through NVML: the driver
# layer (driver version, CUDA ceiling, per-GPU facts) and the multi-GPU topology (pairs, P2P,
# NVLink links). Meant for a change to the NVML loading code: build the binary before and after
# it and pass both. Values that move between two runs (memory in use, processes) are left out.
# Usage: OUT=DIR scripts/device/nvml_same.sh OLD_BINARY NEW_BINARY
# Writes $OUT/nvml_same.txt and both snapshots; exits 1 when the facts differ.
set -uo pipefail
old=$(readlink -f "${1:?old cudoctor binary}")
new=$(readlink -f "${2:?new cudoctor binary}")
out=${OUT:?set OUT}
mkdir -p "$out"
"$old" check --save "$out/old.json" >/dev/null 2>&1
"$new" check --save "$out/new.json" >/dev/null 2>&1
python3 - "$out/old.json" "$out/new.json" >"$out/nvml_same.txt" 2>&1 <<'EOF'
import json, sys

def nvml_facts(path):
    s = json.load(open(path))
    d = s.get("driver") or {}
    gpus = [
        {k: v for k, v in g.items() if k != "memory_used_mib"}
        for g in d.get("gpus", [])
    ]
    attempts = [
        a for a in d.get("attempts", []) + (s.get("multigpu") or {}).get("attempts", [])
        if a.get("source", "").startswith("nvml")
    ]
    return {
        "version": d.get("version"),
        "max_cuda": d.get("max_cuda"),
        "gpus": gpus,
        "attempts": [(a.get("source"), a.get("outcome"), a.get("detail")) for a in attempts],
        "topology": (s.get("multigpu") or {}).get("topology"),
    }

old, new = (nvml_facts(p) for p in sys.argv[1:3])
print("old:", json.dumps(old, indent=1))
same = old == new
if not same:
    for k in old:
        if old[k] != new[k]:
            print(f"DIFFERS: {k}\n  old: {json.dumps(old[k])}\n  new: {json.dumps(new[k])}")
print("SAME" if same else "DIFFERENT")
sys.exit(0 if same else 1)
EOF
rc=$?
tail -n 1 "$out/nvml_same.txt"
exit $rc
