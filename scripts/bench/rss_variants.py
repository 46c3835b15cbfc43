#!/usr/bin/env python3
"""Where `cudoctor check`'s peak memory goes, and what the allocator's settings do to it: plain
checks of one env and of one env with 100 CUDA extensions (check_scaling.py's construction),
interleaved across binaries and environment settings (say `GLIBC_TUNABLES=glibc.malloc.arena_max=4`),
each run's wall, CPU and max RSS; then sampled runs that poll /proc/PID/status to split the peak
into anonymous and file-backed pages and to count the threads alive at once.

Usage: rss_variants.py --env PREFIX [--work DIR] [--runs N] [--variant NAME=VAR=VALUE ...] BINARY...
Prints Markdown tables.
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
import check_scaling  # noqa: E402


def status_fields(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon", "RssFile", "Threads"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def one_run(args, env, sample):
    t0 = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    peak = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0, "Threads": 0}
    at_peak = {}
    if sample:
        while True:
            pid, _, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            s = status_fields(child.pid)
            for k, v in s.items():
                peak[k] = max(peak[k], v)
            if s.get("VmRSS", 0) >= peak["VmRSS"]:
                at_peak = s
    else:
        _, _, usage = os.wait4(child.pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    cpu = (usage.ru_utime + usage.ru_stime) * 1e3
    return wall, cpu, usage.ru_maxrss / 1024, peak, at_peak


def mapping_of(line):
    parts = line.split()
    return parts[5] if len(parts) > 5 else "[anon]"


def peak_by_mapping(args, env, runs=3):
    """The largest total Rss seen while polling /proc/PID/smaps, split by what is mapped."""
    best, best_map = 0, {}
    for _ in range(runs):
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        while not os.wait4(child.pid, os.WNOHANG)[0]:
            try:
                with open(f"/proc/{child.pid}/smaps") as f:
                    text = f.read()
            except OSError:
                continue
            per, name = {}, None
            for line in text.splitlines():
                head = line.split(maxsplit=1)[0] if line.strip() else ""
                if head and not head.endswith(":"):
                    name = mapping_of(line)
                elif head == "Rss:":
                    per[name] = per.get(name, 0) + int(line.split()[1])
            total = sum(per.values())
            if total > best:
                best, best_map = total, per
    return best, best_map


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--env", required=True)
    ap.add_argument("--work")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=VAR=VALUE: run every binary also with VAR=VALUE set")
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    src = os.path.abspath(a.env)
    variants = [("default", {})]
    for v in a.variant:
        name, var, value = v.split("=", 2)
        variants.append((name, {var: value}))
    work = tempfile.mkdtemp(prefix="cudoctor-rss-", dir=a.work or os.path.dirname(src))
    try:
        big = os.path.join(work, "env-100-extensions")
        check_scaling.add_extension_packages(check_scaling.clone_env(src, big), 100)
        envs = [("1 env", src), ("1 env + 100 extensions", big)]
        print(f"source env: {src}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}; "
              f"{a.runs} interleaved runs each")
        print()
        for label, prefix in envs:
            py = os.path.join(prefix, "bin", "python3")
            cases = [(b, n, e) for b in a.binaries for n, e in variants]
            res = {c[:2]: [] for c in cases}
            for b, n, e in cases:  # warm caches
                one_run([b, "check", "--python", py], {**os.environ, **e}, False)
            for _ in range(a.runs):
                for b, n, e in cases:
                    res[(b, n)].append(one_run([b, "check", "--python", py], {**os.environ, **e}, False))
            samples = {c[:2]: [] for c in cases}
            for _ in range(3):
                for b, n, e in cases:
                    samples[(b, n)].append(one_run([b, "check", "--python", py], {**os.environ, **e}, True))
            print(f"### {label}")
            print()
            print("| binary | setting | wall median | wall min | CPU median | max RSS median | max RSS max "
                  "| sampled: RssAnon at peak | RssFile at peak | threads at once |")
            print("|---|---|---|---|---|---|---|---|---|---|")
            for b, n, _ in cases:
                r = res[(b, n)]
                s = samples[(b, n)]
                anon = statistics.median(x[4].get("RssAnon", 0) for x in s) / 1024
                filep = statistics.median(x[4].get("RssFile", 0) for x in s) / 1024
                threads = max(x[3]["Threads"] for x in s)
                print(f"| {os.path.basename(b)} | {n} | {statistics.median(x[0] for x in r):.1f} ms "
                      f"| {min(x[0] for x in r):.1f} ms | {statistics.median(x[1] for x in r):.1f} ms "
                      f"| {statistics.median(x[2] for x in r):.1f} MiB | {max(x[2] for x in r):.1f} MiB "
                      f"| {anon:.1f} MiB | {filep:.1f} MiB | {threads} |")
            print()
            for n, e in variants:
                best, per = peak_by_mapping([a.binaries[-1], "check", "--python", py], {**os.environ, **e})
                print(f"Peak Rss by mapping, {os.path.basename(a.binaries[-1])}, {n}: {best/1024:.1f} MiB")
                print()
                for m, v in sorted(per.items(), key=lambda x: -x[1])[:12]:
                    print(f"    {v/1024:6.1f} MiB  {m}")
                print()
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
