#!/usr/bin/env python3
"""How `cudoctor check` grows with the machine: the same real environment hard-linked into 1, 5
and 20 environments, and one environment with 100+ CUDA-bearing packages (real libraries of the
source env hard-linked under new package names), timed side by side for each binary given.

Hard links keep every file real (same bytes, same ELF, same RECORD) at no disk cost; they need
the work directory on the source env's file system (default: beside the source env).

Usage: check_scaling.py --env PREFIX [--work DIR] [--runs N] BINARY [BINARY...]
Prints a Markdown table: size, binary, median wall, CPU, max RSS, ms per library.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def site_packages(prefix):
    lib = os.path.join(prefix, "lib")
    for d in sorted(os.listdir(lib)):
        sp = os.path.join(lib, d, "site-packages")
        if d.startswith("python") and os.path.isdir(sp):
            return d, sp
    sys.exit(f"no lib/pythonX.Y/site-packages under {prefix}")


def clone_env(src, dst):
    """A venv at dst whose site-packages is a hard-linked copy of src's."""
    pyver, sp = site_packages(src)
    os.makedirs(os.path.join(dst, "bin"))
    shutil.copy(os.path.join(src, "pyvenv.cfg"), os.path.join(dst, "pyvenv.cfg"))
    for name in os.listdir(os.path.join(src, "bin")):
        if name.startswith("python"):
            target = os.path.realpath(os.path.join(src, "bin", name))
            os.symlink(target, os.path.join(dst, "bin", name))
    dst_sp = os.path.join(dst, "lib", pyver, "site-packages")
    os.makedirs(os.path.dirname(dst_sp))
    shutil.copytree(sp, dst_sp, symlinks=True, copy_function=os.link)
    return dst_sp


def add_extension_packages(dst_sp, count):
    """count distributions, each a top-level CUDA extension (a hard link of a real library that
    links torch) with its dist-info, so every one is scanned and loaded by the emulation."""
    real = []
    for root, _, files in os.walk(dst_sp):
        for f in files:
            if f.endswith(".so") and ("torchvision" in root or "torchaudio" in root):
                real.append(os.path.join(root, f))
    if not real:
        sys.exit("no torchvision/torchaudio libraries to hard-link as extensions")
    real.sort()
    tag = "cpython-%d%d-x86_64-linux-gnu" % sys.version_info[:2]
    for i in range(count):
        name = f"bench_ext_{i:03d}"
        so = f"{name}.{tag}.so"
        os.link(real[i % len(real)], os.path.join(dst_sp, so))
        info = os.path.join(dst_sp, f"{name}-1.0.dist-info")
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as m:
            m.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\nRequires-Dist: torch\n")
        with open(os.path.join(info, "RECORD"), "w") as r:
            r.write(f"{so},,\n{name}-1.0.dist-info/METADATA,,\n{name}-1.0.dist-info/RECORD,,\n")


def libraries(sp):
    return sum(
        1 for root, _, files in os.walk(sp) for f in files if f.endswith(".so") or ".so." in f
    )


def time_check(binary, envs, runs):
    args = [binary, "check", "--format", "json"]
    for e in envs:
        args += ["--python", e]
    walls, cpus, rss = [], [], 0
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm caches
    for _ in range(runs):
        t0 = time.perf_counter()
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(child.pid, 0)  # this child's own CPU time and peak RSS
        walls.append(time.perf_counter() - t0)
        cpus.append(usage.ru_utime + usage.ru_stime)
        rss = max(rss, usage.ru_maxrss)  # KiB on Linux
    return statistics.median(walls), statistics.median(cpus), rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", required=True)
    ap.add_argument("--work")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    src = os.path.abspath(a.env)
    work = tempfile.mkdtemp(prefix="cudoctor-scaling-", dir=a.work or os.path.dirname(src))
    try:
        envs = []
        for i in range(20):
            dst = os.path.join(work, f"env{i:02d}")
            clone_env(src, dst)
            envs.append(dst)
        big = os.path.join(work, "env-100-extensions")
        add_extension_packages(clone_env(src, big), 100)
        per_env = libraries(site_packages(envs[0])[1])
        sizes = [("1 env", envs[:1], per_env), ("5 envs", envs[:5], 5 * per_env),
                 ("20 envs", envs, 20 * per_env),
                 ("1 env + 100 extensions", [big], libraries(site_packages(big)[1]))]
        print(f"source env: {src}; {per_env} shared libraries per env; {os.cpu_count()} cores; "
              f"load {os.getloadavg()[0]:.2f}; median of {a.runs}")
        print()
        print("| size | libraries | binary | wall | CPU | max RSS | wall per library |")
        print("|---|---|---|---|---|---|---|")
        for label, chosen, libs in sizes:
            for b in a.binaries:
                wall, cpu, rss = time_check(b, chosen, a.runs)
                print(f"| {label} | {libs} | {os.path.basename(b)} | {wall*1e3:.0f} ms | "
                      f"{cpu*1e3:.0f} ms | {rss/1024:.0f} MiB | {wall*1e6/libs:.0f} µs |")
                sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
