#!/usr/bin/env python3
"""`cudoctor check` of two (or more) builds side by side in one run, as ratios (issue 42): the
same machine, the same minute, interleaved, so a slow machine start or another process's load
falls on every build alike.

Sizes: `check` as a user types it (no --python: every Python it finds; run from an empty
directory, so no project is walked), and `check --python` of 1, 2 and 4 environments (hard-linked
copies of --env, real files at no disk cost; see check_scaling.py). Each round runs every
(binary, size) once in an order that rotates between rounds. Prints, per binary and size, the
median wall and CPU time, then the ratios that matter: N envs against 1 env for each binary
(check with N environments should cost about what it costs with one), and each binary against
the first (before) at each size. With --timings, one CUDOCTOR_TIMINGS run of each binary on the
largest size shows what is on the critical path.

Usage: check_side_by_side.py --env PREFIX [--rounds 9] [--work DIR] [--timings] BEFORE AFTER [...]
A binary may carry variables for its runs: `PATH,CUDOCTOR_THREADS=16` (the same build with a
larger thread budget, side by side with its default).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_scaling import clone_env  # noqa: E402


def one(args, cwd, env=None):
    t0 = time.perf_counter()
    child = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    return (time.perf_counter() - t0) * 1e3, (usage.ru_utime + usage.ru_stime) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", required=True)
    ap.add_argument("--work")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--timings", action="store_true")
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    src = os.path.abspath(a.env)
    bins, envs_of, names = [], [], []
    for spec in a.binaries:
        path, *assignments = spec.split(",")
        bins.append(os.path.abspath(path))
        envs_of.append(dict(os.environ, **dict(x.split("=", 1) for x in assignments)))
        n = ",".join([os.path.basename(path)] + assignments)
        names.append(n if n not in names else spec)
    work = tempfile.mkdtemp(prefix="cudoctor-side-", dir=a.work or os.path.dirname(src))
    empty = tempfile.mkdtemp(prefix="cudoctor-cwd-")
    try:
        envs = [src]
        for i in range(3):
            dst = os.path.join(work, f"env{i}")
            clone_env(src, dst)
            envs.append(dst)
        sizes = [("as typed", [])] + [
            (f"{n} env{'s' if n > 1 else ''}", envs[:n]) for n in (1, 2, 4)
        ]

        def args(b, chosen):
            out = [b, "check"]
            for e in chosen:
                out += ["--python", e]
            return out

        for b, e in zip(bins, envs_of):  # warm the page cache
            for _, chosen in sizes:
                one(args(b, chosen), empty, e)
        cells = [(bi, si) for bi in range(len(bins)) for si in range(len(sizes))]
        res = {c: ([], []) for c in cells}
        for r in range(a.rounds):
            k = r % len(cells)
            for bi, si in cells[k:] + cells[:k]:
                w, c = one(args(bins[bi], sizes[si][1]), empty, envs_of[bi])
                res[(bi, si)][0].append(w)
                res[(bi, si)][1].append(c)
        med = {c: (statistics.median(v[0]), statistics.median(v[1])) for c, v in res.items()}
        print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.uname().nodename}; "
              f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}; env {src}; "
              f"{a.rounds} interleaved rounds, medians")
        print()
        print("| size | " + " | ".join(f"{n}: wall, CPU" for n in names) + " |")
        print("|---|" + "---|" * len(names))
        for si, (label, _) in enumerate(sizes):
            row = " | ".join(f"{med[(bi, si)][0]:.1f} ms, {med[(bi, si)][1]:.1f} ms"
                             for bi in range(len(bins)))
            print(f"| {label} | {row} |")
        print()
        print("Wall against 1 env (the same binary): 1.00 means N environments cost what one does.")
        print()
        print("| size | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        one_env = 1
        for si, (label, _) in enumerate(sizes):
            if si == one_env:
                continue
            row = " | ".join(f"{med[(bi, si)][0] / med[(bi, one_env)][0]:.2f}"
                             for bi in range(len(bins)))
            print(f"| {label} / 1 env | {row} |")
        if len(bins) > 1:
            print()
            print(f"Against {names[0]} (wall and CPU ratios, < 1 is faster):")
            print()
            print("| size | " + " | ".join(f"{n} / {names[0]}" for n in names[1:]) + " |")
            print("|---|" + "---|" * (len(names) - 1))
            for si, (label, _) in enumerate(sizes):
                row = " | ".join(
                    f"wall {med[(bi, si)][0] / med[(0, si)][0]:.2f}, CPU {med[(bi, si)][1] / med[(0, si)][1]:.2f}"
                    for bi in range(1, len(bins)))
                print(f"| {label} | {row} |")
        if a.timings:
            label, chosen = sizes[-1]
            for b, n, e in zip(bins, names, envs_of):
                print()
                print(f"CUDOCTOR_TIMINGS of {n}, {label}:")
                print("```")
                p = subprocess.run(args(b, chosen), cwd=empty, env=dict(e, CUDOCTOR_TIMINGS="1"),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                print("\n".join(l for l in p.stderr.splitlines() if "timing" in l or "memory" in l))
                print("```")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(empty, ignore_errors=True)


if __name__ == "__main__":
    main()
