#!/usr/bin/env bash
# On the GPU machine: `cudoctor kernels` against cuobjdump over a whole PyTorch environment.
#
#   scripts/device/kernels_bench.sh PATH/TO/cudoctor [PYTHON_ENV_PREFIX]
#
# 1. Runs `cudoctor kernels --format json` over the environment (several runs; wall-clock
#    median and peak RSS), keeps its JSON.
# 2. Runs `cuobjdump --list-elf --list-ptx` on every shared library of the environment, and
#    compares, library by library, its architecture sets with cudoctor's (family-specific `f`
#    cubins are folded, as cuobjdump prints them without the suffix). Also reports libraries
#    cuobjdump finds device code in that cudoctor did not list.
# 3. Times cuobjdump over the libraries cudoctor listed (several runs; median, peak RSS).
#
# Results go to $OUT (default ./kernels-bench-out): summary.txt, results.json, cudoctor.json,
# cuobjdump.txt. Finishes in about 3 minutes when cuobjdump takes ~34 s per pass.
set -euo pipefail

bin="${1:?usage: $0 PATH/TO/cudoctor [PYTHON_ENV_PREFIX]}"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
out="${OUT:-$PWD/kernels-bench-out}"
mkdir -p "$out"

prefix="${2:-}"
if [ -z "$prefix" ]; then
  if [ -x /opt/torch/.venv/bin/python ]; then
    prefix=/opt/torch/.venv
  else
    prefix="$(python3 -c 'import sys; print(sys.prefix)')"
  fi
fi
py="$prefix/bin/python"
[ -x "$py" ] || py="$(command -v python3)"
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

cuobjdump="${CUOBJDUMP:-}"
if [ -z "$cuobjdump" ]; then
  for c in /usr/local/cuda/bin/cuobjdump "$(command -v cuobjdump || true)"; do
    if [ -n "$c" ] && [ -x "$c" ]; then cuobjdump="$c"; break; fi
  done
fi
[ -n "$cuobjdump" ] || { echo "cuobjdump not found (set CUOBJDUMP)" >&2; exit 1; }

if "$bin" kernels --help 2>/dev/null | grep -qi "usage"; then
  mode=cudoctor
else
  mode=example
fi
echo "binary: $bin ($mode)  env: $prefix  site-packages: $site  cuobjdump: $cuobjdump" >&2

# The comparison and timing driver.
VIRTUAL_ENV="$prefix" PATH="$prefix/bin:$PATH" \
python3 - "$bin" "$mode" "$site" "$cuobjdump" "$out" <<'PY'
import json, os, statistics, subprocess, sys, time

bin_, mode, site, cuobjdump, out = sys.argv[1:6]
RUNS_CUDOCTOR = 7
RUNS_CUOBJDUMP = 2  # timed passes after the comparison pass (which is timed too)


GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
RSS_FILE = os.path.join(out, ".rss")


def run(cmd):
    """Runs cmd; returns (stdout, wall seconds, peak RSS KiB, exit status).

    Peak RSS comes from GNU time when present: a child forked from this Python would count
    the interpreter's own pages. Without it, /proc/PID/status VmHWM is sampled every 2 ms.
    """
    if GNU_TIME:
        full = [GNU_TIME, "-f", "%M", "-o", RSS_FILE] + cmd
    else:
        full = cmd
    t0 = time.perf_counter()
    p = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    chunks, peak = [], 0
    if GNU_TIME:
        chunks.append(p.stdout.read())
        p.wait()
    else:
        os.set_blocking(p.stdout.fileno(), False)
        while p.poll() is None:
            try:
                with open(f"/proc/{p.pid}/status") as st:
                    for line in st:
                        if line.startswith("VmHWM:"):
                            peak = max(peak, int(line.split()[1]))
            except OSError:
                pass
            data = p.stdout.read()
            if data:
                chunks.append(data)
            time.sleep(0.002)
        rest = p.stdout.read()
        if rest:
            chunks.append(rest)
    wall = time.perf_counter() - t0
    if GNU_TIME:
        try:
            with open(RSS_FILE) as f:
                peak = int(f.read().split()[-1])
        except (OSError, ValueError, IndexError):
            peak = 0
    return b"".join(chunks).decode("utf-8", "replace"), wall, peak, p.returncode


def cudoctor_cmd():
    if mode == "cudoctor":
        return [bin_, "kernels", "--format", "json"]
    return [bin_, site]


def fold_f(name):
    return name[:-1] if name.startswith("sm_") and name.endswith("f") else name


def parse_cuobjdump(text):
    sass, ptx = set(), set()
    for line in text.splitlines():
        if line.startswith("ELF file") or line.startswith("PTX file"):
            name = line.rsplit(":", 1)[-1].strip()
            parts = name.rsplit(".", 2)
            if len(parts) < 3:
                continue
            arch = parts[-2]
            if line.startswith("ELF"):
                sass.add(arch)
            else:
                ptx.add(arch.replace("sm_", "compute_", 1))
    return sass, ptx


# 1. cudoctor: one warm-up run, then timed runs.
report_text, _, _, rc = run(cudoctor_cmd())
if rc not in (0, 1):
    sys.exit(f"cudoctor failed with exit status {rc}")
with open(os.path.join(out, "cudoctor.json"), "w") as f:
    f.write(report_text)
report = json.loads(report_text)
libs = report.get("libraries", [])
cd_times, cd_rss = [], []
for _ in range(RUNS_CUDOCTOR):
    _, wall, rss, _ = run(cudoctor_cmd())
    cd_times.append(wall)
    cd_rss.append(rss)

# 2. Comparison pass: cuobjdump on every shared library of the env.
candidates = []
for root, dirs, files in os.walk(site):
    for fn in files:
        if fn.endswith(".so") or ".so." in fn:
            p = os.path.join(root, fn)
            if os.path.isfile(p) and not os.path.islink(p):
                candidates.append(p)
candidates.sort()
listed = {os.path.realpath(l["path"]): l for l in libs}
diffs, missed, compared = [], [], 0
dump_log = []
pass1_time, pass1_rss = 0.0, 0
for p in candidates:
    text, wall, rss, _ = run([cuobjdump, "--list-elf", "--list-ptx", p])
    sass, ptx = parse_cuobjdump(text)
    real = os.path.realpath(p)
    if real in listed:
        pass1_time += wall
        pass1_rss = max(pass1_rss, rss)
    if not sass and not ptx:
        continue
    dump_log.append(f"{p}\n  sass {sorted(sass)}\n  ptx  {sorted(ptx)}")
    lib = listed.get(real)
    if lib is None:
        missed.append(p)
        continue
    compared += 1
    ours_sass = {fold_f(a) for a in lib.get("sass", [])}
    ours_ptx = set(lib.get("ptx", []))
    if ours_sass != sass or ours_ptx != ptx or lib.get("error"):
        diffs.append({
            "path": p,
            "error": lib.get("error"),
            "sass_only_cudoctor": sorted(ours_sass - sass),
            "sass_only_cuobjdump": sorted(sass - ours_sass),
            "ptx_only_cudoctor": sorted(ours_ptx - ptx),
            "ptx_only_cuobjdump": sorted(ptx - ours_ptx),
        })
with open(os.path.join(out, "cuobjdump.txt"), "w") as f:
    f.write("\n".join(dump_log) + "\n")

# 3. Timed cuobjdump passes over the libraries cudoctor listed.
cu_times, cu_rss = [pass1_time], [pass1_rss]
for _ in range(RUNS_CUOBJDUMP):
    total, peak = 0.0, 0
    for l in libs:
        _, wall, rss, _ = run([cuobjdump, "--list-elf", "--list-ptx", l["path"]])
        total += wall
        peak = max(peak, rss)
    cu_times.append(total)
    cu_rss.append(peak)

med_cd, med_cu = statistics.median(cd_times), statistics.median(cu_times)
results = {
    "site_packages": site,
    "cudoctor": {"command": cudoctor_cmd(), "runs_s": cd_times, "median_s": med_cd,
                 "peak_rss_kib": max(cd_rss)},
    "cuobjdump": {"binary": cuobjdump, "libraries": len(libs), "runs_s": cu_times,
                  "median_s": med_cu, "peak_rss_kib": max(cu_rss),
                  "note": "sum over one process per library; peak RSS is the largest process"},
    "speedup_median": med_cu / med_cd if med_cd > 0 else None,
    "peak_rss_method": "GNU time" if GNU_TIME else "sampled /proc VmHWM",
    "libraries_listed_by_cudoctor": len(libs),
    "libraries_compared": compared,
    "libraries_with_differences": diffs,
    "libraries_missed_by_cudoctor": missed,
    "shared_libraries_checked_with_cuobjdump": len(candidates),
}
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(results, f, indent=2)
summary = [
    f"cudoctor kernels: median {med_cd:.3f} s over {len(cd_times)} runs, peak RSS {max(cd_rss) / 1024:.1f} MiB",
    f"cuobjdump --list-elf --list-ptx over the {len(libs)} libraries cudoctor lists: median {med_cu:.2f} s over {len(cu_times)} passes, peak RSS {max(cu_rss) / 1024:.1f} MiB",
    f"speed-up (median): {results['speedup_median']:.1f}x",
    f"architecture sets compared: {compared} libraries, {len(diffs)} with differences, {len(missed)} with device code cudoctor did not list",
]
for d in diffs:
    summary.append(f"  DIFF {d['path']}: {json.dumps({k: v for k, v in d.items() if v and k != 'path'})}")
for m in missed:
    summary.append(f"  MISSED {m}")
text = "\n".join(summary) + "\n"
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write(text)
if os.path.exists(RSS_FILE):
    os.remove(RSS_FILE)
print(text, end="")
PY
