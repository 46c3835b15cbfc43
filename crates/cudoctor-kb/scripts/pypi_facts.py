#!/usr/bin/env python3
"""Collect the PyPI facts behind data/torch.toml with pip alone (metadata only, no large wheels).

For torch, torchvision and torchaudio it records:
  * which releases PyPI serves Linux x86_64 wheels of, per CPython version (incl. free-threaded),
    from `pip index versions PKG --python-version X --only-binary=:all: --platform ...`;
  * each release's metadata (Requires-Python, Requires-Dist, the wheel pip picked) from
    `pip install --dry-run --no-deps --ignore-installed --report`, which reads the wheel's
    METADATA file without fetching the wheel when the index serves it separately.
torch's CUDA requirements (nvidia-*-cu12 pins, or cuda-toolkit==13.x) reveal the CUDA runtime of
the PyPI default build; torchvision's and torchaudio's `Requires-Dist: torch==X` pin the pairs.

Usage: python3 scripts/pypi_facts.py OUT.json [PACKAGE [OLDEST]]
  PACKAGE: torch, torchvision or torchaudio (default: all three); OLDEST: the oldest release whose
  metadata is read, e.g. 2.6 (each read costs pip a parse of the package's whole index page, tens
  of seconds for torch). Python support is listed for every release either way. Needs pip >= 22.2.
"""
import json
import subprocess
import sys
import tempfile

PLATFORMS = [
    "manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64",
    "manylinux_2_17_x86_64", "manylinux_2_27_x86_64", "manylinux_2_28_x86_64",
]
PYTHONS = ["3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"]
FREE_THREADED = ["3.13", "3.14", "3.15"]
PACKAGES = ["torch", "torchvision", "torchaudio"]
# Oldest release of each package worth a metadata look (torch 1.9 and its companions).
OLDEST = {"torch": (1, 9), "torchvision": (0, 10), "torchaudio": (0, 9)}


def pip(*args):
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def platform_args():
    out = ["--only-binary=:all:"]
    for p in PLATFORMS:
        out += ["--platform", p]
    return out


def versions_for(pkg, py, abi=None):
    args = ["index", "versions", pkg, "--python-version", py, *platform_args()]
    if abi:
        args += ["--abi", abi, "--implementation", "cp"]
    r = pip(*args)
    for line in r.stdout.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    return []


def key(v):
    return tuple(int(p) for p in v.split(".") if p.isdigit())


def metadata(pkg, version, pythons):
    """Metadata of pkg==version as pip resolves it for the first Python that has a wheel."""
    for py in pythons:
        with tempfile.TemporaryDirectory() as tmp, tempfile.NamedTemporaryFile(suffix=".json") as rep:
            r = pip("install", "--dry-run", "--no-deps", "--ignore-installed", "--quiet",
                    "--target", tmp, "--python-version", py, *platform_args(),
                    "--report", rep.name, f"{pkg}=={version}")
            if r.returncode != 0:
                continue
            report = json.load(open(rep.name))
        for item in report.get("install", []):
            m = item.get("metadata", {})
            return {
                "python_used": py,
                "wheel": item.get("download_info", {}).get("url", "").rsplit("/", 1)[-1],
                "requires_python": m.get("requires_python"),
                "requires_dist": m.get("requires_dist", []),
            }
    return None


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else "pypi_facts.json"
    packages = [sys.argv[2]] if len(sys.argv) > 2 else PACKAGES
    if len(sys.argv) > 3:
        for pkg in packages:
            OLDEST[pkg] = key(sys.argv[3])[:2]
    facts = {"pip": pip("--version").stdout.strip(), "packages": {}}
    for pkg in packages:
        per_python = {}
        for py in PYTHONS:
            per_python[py] = versions_for(pkg, py)
        for py in FREE_THREADED:
            per_python[py + "t"] = versions_for(pkg, py, abi="cp" + py.replace(".", "") + "t")
        releases = sorted({v for vs in per_python.values() for v in vs}, key=key)
        rows = {}
        for v in releases:
            pythons = [py for py, vs in per_python.items() if v in vs]
            plain = [p for p in pythons if not p.endswith("t")]
            meta = metadata(pkg, v, plain[::-1]) if key(v)[:2] >= OLDEST[pkg] else None
            rows[v] = {"python": pythons, "metadata": meta}
            print(pkg, v, pythons, file=sys.stderr, flush=True)
        facts["packages"][pkg] = rows
    with open(out_path, "w") as f:
        json.dump(facts, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
