#!/usr/bin/env python3
"""What torch's extension cache costs `cudoctor check` (issue 36: at most 5 ms for a cache of 20
extensions): check timed side by side, interleaved run by run, with a HOME without the cache and a HOME whose
default cache (`~/.cache/torch_extensions/pyXY_cuZZZ/<name>/<name>.so`, as torch lays out JIT
builds, each with its build.ninja and object files) holds N builds.

Each extension is a real CUDA library: one built here by nvcc (`--nvcc`, for sm_80 as
TORCH_CUDA_ARCH_LIST=8.0 builds it) or one given (`--so`), copied N times under N names (N files
of their own, as N real builds are: nothing read once serves the others).

Usage: extension_cache.py [--nvcc NVCC | --so LIB] [--gencode compute_80,sm_80] [--count 20]
       [--runs 21] [--python PY] [--tag py311_cu132 | --tag env] [--timings]
       [--compare OTHER_BINARY] BINARY
Prints a Markdown table: cache, median wall and median CPU time (user + system of check, which a
loaded machine disturbs less than wall time), the differences and the ratios. `--tag env` names the
build folder after --python's own Python and torch (the builds that environment loads: judged
with its libraries); the default folder belongs to no environment here. `--timings` also runs
each home with CUDOCTOR_TIMINGS and prints the median of each of check's phases side by side:
where the difference goes. `--compare OTHER` times another build (the one before a change) in
the same interleaved runs: the cache's cost of each, side by side.
"""
import argparse
import os
import resource
import shutil
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


def build_so(nvcc, out, gencode):
    src = os.path.join(os.path.dirname(out), "k.cu")
    with open(src, "w") as f:
        f.write(KERNEL)
    arch, code = gencode.split(",")
    subprocess.run(
        [nvcc, f"-gencode=arch={arch},code={code}", "-shared", "-Xcompiler", "-fPIC",
         "-o", out, src],
        check=True,
    )


def env_tag(python):
    """torch's build folder for an environment (`_get_build_directory`): py{XY}_cu{ZZZ} or
    py{XY}_cpu, from the interpreter's version and torch/version.py (torch is not imported)."""
    code = (
        "import sys, sysconfig, os, re\n"
        "p = os.path.join(sysconfig.get_paths()['purelib'], 'torch', 'version.py')\n"
        "m = re.search(r\"^cuda[^=]*=\\s*'([0-9.]+)'\", open(p).read(), re.M)\n"
        "cu = 'cu' + m.group(1).replace('.', '') if m else 'cpu'\n"
        "print(f'py{sys.version_info[0]}{sys.version_info[1]}_{cu}')\n"
    )
    return subprocess.run([python, "-c", code], check=True, capture_output=True,
                          text=True).stdout.strip()


def lay_out_cache(root, so, count, tag_name="py311_cu132"):
    """N builds of torch's cache: <root>/<tag>/ext_NN/{ext_NN.so,build.ninja,*.o}."""
    tag = os.path.join(root, tag_name)
    for i in range(count):
        name = f"ext_{i:02d}"
        d = os.path.join(tag, name)
        os.makedirs(d)
        shutil.copyfile(so, os.path.join(d, f"{name}.so"))
        with open(os.path.join(d, "build.ninja"), "w") as f:
            f.write(f"ninja_required_version = 1.3\n# {name}\n")
        for obj in ("main.o", "cuda.cuda.o"):
            open(os.path.join(d, obj), "wb").close()


def time_check(binary, home, python, timings=False):
    env = dict(os.environ, HOME=home, NO_COLOR="1")
    if timings:
        env["CUDOCTOR_TIMINGS"] = "1"
    else:
        env.pop("CUDOCTOR_TIMINGS", None)
    for var in ("TORCH_EXTENSIONS_DIR", "XDG_CACHE_HOME"):
        env.pop(var, None)
    args = [binary, "check", "--format", "json"]
    if python:
        args += ["--python", python]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(args, env=env, cwd=home, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE if timings else subprocess.DEVNULL)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
    if p.returncode not in (0, 1):
        sys.exit(f"check exited {p.returncode}")
    if timings:
        return wall, p.stdout, phases(p.stderr.decode(errors="replace"))
    return wall, p.stdout, cpu


def phases(stderr):
    """`cudoctor timing: NAME  A ms -> B ms (D ms)` lines: each phase's end and total span
    (a phase that runs several times, once per environment, adds up; its end is the last)."""
    out = {}
    for line in stderr.splitlines():
        if not line.startswith("cudoctor timing:"):
            continue
        words = line.split()
        try:
            name, end, dur = words[2], float(words[6]), float(words[8].lstrip("("))
        except (IndexError, ValueError):
            continue
        span, last = out.get(name, (0.0, 0.0))
        out[name] = (span + dur, max(last, end))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--nvcc")
    ap.add_argument("--so")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--python")
    ap.add_argument("--gencode", default="compute_80,sm_80")
    ap.add_argument("--tag", default="py311_cu132")
    ap.add_argument("--timings", action="store_true")
    ap.add_argument("--compare", action="append", default=[], metavar="BINARY",
                    help="another cudoctor (an older build) timed beside BINARY in the same runs")
    a = ap.parse_args()
    if a.tag == "env":
        if not a.python:
            sys.exit("--tag env needs --python")
        a.tag = env_tag(a.python)
    a.binary = os.path.abspath(a.binary)
    with tempfile.TemporaryDirectory() as work:
        so = a.so
        if not so:
            if not a.nvcc:
                sys.exit("give --nvcc (to build the extension) or --so")
            so = os.path.join(work, "k.so")
            build_so(a.nvcc, so, a.gencode)
        empty = os.path.join(work, "home-empty")
        full = os.path.join(work, "home-cache")
        for d in (empty, full):
            os.makedirs(d)
        local = so
        lay_out_cache(os.path.join(full, ".cache", "torch_extensions"), local, a.count, a.tag)
        # The cache is really found: the binaries discovery lists name every extension.
        _, out, _ = time_check(a.binary, full, a.python)
        found = out.decode(errors="replace").count(f"/{a.tag}/ext_")
        if found < a.count:
            sys.exit(f"check names {found} paths of the {a.count} extensions: not found")
        # Every binary (the one judged, then --compare's) with and without the cache, all
        # interleaved run by run, so a load that comes and goes touches each alike.
        binaries = [a.binary] + [os.path.abspath(b) for b in a.compare]
        walls = {(b, k): [] for b in binaries for k in ("none", a.count)}
        cpus = {(b, k): [] for b in binaries for k in ("none", a.count)}
        for b in binaries:
            time_check(b, empty, a.python)  # warm the page cache
        for _ in range(a.runs):
            for b in binaries:
                for key, home in (("none", empty), (a.count, full)):
                    wall, _, cpu = time_check(b, home, a.python)
                    walls[(b, key)].append(wall)
                    cpus[(b, key)].append(cpu)
        print(f"| binary | extension cache | median wall (ms, {a.runs} runs, interleaved) "
              f"| difference | ratio | median CPU (ms) | difference | ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for b in binaries:
            med = statistics.median
            base, with_cache = med(walls[(b, "none")]), med(walls[(b, a.count)])
            cbase, cwith = med(cpus[(b, "none")]), med(cpus[(b, a.count)])
            label = b if len({os.path.basename(x) for x in binaries}) < len(binaries) else os.path.basename(b)
            print(f"| {label} | none | {base:.1f} | | | {cbase:.1f} | | |")
            print(f"| {label} | {a.count} extensions | {with_cache:.1f} | "
                  f"{with_cache - base:+.1f} ms | {with_cache / base:.3f} | {cwith:.1f} | "
                  f"{cwith - cbase:+.1f} ms | {cwith / cbase:.3f} |")
        print(f"\n(folder {a.tag}, {a.gencode}; findings with the cache: {count_findings(out)})")
        if a.timings:
            runs = {"none": [], a.count: []}
            for _ in range(a.runs):
                runs["none"].append(time_check(a.binary, empty, a.python, True)[2])
                runs[a.count].append(time_check(a.binary, full, a.python, True)[2])
            names = sorted({n for r in runs.values() for p in r for n in p},
                           key=lambda n: statistics.median(
                               [p.get(n, (0, 0))[1] for p in runs["none"]]))
            print("\n| phase | span without (ms) | span with | end without | end with | end difference |")
            print("|---|---|---|---|---|---|")
            for n in names:
                med = lambda key, i: statistics.median([p.get(n, (0.0, 0.0))[i] for p in runs[key]])
                print(f"| {n} | {med('none', 0):.2f} | {med(a.count, 0):.2f} | "
                      f"{med('none', 1):.2f} | {med(a.count, 1):.2f} | "
                      f"{med(a.count, 1) - med('none', 1):+.2f} |")


def count_findings(out):
    """`code:count` of the findings in check's JSON."""
    import json
    try:
        codes = [f["code"] for f in json.loads(out)["findings"]]
    except (ValueError, KeyError):
        return "?"
    return ", ".join(f"{c}x{codes.count(c)}" for c in sorted(set(codes)))


if __name__ == "__main__":
    main()
