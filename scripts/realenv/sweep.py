#!/usr/bin/env python3
"""The sweep: each package of scripts/realenv/sweep-packages.txt installed into its own uv env,
judged by cudoctor (check, and the --gpu what-ifs), its core modules' kernel images listed by
cuobjdump as the truth, the env deleted; one table in docs/sweep.md. Run through sweep.sh.

Only the standard library; every child has a timeout. Nothing here runs by default: the tests
never call it.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys

GPUS = ["sm_80", "sm_86", "sm_90", "sm_120"]
# On this machine (no driver, a container without GPUs) these are true and expected.
DRIVER_CODES = {"DRV001", "PLT001"}
KERNEL_CODES = {"KRN001", "KRN002"}


def run(cmd, timeout, env=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           start_new_session=True)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout}s"


def read_list(path):
    rows = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        while len(parts) < 5:
            parts.append("")
        name, args, core, note, expect = parts[:5]
        rows.append({"name": name, "args": args.split(), "core": core, "note": note,
                     "expect": expect.split()[0].split(",") if expect else [],
                     "expect_why": expect.split(" ", 1)[1] if " " in expect else ""})
    return rows


def site_packages(env):
    found = glob.glob(os.path.join(env, "lib", "python3*", "site-packages"))
    return found[0] if found else None


def dists(site):
    """name -> (version, set of files relative to site) from every dist-info's RECORD."""
    out = {}
    for d in glob.glob(os.path.join(site, "*.dist-info")):
        meta = os.path.join(d, "METADATA")
        name = version = None
        try:
            for line in open(meta, errors="replace"):
                if line.startswith("Name:") and name is None:
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("Version:") and version is None:
                    version = line.split(":", 1)[1].strip()
                elif not line.strip():
                    break
        except OSError:
            continue
        files = set()
        try:
            for line in open(os.path.join(d, "RECORD"), errors="replace"):
                files.add(os.path.normpath(line.split(",", 1)[0]))
        except OSError:
            pass
        if name:
            out[norm(name)] = (version, files)
    return out


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def cuobjdump_listing(tool, path, fallback=None):
    """cuobjdump's (sass, ptx, which cuobjdump) of one file. cuobjdump 13.x stops with "Invalid
    ELF" on some CUDA-12-era fat binaries (bitsandbytes' libbitsandbytes_cuda121.so lists sm_60
    only; CUDA 12's lists its seven cubins): then the CUDA-12 cuobjdump lists it."""
    rc, out, err = run([tool, "--list-elf", "--list-ptx", path], 600)
    used = "cuobjdump"
    if "fatal" in err and fallback:
        rc, out, err = run([fallback, "--list-elf", "--list-ptx", path], 600)
        used = "cuobjdump-cu12"
    sass, ptx = set(), set()
    for line in out.splitlines():
        if line.startswith("ELF file"):
            kind = sass
        elif line.startswith("PTX file"):
            kind = ptx
        else:
            continue
        name = line.rsplit(":", 1)[-1].strip()
        parts = name.rsplit(".", 2)
        if len(parts) == 3:
            kind.add(parts[1])
    return sorted(sass), sorted(ptx), used


def parse_arch(a):
    m = re.match(r"(?:sm|compute)_(\d+?)(\d)([af]?)$", a)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), m.group(3)


def runs_on(sass, ptx, gpu):
    """cuobjdump's truth for one library on one GPU: 'sass', 'ptx' (JIT) or None."""
    g = parse_arch(gpu)
    for s in sass:
        a = parse_arch(s)
        if not a:
            continue
        if a[2] == "a":
            if (a[0], a[1]) == g[:2]:
                return "sass"
        elif a[0] == g[0] and a[1] <= g[1]:
            # Plain and family-specific cubins run on their major with a minor at least theirs.
            return "sass"
    for p in ptx:
        a = parse_arch(p)
        if not a:
            continue
        if a[2] == "a":
            if (a[0], a[1]) == g[:2]:
                return "ptx"
        elif a[2] == "f":
            if a[0] == g[0] and a[1] <= g[1]:
                return "ptx"
        elif (a[0], a[1]) <= g[:2]:
            return "ptx"
    return None


def truth(libs, mode, gpu):
    """The package's core modules on one GPU: 'runs', 'ptx', 'none' or '-' (no kernels)."""
    with_images = [l for l in libs if l["sass"] or l["ptx"]]
    if not with_images:
        return "-"
    verdicts = [runs_on(l["sass"], l["ptx"], gpu) for l in with_images]
    if mode == "any":
        if "sass" in verdicts:
            return "runs"
        return "ptx" if "ptx" in verdicts else "none"
    if any(v is None for v in verdicts):
        return "none"
    return "ptx" if "ptx" in verdicts else "runs"


def cudoctor_verdict(findings, owners):
    """cudoctor's kernel verdict for the package: 'none' (KRN001/KRN002 error naming it),
    'ptx' (a warning that it runs through PTX only), 'runs' otherwise."""
    verdict = "runs"
    for f in findings:
        if f.get("code") not in KERNEL_CODES:
            continue
        names = set()
        for a in f.get("about") or []:
            if "package" in a:
                names.add(norm(a["package"].get("name", "")))
            if "torch_build" in a:
                names.add("torch")
        if not names & owners:
            continue
        if f.get("severity") == "error":
            return "none"
        if f.get("severity") == "warning" and "PTX" in f.get("title", ""):
            verdict = "ptx"
    return verdict


def check(cudoctor, python, gpu=None):
    cmd = [cudoctor, "check", "--format", "json", "--python", python]
    if gpu:
        cmd += ["--gpu", gpu]
    rc, out, err = run(cmd, 600)
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        return {"error": (err or out)[-400:], "findings": []}


def severity_summary(findings):
    by = {"error": [], "warning": [], "info": []}
    for f in findings:
        by.setdefault(f.get("severity", "info"), []).append(f.get("code"))
    return by


def judge(row, args, log):
    name = row["name"]
    env = os.path.join(args.envs, name)
    result = {"name": name, "install": " ".join(row["args"]), "note": row["note"]}
    shutil.rmtree(env, ignore_errors=True)
    rc, out, err = run(["uv", "venv", "-q", "--python", args.python, env], 300)
    if rc != 0:
        result["status"] = "venv failed: " + err.strip()[-200:]
        return result
    uvenv = dict(os.environ, VIRTUAL_ENV=env)
    rc, out, err = run(["uv", "pip", "install", "-q"] + row["args"], args.install_timeout, env=uvenv)
    log.write(f"== {name}: uv pip install {' '.join(row['args'])} rc={rc}\n{err[-3000:]}\n")
    if rc != 0:
        tail = err.strip().splitlines()
        why = next((l for l in tail if "no wheels" in l.lower() or "only-binary" in l.lower()
                    or "no matching distribution" in l.lower()), tail[-1] if tail else "")
        result["status"] = "not installable: " + why.strip()[-240:]
        shutil.rmtree(env, ignore_errors=True)
        return result
    site = site_packages(env)
    ds = dists(site)
    # The package judged: the last requirement of the line (torch comes first where it is named).
    main = norm(re.split(r"[\[=<>]", row["args"][-1])[0])
    result["version"] = ds.get(main, ("?",))[0]
    result["torch"] = ds.get("torch", (None,))[0]
    rc, out, err = run(["uv", "pip", "check"], 120, env=uvenv)
    result["pip_check"] = "ok" if rc == 0 else (out + err).strip().splitlines()[-1][:200]
    result["du_mb"] = int(run(["du", "-sm", env], 300)[1].split()[0] or 0)

    base = check(args.cudoctor, os.path.join(env, "bin", "python"))
    if "error" in base:
        result["check_error"] = base["error"]
    fs = base.get("findings", [])
    result["cudoctor"] = (base.get("build") or {}).get("commit")
    result["frameworks"] = [
        f"{b['framework']} {b['cuda']['major']}" + (f".{b['cuda']['minor']}" if b["cuda"].get("minor") is not None else ".x")
        if b.get("cuda") else f"{b['framework']} (no CUDA)"
        for e in (base.get("snapshot") or {}).get("python_envs", [])
        for b in e.get("frameworks", [])
    ]
    result["findings"] = severity_summary(fs)
    result["false_alarms"] = [
        f"{f['code']} {f['severity']}: {f.get('title', '')}"[:300]
        for f in fs
        if f.get("severity") in ("error", "warning") and f.get("code") not in DRIVER_CODES
    ]

    # The core modules: their owners (dists), cuobjdump's listing, cudoctor's listing.
    core = row["core"]
    mode = "all"
    libs = []
    if core.startswith("any:"):
        mode, core = "any", core[4:]
    if core == "auto" or core.startswith("auto:"):
        # Every shared object the judged distribution (or the one named after "auto:")
        # installs (its RECORD): those cuobjdump lists kernel images of are its core modules.
        dist = norm(core[5:]) if core.startswith("auto:") else main
        core = " ".join(sorted(f for f in ds.get(dist, (None, set()))[1]
                               if re.search(r"\.so(\.[0-9.]+)?$", f)))
        result["core_auto"] = True
    if core and core != "-":
        seen = set()
        for pat in core.split():
            matches = sorted(glob.glob(os.path.join(site, glob.escape(pat) if result.get("core_auto") else pat), recursive=True))
            if not matches:
                result.setdefault("core_missing", []).append(pat)
            for p in matches:
                if os.path.isfile(p) and not os.path.islink(p) and p not in seen:
                    seen.add(p)
                    sass, ptx, used = cuobjdump_listing(args.cuobjdump, p, args.cuobjdump12)
                    lib = {"path": os.path.relpath(p, site), "sass": sass, "ptx": ptx}
                    if used != "cuobjdump":
                        lib["listed_by"] = used
                    if result.get("core_auto") and not (sass or ptx):
                        continue
                    libs.append(lib)
    result["core"] = libs
    result["core_mode"] = mode
    owners = set()
    for lib in libs:
        for dn, (_, files) in ds.items():
            if lib["path"] in files:
                owners.add(dn)
    if not owners:
        owners.add(main)
    result["owners"] = sorted(owners)

    # cudoctor's own reading of the same files (the snapshot's kernel images).
    ours = {}
    for k in (base.get("snapshot", {}).get("kernel_images") or {}).get("libraries", []):
        ours[os.path.realpath(k["path"])] = k
    mism = []
    for lib in libs:
        k = ours.get(os.path.realpath(os.path.join(site, lib["path"])))
        if k is None:
            if lib["sass"] or lib["ptx"]:
                mism.append(f"{lib['path']}: not read by cudoctor")
            continue
        s = sorted({x.rstrip("f") for x in k.get("sass", [])})
        p = sorted({x.replace("compute_", "sm_").rstrip("f") for x in k.get("ptx", [])})
        # Family-specific images (`sm_100f`) are their architecture's, on both sides.
        theirs_s = sorted({x.rstrip("f") for x in lib["sass"]})
        theirs_p = sorted({x.rstrip("f") for x in lib["ptx"]})
        if s != theirs_s or p != theirs_p:
            mism.append(f"{lib['path']}: cudoctor sass {s} ptx {p}, cuobjdump sass {lib['sass']} ptx {lib['ptx']}")
    result["image_mismatches"] = mism

    result["whatif"] = {}
    for gpu in GPUS:
        j = check(args.cudoctor, os.path.join(env, "bin", "python"), gpu)
        fs = j.get("findings", [])
        ours_v = cudoctor_verdict(fs, owners)
        true_v = truth(libs, mode, gpu)
        agree = ours_v == true_v or (true_v == "-" and ours_v == "runs")
        extra = [
            f"{f['code']} {f['severity']}: {f.get('title', '')}"[:300]
            for f in fs
            if f.get("severity") in ("error", "warning")
            and f.get("code") not in DRIVER_CODES | KERNEL_CODES
        ]
        result["whatif"][gpu] = {"cudoctor": ours_v, "cuobjdump": true_v, "agree": agree,
                                 "other": extra}
    if args.capture:
        capture(env, site, os.path.join(args.capture, name))
    if not args.keep:
        shutil.rmtree(env, ignore_errors=True)
    result["status"] = "judged"
    return result


# The distributions of the frameworks cudoctor reads from data, and the files it reads of
# them beside their dist-info (collect/src/python/frameworks.rs TABLE).
CAPTURED_DISTS = re.compile(
    r"^(paddlepaddle_gpu|tensorrt_cu\d+.*|cudf_cu\d+|libcudf_cu\d+|rmm_cu\d+|ctranslate2|"
    r"llama_cpp_python|numba_cuda|cuda_bindings|nvidia_dali_cuda\d+|transformer_engine_cu\d+)-")
CAPTURED_FILES = ["paddle/version/__init__.py"]


def capture(env, site, dst):
    """A fixture of what cudoctor reads of the env's data-read frameworks: pyvenv.cfg, their
    dist-info METADATA headers and the RECORD lines of shared objects, and version modules
    (as scripts/realenv/capture-framework-fixtures.sh does for the real-env tier)."""
    names = [d for d in os.listdir(site) if d.endswith(".dist-info") and CAPTURED_DISTS.match(d)]
    # cuda-bindings alone (torch's dependency) is no framework: only beside numba-cuda.
    if not [d for d in names if not d.startswith("cuda_bindings-")]:
        return
    shutil.rmtree(dst, ignore_errors=True)
    rel = os.path.relpath(site, env)
    os.makedirs(os.path.join(dst, "venv", rel))
    with open(os.path.join(env, "pyvenv.cfg")) as f, \
            open(os.path.join(dst, "venv", "pyvenv.cfg"), "w") as g:
        g.writelines(l for l in f if not l.startswith("home"))
    for d in names:
        out = os.path.join(dst, "venv", rel, d)
        os.makedirs(out)
        with open(os.path.join(site, d, "METADATA"), errors="replace") as f, \
                open(os.path.join(out, "METADATA"), "w") as g:
            for line in f:
                if not line.strip():
                    break
                g.write(line)
        with open(os.path.join(site, d, "RECORD"), errors="replace") as f, \
                open(os.path.join(out, "RECORD"), "w") as g:
            g.writelines(l for l in f if re.search(r"\.so(\.|,)", l))
    for rel_file in CAPTURED_FILES:
        src = os.path.join(site, rel_file)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dst, "venv", rel, rel_file)), exist_ok=True)
            shutil.copy(src, os.path.join(dst, "venv", rel, rel_file))


def fmt_findings(by):
    parts = []
    for sev, letter in (("error", "E"), ("warning", "W"), ("info", "I")):
        codes = by.get(sev, [])
        if codes:
            parts.append(f"{letter}{len(codes)} ({', '.join(sorted(codes))})")
    return "; ".join(parts) or "none"


def write_table(results, rows, path, started, finished):
    by_name = {r["name"]: r for r in rows}
    lines = [
        "# The sweep: real CUDA packages judged by cudoctor",
        "",
        "Generated by `scripts/realenv/sweep.sh` from the list in `scripts/realenv/sweep-packages.txt`",
        "(which says how the packages were chosen). Each package is installed with uv into its own",
        "environment (the resolver picks a matching set), then judged by `cudoctor check --format json",
        "--python ENV/bin/python` and by the what-ifs `--gpu sm_80`, `sm_86`, `sm_90`, `sm_120`, and the",
        "environment is deleted. The truth for the what-ifs is cuobjdump's listing (`--list-elf",
        "--list-ptx`) of the package's core modules (the list names them): a cubin runs on its own major",
        "at a minor at least its own (`a` cubins on their own architecture only), PTX is compiled by the",
        "driver for any later architecture (`a` PTX for its own only). Verdicts: `runs` (SASS), `ptx`",
        "(PTX JIT only), `none` (no image: the package cannot run there), `-` (no compiled kernels).",
        "",
        f"Machine: {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} cores, no NVIDIA driver, a container without GPUs "
        f"(so DRV001 and PLT001 are expected on every env). Python {platform.python_version()}.",
        f"Table written {finished} (UTC), from the results in docs/sweep-results.jsonl (each row"
        " names the cudoctor commit that judged it).",
        "",
        "Findings: E/W/I = errors, warnings, infos of the plain check (codes). A false alarm is any",
        "error or warning other than DRV001/PLT001 on a healthy env.",
        "",
        "| package | version | torch | frameworks (CUDA) | findings (plain check) | sm_80 | sm_86 | sm_90 | sm_120 | notes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    judged = agree_all = false_alarm_envs = 0
    for r in results:
        if r.get("status") != "judged":
            lines.append(f"| {r['name']} | – | – | – | {r.get('status', '?')} | | | | | {r.get('note', '')} |")
            continue
        judged += 1
        cells = []
        ok = True
        for g in GPUS:
            w = r["whatif"][g]
            mark = "" if w["agree"] else " ✗"
            ok &= w["agree"]
            cells.append(f"{w['cudoctor']} / {w['cuobjdump']}{mark}")
        agree_all += ok
        notes = []
        row = by_name.get(r["name"], {})
        expected = [a for a in r["false_alarms"] if a.split()[0] in row.get("expect", [])]
        false = [a for a in r["false_alarms"] if a not in expected]
        if false:
            false_alarm_envs += 1
            notes.append("**false alarm?** " + "; ".join(false))
        if expected:
            notes.append("true finding (" + row.get("expect_why", "") + "): " + "; ".join(expected))
        if r["image_mismatches"]:
            notes.append("images differ: " + "; ".join(r["image_mismatches"]))
        other = sorted({o for g in GPUS for o in r["whatif"][g]["other"]} - set(r["false_alarms"]))
        if other:
            notes.append("what-if: " + "; ".join(other))
        fell_back = [l["path"] for l in r["core"] if l.get("listed_by")]
        if fell_back:
            notes.append("listed by CUDA 12's cuobjdump (13.x stops with Invalid ELF): "
                         + ", ".join(fell_back))
        if r.get("core_missing"):
            notes.append("no file matches " + ", ".join(r["core_missing"]))
        if r.get("pip_check") != "ok":
            notes.append("uv pip check: " + r.get("pip_check", ""))
        if r.get("note"):
            notes.append(r["note"])
        with_images = [l for l in r["core"] if l["sass"] or l["ptx"]]
        shown = ", ".join(l["path"] for l in with_images[:3]) + (
            f" and {len(with_images) - 3} more" if len(with_images) > 3 else "")
        if r["core"]:
            notes.append(f"core: {len(r['core'])} module(s), {len(with_images)} with kernels"
                         + (f" ({shown})" if shown else ""))
        if r.get("cudoctor"):
            notes.append(f"cudoctor {r['cudoctor']}")
        lines.append(
            f"| {r['name']} | {r.get('version') or '?'} | {r.get('torch') or '-'} | "
            f"{', '.join(r.get('frameworks') or []) or '-'} | {fmt_findings(r['findings'])} | " + " | ".join(cells) + " | "
            + "<br>".join(n.replace("|", "/") for n in notes) + " |"
        )
    summary = [
        "",
        f"Summary: {len(rows)} packages listed, {len(results)} tried, {judged} installed and judged; the what-if "
        f"verdicts agree with cuobjdump on all four GPUs for {agree_all} of {judged}; "
        f"{false_alarm_envs} env(s) with an error or warning other than DRV001/PLT001.",
        "",
        "Each what-if cell: cudoctor's verdict / cuobjdump's truth (✗ where they differ).",
        "",
    ]
    notes_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sweep-notes.md")
    if os.path.exists(notes_file):
        summary += open(notes_file).read().splitlines() + [""]
    head = next(i for i, l in enumerate(lines) if l.startswith("| package |"))
    text = "\n".join(lines[:head] + summary + lines[head:]) + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", required=True)
    ap.add_argument("--envs", required=True)
    ap.add_argument("--cudoctor", required=True)
    ap.add_argument("--cuobjdump", required=True)
    ap.add_argument("--cuobjdump12", help="CUDA 12's cuobjdump, where 13.x stops on a file")
    ap.add_argument("--python", default="python3")
    ap.add_argument("--results", required=True, help="JSON lines, one per package (appended)")
    ap.add_argument("--table", required=True)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--capture", help="where to write fixtures of the data-read frameworks")
    ap.add_argument("--min-free-gb", type=int, default=15)
    ap.add_argument("--install-timeout", type=int, default=1500)
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    rows = read_list(args.list)
    if args.names:
        rows = [r for r in rows if r["name"] in args.names]
    done = {}
    if os.path.exists(args.results):
        for line in open(args.results):
            r = json.loads(line)
            done[r["name"]] = r
    started = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")
    os.makedirs(args.envs, exist_ok=True)
    log = open(os.path.join(args.envs, "sweep.log"), "a")
    if not args.table_only:
        for row in rows:
            free = shutil.disk_usage(args.envs).free / 2**30
            cache = os.path.realpath(os.environ.get("UV_CACHE_DIR", ""))
            own_cache = cache.startswith(os.path.realpath(args.envs) + os.sep)
            if free < args.min_free_gb + 5 and own_cache:
                # The sweep's own uv cache (sweep.sh points UV_CACHE_DIR into the envs'
                # directory): emptied when the disk runs short, the next env downloads again.
                # A cache shared with other work (CUDOCTOR_SWEEP_UV_CACHE) is never emptied.
                run(["uv", "cache", "clean"], 600)
                free = shutil.disk_usage(args.envs).free / 2**30
            if free < args.min_free_gb:
                print(f"sweep: {free:.0f} GB free, stopping before {row['name']}", file=sys.stderr)
                break
            print(f"sweep: {row['name']}", file=sys.stderr, flush=True)
            r = judge(row, args, log)
            done[r["name"]] = r
            with open(args.results, "a") as f:
                f.write(json.dumps(r) + "\n")
            print(f"sweep: {row['name']}: {r['status']} {r.get('false_alarms', '')}",
                  file=sys.stderr, flush=True)
    order = [r["name"] for r in read_list(args.list)]
    results = [done[n] for n in order if n in done]
    finished = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")
    write_table(results, read_list(args.list), args.table, started, finished)


if __name__ == "__main__":
    main()
