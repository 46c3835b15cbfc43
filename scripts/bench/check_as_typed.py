#!/usr/bin/env python3
"""`cudoctor check` as a user types it (no options, from an empty directory), two or more builds
interleaved in one run (issue 42): per build the median wall time, CPU time and the end of the
process's last timing span (CUDOCTOR_TIMINGS: the collection's critical path without the process
start and exit), the ratios against the first build, and the median first start / end of the
spans that make the critical path. Every run has CUDOCTOR_TIMINGS=1 (its cost is a few clock reads).

Usage: check_as_typed.py [--rounds 31] BEFORE AFTER [...]
The environment is the caller's: put an environment's bin/ first on PATH to check it as typed
(the GPU machine's /opt/torch/.venv is), LD_LIBRARY_PATH for a stand-in driver.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

SPAN = re.compile(r"timing: (\S+)\s+([\d.]+) ms ->\s+([\d.]+) ms")
PATH_SPANS = ("python-find", "python", "driver", "wheels", "listing", "loader", "framework-loader", "kernels", "collect", "teardown")


def one(binary, cwd):
    env = dict(os.environ, CUDOCTOR_TIMINGS="1")
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "check"], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, _, usage = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    spans = {}
    for name, start, end in SPAN.findall(err):
        st, e = spans.get(name, (1e9, 0.0))
        spans[name] = (min(st, float(start)), max(e, float(end)))
    return wall, (usage.ru_utime + usage.ru_stime) * 1e3, spans


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    bins = [os.path.abspath(b) for b in a.binaries]
    names = [os.path.basename(b) for b in bins]
    cwd = tempfile.mkdtemp(prefix="cudoctor-typed-")
    for b in bins:  # the page cache
        one(b, cwd)
    res = {b: [] for b in bins}
    for r in range(a.rounds):
        k = r % len(bins)
        for b in bins[k:] + bins[:k]:
            res[b].append(one(b, cwd))
    os.rmdir(cwd)
    print("%d rounds, interleaved; load %s; %d cores" % (a.rounds, os.getloadavg(), os.cpu_count()))
    print()
    print("| build | wall median (min-max) | CPU median | last span's end (median) |")
    print("|---|---|---|---|")
    med = {}
    for b, n in zip(bins, names):
        w = [x[0] for x in res[b]]
        c = [x[1] for x in res[b]]
        e = [x[2].get("teardown", (0, 0))[1] for x in res[b]]
        med[b] = (statistics.median(w), statistics.median(c), statistics.median(e))
        print("| %s | %.1f ms (%.1f-%.1f) | %.1f ms | %.1f ms |" % (n, med[b][0], min(w), max(w), med[b][1], med[b][2]))
    base = bins[0]
    for b, n in zip(bins[1:], names[1:]):
        print("%s / %s: wall %.2f, CPU %.2f, last span's end %.2f" % (n, names[0], med[b][0] / med[base][0], med[b][1] / med[base][1], med[b][2] / med[base][2]))
    print()
    print("| span (median first start -> last end) | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for s in PATH_SPANS:
        cells = []
        for b in bins:
            v = [x[2][s] for x in res[b] if s in x[2]]
            cells.append("%.1f -> %.1f ms" % (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) if v else "-")
        print("| %s | %s |" % (s, " | ".join(cells)))


if __name__ == "__main__":
    main()
