#!/usr/bin/env python3
"""What torch's extension cache costs `cudoctor check` (issue 36: at most 5 ms for a cache of 20
extensions): check timed side by side, interleaved run by run, with a HOME without the cache and a HOME whose
default cache (`~/.cache/torch_extensions/pyXY_cuZZZ/<name>/<name>.so`, as torch lays out JIT
builds, each with its build.ninja and object files) holds N builds.

Each extension is a real CUDA library: one built here by nvcc (`--nvcc`, for sm_80 as
TORCH_CUDA_ARCH_LIST=8.0 builds it) or one given (`--so`), hard-linked N times under N names.

Usage: extension_cache.py [--nvcc NVCC | --so LIB] [--count 20] [--runs 21] [--python PY] BINARY
Prints a Markdown table: cache, median wall, the difference and the ratio.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

KERNEL = """
__global__ void add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
extern "C" int launch(float* x, int n) {
    add_one<<<(n + 255) / 256, 256>>>(x, n);
    return (int)cudaGetLastError();
}
"""


def build_so(nvcc, out):
    src = os.path.join(os.path.dirname(out), "k.cu")
    with open(src, "w") as f:
        f.write(KERNEL)
    subprocess.run(
        [nvcc, "-gencode=arch=compute_80,code=sm_80", "-shared", "-Xcompiler", "-fPIC",
         "-o", out, src],
        check=True,
    )


def lay_out_cache(root, so, count):
    """N builds of torch's cache: <root>/py311_cu132/ext_NN/{ext_NN.so,build.ninja,*.o}."""
    tag = os.path.join(root, "py311_cu132")
    for i in range(count):
        name = f"ext_{i:02d}"
        d = os.path.join(tag, name)
        os.makedirs(d)
        os.link(so, os.path.join(d, f"{name}.so"))
        with open(os.path.join(d, "build.ninja"), "w") as f:
            f.write(f"ninja_required_version = 1.3\n# {name}\n")
        for obj in ("main.o", "cuda.cuda.o"):
            open(os.path.join(d, obj), "wb").close()


def time_check(binary, home, python):
    env = dict(os.environ, HOME=home, NO_COLOR="1")
    for var in ("TORCH_EXTENSIONS_DIR", "XDG_CACHE_HOME"):
        env.pop(var, None)
    args = [binary, "check", "--format", "json"]
    if python:
        args += ["--python", python]
    t0 = time.perf_counter()
    p = subprocess.run(args, env=env, cwd=home, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = (time.perf_counter() - t0) * 1000
    if p.returncode not in (0, 1):
        sys.exit(f"check exited {p.returncode}")
    return wall, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--nvcc")
    ap.add_argument("--so")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--python")
    a = ap.parse_args()
    a.binary = os.path.abspath(a.binary)
    with tempfile.TemporaryDirectory() as work:
        so = a.so
        if not so:
            if not a.nvcc:
                sys.exit("give --nvcc (to build the extension) or --so")
            so = os.path.join(work, "k.so")
            build_so(a.nvcc, so)
        empty = os.path.join(work, "home-empty")
        full = os.path.join(work, "home-cache")
        for d in (empty, full):
            os.makedirs(d)
        # Hard links need the same file system: copy the library in once.
        local = os.path.join(work, "ext.so")
        with open(so, "rb") as src, open(local, "wb") as dst:
            dst.write(src.read())
        lay_out_cache(os.path.join(full, ".cache", "torch_extensions"), local, a.count)
        # The cache is really found: the binaries discovery lists name every extension.
        _, out = time_check(a.binary, full, a.python)
        found = out.decode(errors="replace").count("/py311_cu132/ext_")
        if found < a.count:
            sys.exit(f"check names {found} paths of the {a.count} extensions: not found")
        walls = {"none": [], a.count: []}
        time_check(a.binary, empty, a.python)  # warm the page cache
        for _ in range(a.runs):
            walls["none"].append(time_check(a.binary, empty, a.python)[0])
            walls[a.count].append(time_check(a.binary, full, a.python)[0])
        base = statistics.median(walls["none"])
        with_cache = statistics.median(walls[a.count])
        print(f"| extension cache | median wall (ms, {a.runs} runs, interleaved) | difference | ratio |")
        print("|---|---|---|---|")
        print(f"| none | {base:.1f} | | |")
        print(f"| {a.count} extensions | {with_cache:.1f} | {with_cache - base:+.1f} ms | {with_cache / base:.3f} |")


if __name__ == "__main__":
    main()
