#!/usr/bin/env python3
"""Collect the rows of data/jax.toml with pip alone (the package index's version lists, no wheels).

For each CPython version, the releases the index serves as Linux x86_64 wheels of
  * jax (so a release the table does not list is unknown, not absent),
  * jax-cuda12-plugin and jax-cuda13-plugin (the CUDA plugin `jax[cudaNN]` installs),
from `pip index versions PKG --python-version X --only-binary=:all: --platform manylinux...`.

Usage: python3 scripts/jax_plugins.py > data/jax.toml   (needs pip >= 21.2)
"""
import datetime
import subprocess
import sys

PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_28_x86_64"]
PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]
PACKAGES = ["jax", "jax-cuda12-plugin", "jax-cuda13-plugin"]


def versions(pkg, py):
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "index", "versions", pkg,
           "--python-version", py, "--only-binary=:all:"]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    return []


def key(v):
    return tuple(int(p) for p in v.split(".") if p.isdigit())


def main():
    today = datetime.date.today().isoformat()
    print("# JAX releases and the CUDA plugins the package index serves for them (Linux x86_64), per")
    print("# CPython version: written by scripts/jax_plugins.py (pip index versions, --only-binary=:all:")
    print(f"# --platform manylinux..._x86_64 --python-version X) on {today}. `jax[cudaNN]==V` installs")
    print("# jax-cudaNN-plugin==V: a release listed under [[jax]] but not under the plugin row has no such")
    print("# plugin for that Python; a release not listed under [[jax]] is unknown.")
    print("schema_version = 1")
    for py in PYTHONS:
        for pkg in PACKAGES:
            vs = sorted(set(versions(pkg, py)), key=key)
            if pkg == "jax":
                vs = [v for v in vs if key(v) >= (0, 4)]
            if not vs:
                continue
            print()
            print("[[jax]]" if pkg == "jax" else "[[plugin]]")
            if pkg != "jax":
                print(f'name = "{pkg}"')
                print(f"cuda_major = {pkg.removeprefix('jax-cuda').split('-')[0]}")
            print(f'python = "{py}"')
            print("releases = [" + ", ".join(f'"{v}"' for v in vs) + "]")
            print(f'source = "package index version list read with pip on {today} (pip index versions {pkg} --python-version {py} --only-binary=:all: --platform manylinux_2_27_x86_64 ...)"')


main()
