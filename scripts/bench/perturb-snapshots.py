#!/usr/bin/env python3
"""Writes N node snapshots made by perturbing the real snapshots recorded on GPU machines
(docs/device-runs), as a fleet would differ: most nodes alike, a few with an older driver, a GPU
missing, another torchvision, another system NCCL, no toolkit; every node its own GPU UUIDs,
collection time and memory in use. Deterministic (seeded).

usage: perturb-snapshots.py OUT_DIR N [SEED_SNAPSHOT..]
"""
import copy
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SEEDS = [
    "docs/device-runs/2026-11-30-h200x2/check.json",
    "docs/device-runs/2026-11-30-h200x1/deep.json",
    "docs/device-runs/2026-11-30-h200x2/deep/baseline.json",
]


def load(path):
    with open(path) as f:
        doc = json.load(f)
    return doc.get("snapshot", doc) if "findings" in doc else doc


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    seeds = [load(p if os.path.isabs(p) else os.path.join(ROOT, p)) for p in (sys.argv[3:] or DEFAULT_SEEDS)]
    os.makedirs(out, exist_ok=True)
    rng = random.Random(15)
    counts = {}
    for i in range(1, n + 1):
        # Most nodes share the first seed's stack; a tenth are of the other real machines.
        seed = seeds[0] if rng.random() < 0.9 or len(seeds) == 1 else rng.choice(seeds[1:])
        s = copy.deepcopy(seed)
        s["collected_at"] = s.get("collected_at", 1796000000) + rng.randrange(3600)
        for g in s["driver"]["gpus"]:
            g["uuid"] = "GPU-%08x-%04x-%04x-%04x-%012x" % tuple(rng.getrandbits(b) for b in (32, 16, 16, 16, 48))
            if "memory_used_mib" in g:
                g["memory_used_mib"] = rng.randrange(0, 80000)
        r = rng.random()
        kind = "same"
        if r < 0.02:
            kind = "older driver"
            s["driver"]["version"]["value"] = "570.172.08"
            s["driver"]["max_cuda"]["value"] = "12.8"
        elif r < 0.03 and len(s["driver"]["gpus"]) > 1:
            kind = "GPU missing"
            s["driver"]["gpus"].pop()
        elif r < 0.05:
            kind = "other torchvision"
            for env in s["python_envs"]:
                for p in env["packages"]:
                    if p["name"] == "torchvision":
                        p["version"] = "0.25.0"
        elif r < 0.06 and s.get("multigpu"):
            kind = "other system NCCL"
            for lib in s["multigpu"].get("nccl_libraries", []):
                if lib.get("origin") == "system":
                    lib["version"] = "2.26.2"
        elif r < 0.065:
            kind = "no toolkit"
            s["toolkit"]["toolkits"] = []
            s["toolkit"].pop("nvcc_on_path", None)
        counts[kind] = counts.get(kind, 0) + 1
        with open(os.path.join(out, "node%04d.json" % i), "w") as f:
            json.dump(s, f)
    print(json.dumps(counts, sort_keys=True))


if __name__ == "__main__":
    main()
