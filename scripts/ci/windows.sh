#!/usr/bin/env bash
# The Windows build: cross-compiled for x86_64-pc-windows-gnu (rustup's target, Debian's
# mingw-w64 as the linker), lint-clean there, and run under Wine (Debian's wine64):
#   - `--version` names the version the Linux build names;
#   - `rules` lists exactly what the Linux binary lists (one registry for both);
#   - `check --format json` on this Wine machine (no GPU, no Python) ends with exit status 0
#     or 1, says the OS is windows, and reports the missing driver (DRV001);
#   - `check --format text` ends the same way and prints its verdict;
#   - TK019 on a Windows-layout tree with Visual Studio's installer state files
#     (scripts/ci/wine/msvc-tree.sh: without C++, with it, DISTUTILS_USE_SDK=1 with and without
#     cl.exe on PATH);
#   - `check --root` of a ComfyUI-portable tree of torch's real Windows DLLs without the Visual
#     C++ runtime reports PLT020 with its PowerShell fix;
#   - beside an nvml.dll that hangs, or crashes, `check` ends within its --timeout with DRV007
#     (the driver probe's child is killed, or its exception named) and Windows fixes;
#   - `check` finds the Pythons registered in Wine's registry (PEP 514) and its KnownDLLs, as
#     Wine's reg.exe wrote them;
#   - the win_amd64 wheel (scripts/build-wheels.sh windows) is accepted by pip for Windows x64,
#     and installed into a ComfyUI portable's python_embeded (Windows' install scheme) its
#     cudoctor.exe runs and judges that Python, found from its own place (README's route);
#   - the PE reader's tests (crates/cudoctor-pe) pass as Windows programs under Wine;
#   - on the real Windows wheels (scripts/windows/fetch-wheels.sh: torch, torchvision and the
#     Visual C++ runtime for win_amd64, about 130 MB, cached), every DLL reads as objdump reads it,
#     and the DLL search of `import torch` on portable trees laid out from them loads what an
#     objdump dependency walk reaches, or fails where a missing or old runtime makes it fail.
#
# Installs the target and the packages when missing and this runs as root. Without them it prints
# SKIPPED and exits 0, unless CUDOCTOR_REQUIRE_TOOLS=1 (as .ci/run sets): then it fails.
#   eval "$(scripts/ci/windows.sh --env)"   installs the packages and fetches the wheels only,
#                                           exporting CUDOCTOR_WINDOWS_WHEELS for the test suite.
# Timings of each step are printed (Wine's first start makes its prefix: about 10 s here).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
target=x86_64-pc-windows-gnu

skip() {
  if [ "${CUDOCTOR_REQUIRE_TOOLS:-0}" = 1 ]; then
    echo "windows: FAILED: $1" >&2
    exit 1
  fi
  echo "windows: SKIPPED: $1" >&2
  exit 0
}
fail() {
  echo "windows: FAILED: $1" >&2
  exit 1
}
step_start=$SECONDS
step() {
  echo "windows: $1 ($((SECONDS - step_start)) s since the start)" >&2
}

wine_bin() { command -v wine64 || { [ -x /usr/lib/wine/wine64 ] && echo /usr/lib/wine/wine64; } || true; }
if ! command -v x86_64-w64-mingw32-gcc >/dev/null || [ -z "$(wine_bin)" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "installing Debian's gcc-mingw-w64-x86-64 and wine64"
    pkgs="gcc-mingw-w64-x86-64 wine64"
    timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs >/tmp/windows-apt.log 2>&1 ||
      { timeout 300 apt-get update >/dev/null 2>&1 &&
        timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs >/tmp/windows-apt.log 2>&1; } ||
      skip "mingw-w64 and wine64 are not installed and apt-get could not install them (see /tmp/windows-apt.log)"
  else
    skip "mingw-w64 and wine64 are not installed (apt-get install gcc-mingw-w64-x86-64 wine64, as root)"
  fi
fi
wine=$(wine_bin)
# --env: only the real wheels, for the workspace tests that follow (.ci/run evals the line).
if [ "${1:-}" = "--env" ]; then
  wheels=$(scripts/windows/fetch-wheels.sh) || skip "the Windows wheels could not be fetched"
  printf 'export CUDOCTOR_WINDOWS_WHEELS=%q\n' "$wheels"
  exit 0
fi
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  step "adding the $target target"
  timeout 600 rustup target add "$target" >/dev/null 2>&1 || skip "rustup could not add $target"
fi

step "clippy for $target"
cargo clippy --target "$target" --workspace --quiet -- -D warnings
step "building cudoctor.exe"
cargo build --target "$target" --quiet -p cudoctor
exe="${CARGO_TARGET_DIR:-$root/target}/$target/debug/cudoctor.exe"
[ -f "$exe" ] || fail "no $exe after the build"
# The Linux build is built here too (a no-op when it is current), so that both name the same
# commit: a debug binary left from an earlier commit would name another.
if [ -n "${CUDOCTOR_BIN:-}" ]; then
  linux_bin="$CUDOCTOR_BIN"
else
  cargo build --quiet -p cudoctor
  linux_bin="${CARGO_TARGET_DIR:-$root/target}/debug/cudoctor"
fi

export WINEPREFIX="${CUDOCTOR_WINEPREFIX:-$HOME/.cache/cudoctor-wine}"
export WINEDEBUG=-all
mkdir -p "$WINEPREFIX"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
run_wine() { timeout 120 "$wine" "$exe" "$@"; }

step "starting Wine (prefix $WINEPREFIX)"
timeout 300 "$wine" cmd /c exit 0 >/dev/null 2>&1 || true
# Wine 8.0 lacks bcryptprimitives.dll (ProcessPrng), which Rust's std imports since 1.78:
# a stand-in built here from scripts/ci/wine/bcryptprimitives.c (Windows 10+ has the real one).
sys32="$WINEPREFIX/drive_c/windows/system32"
[ -d "$sys32" ] || fail "Wine made no prefix at $WINEPREFIX"
x86_64-w64-mingw32-gcc -O2 -shared -Wl,--kill-at -o "$sys32/bcryptprimitives.dll" \
  scripts/ci/wine/bcryptprimitives.c -ladvapi32
step "Wine ready"

version=$(run_wine --version | tr -d '\r') || fail "cudoctor.exe --version failed"
expected=$("$linux_bin" --version)
[ "$version" = "$expected" ] || fail "--version: '$version' under Wine, '$expected' on Linux"
echo "windows: --version: $version" >&2

run_wine rules | tr -d '\r' >"$work/rules-windows.txt" || fail "cudoctor.exe rules failed"
"$linux_bin" rules >"$work/rules-linux.txt"
diff -u "$work/rules-linux.txt" "$work/rules-windows.txt" >&2 ||
  fail "rules: the Windows build lists other rules than the Linux one"
echo "windows: rules: $(wc -l <"$work/rules-windows.txt") rules, the Linux list" >&2

set +e
run_wine check --format json >"$work/check.json" 2>"$work/check.err"
rc=$?
set -e
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$work/check.err" >&2; fail "check --format json exited with $rc"; }
python3 - "$work/check.json" <<'EOF' || fail "check --format json under Wine: unexpected report"
import json, sys
report = json.load(open(sys.argv[1]))
snapshot = report.get("snapshot", report)
os_name = snapshot["host"]["os"]
assert os_name == "windows", f"host.os is {os_name!r}"
# The Windows facts of the live machine: Wine's System32 read, no torch there.
windows = snapshot["windows"]
assert windows["windows_dir"].lower() == "c:\\windows", windows
assert windows["torch_envs"] == [], windows
codes = [f["code"] for f in report["findings"]]
assert "DRV001" in codes, f"no DRV001 (no driver) among {codes}"
print(f"windows: check --format json: os {os_name}, findings {codes}", file=sys.stderr)
EOF

set +e
run_wine check >"$work/check.txt" 2>"$work/check-text.err"
rc=$?
set -e
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$work/check-text.err" >&2; fail "check exited with $rc"; }
grep -q "Verdict:" "$work/check.txt" || { cat "$work/check.txt" >&2; fail "check printed no verdict"; }
step "check under Wine: $(tr -d '\r' <"$work/check.txt" | grep Verdict:)"

# A ComfyUI-portable tree (the committed files of torch's Windows wheel, no Visual C++ runtime),
# inspected by the Windows binary through --root: PLT020 with its PowerShell fix.
tree="$work/portable"
embeded="$tree/C/ComfyUI_windows_portable/python_embeded"
mkdir -p "$embeded/Lib/site-packages" "$tree/C/Windows/System32"
cp -r tests/fixtures/real/windows/torch-2.15.0-cpu/torch "$embeded/Lib/site-packages/"
printf MZ >"$embeded/python.exe"
printf MZ >"$embeded/python312.dll"
printf 'python312.zip\n.\nLib/site-packages\n' >"$embeded/python312._pth"
set +e
run_wine check --root "$tree" --format json >"$work/tree.json" 2>"$work/tree.err"
rc=$?
set -e
[ "$rc" = 1 ] || { cat "$work/tree.err" >&2; fail "check --root of the portable tree exited with $rc"; }
python3 - "$work/tree.json" <<'EOF2' || fail "check --root of the portable tree under Wine: unexpected report"
import json, sys
report = json.load(open(sys.argv[1]))
plt020 = [f for f in report["findings"] if f["code"] == "PLT020"]
assert len(plt020) == 1, [f["code"] for f in report["findings"]]
f = plt020[0]
assert "c10.dll cannot be loaded" in f["title"], f["title"]
assert f["fix"][0] == {"powershell": "winget install --id Microsoft.VCRedist.2015+.x64 --exact"}, f["fix"]
print(f"windows: check --root of a portable tree under Wine: {f['title']}", file=sys.stderr)
EOF2

# TK019 on a Windows-layout tree (Visual Studio as its installer's state files record it, with
# and without the C++ workload; DISTUTILS_USE_SDK=1 outside and inside a Native Tools PATH).
step "TK019 on a Windows tree under Wine"
scripts/ci/wine/msvc-tree.sh "$wine" "$exe" "$work" || fail "TK019 under Wine: unexpected report"

# The win_amd64 wheel (scripts/build-wheels.sh windows: maturin over this same mingw build, the
# debug profile here) as pip installs it: pip accepts its tag for a Windows x64 target, and
# installed into a ComfyUI portable layout with Windows' install scheme (python_embeded\Scripts,
# Lib\site-packages: what `python_embeded\python.exe -m pip install` does there, done here by the
# `installer` package pip is built on), its cudoctor.exe runs under Wine and judges the Python it
# was installed into, found from its own place (the README's ComfyUI route).
step "the win_amd64 wheel"
wheel=$(scripts/build-wheels.sh --profile dev --out "$work/wheels" windows | tail -n 1)
case $wheel in */cudoctor-*-py3-none-win_amd64.whl) ;; *) fail "build-wheels.sh windows made '$wheel'" ;; esac
tools="${CUDOCTOR_WHEEL_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-wheel-tools}/installer-venv"
if ! "$tools/bin/python" -c 'import installer' 2>/dev/null; then
  python3 -m venv "$tools" >&2
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check installer==0.7.0 >&2 ||
    skip "the installer package could not be installed"
fi
"$tools/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --platform win_amd64 --target "$work/pip-target" "$wheel" >&2 || fail "pip refused the wheel for win_amd64"
[ -f "$work/pip-target/bin/cudoctor.exe" ] || fail "pip installed no cudoctor.exe from the wheel"
portable="$work/wheel-portable/ComfyUI_windows_portable"
embeded2="$portable/python_embeded"
mkdir -p "$embeded2/Lib/site-packages" "$portable/ComfyUI"
cp -r tests/fixtures/real/windows/torch-2.15.0-cpu/torch "$embeded2/Lib/site-packages/"
printf MZ >"$embeded2/python.exe"
printf MZ >"$embeded2/python312.dll"
printf 'python312.zip\n.\n../ComfyUI\nimport site\n' >"$embeded2/python312._pth"
"$tools/bin/python" - "$wheel" "$embeded2" <<'EOF' || fail "the wheel could not be installed into python_embeded"
import sys, sysconfig
from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile
wheel, prefix = sys.argv[1:3]
v = {"base": prefix, "platbase": prefix, "installed_base": prefix, "installed_platbase": prefix}
p = sysconfig.get_paths(scheme="nt", vars=v)
scheme = {k: p[k] for k in ("purelib", "platlib", "scripts", "data")}
scheme["headers"] = p["include"]
dest = SchemeDictionaryDestination(scheme, interpreter="python.exe", script_kind="win-amd64")
with WheelFile.open(wheel) as source:
    install(source, dest, {"INSTALLER": b"pip\n"})
EOF
installed="$embeded2/Scripts/cudoctor.exe"
[ -f "$installed" ] || fail "no python_embeded/Scripts/cudoctor.exe after the install"
version=$(timeout 120 "$wine" "$installed" --version | tr -d '\r') || fail "the wheel's cudoctor.exe --version failed"
[ "$version" = "$expected" ] || fail "the wheel's --version: '$version', Linux's '$expected'"
set +e
(cd "$portable" && timeout 120 "$wine" python_embeded/Scripts/cudoctor.exe check --format json) >"$work/wheel-check.json" 2>"$work/wheel-check.err"
rc=$?
set -e
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$work/wheel-check.err" >&2; fail "the wheel's check exited with $rc"; }
python3 - "$work/wheel-check.json" <<'EOF' || fail "the wheel's cudoctor.exe did not judge the Python it was installed into"
import json, sys
report = json.load(open(sys.argv[1]))
envs = report["snapshot"]["python_envs"]
own = [e for e in envs if (e.get("interpreter") or "").lower().endswith("\\comfyui_windows_portable\\python_embeded\\python.exe")]
assert len(own) == 1, [(e.get("interpreter"), e.get("found_via")) for e in envs]
e = own[0]
assert "the Python cudoctor.exe is installed in" in e["found_via"], e["found_via"]
assert (e.get("torch") or {}).get("version", "").startswith("2.15.0"), e.get("torch")
print(f"windows: the win_amd64 wheel installed into python_embeded: {e['interpreter']} judged, torch {e['torch']['version']}", file=sys.stderr)
EOF

# A wedged driver and a broken one: an nvml.dll whose nvmlInit_v2 never returns, one that
# writes through a null pointer, and an nvcuda.dll that does (asked first: the child dies before
# any answer) (scripts/ci/wine/*.c), each beside a copy of cudoctor.exe
# (the loader's first directory). The driver probe runs in a child: the check must end within
# its --timeout with DRV007 naming the hang, or the crash's exception, and Windows fixes.
for case in nvml-hangs nvml-crashes nvcuda-crashes; do
  dll="${case%%-*}" kind="${case#*-}"
  dir="$work/$case"
  mkdir -p "$dir"
  cp "$exe" "$dir/cudoctor.exe"
  x86_64-w64-mingw32-gcc -O2 -shared -o "$dir/$dll.dll" "scripts/ci/wine/$case.c"
  set +e
  started=$SECONDS
  # Without Wine's debugger (winedbg --auto, its AeDebug default), which would end the crashed
  # process with its own status: a process Windows ends for an unhandled exception exits with
  # the exception's code, as here.
  WINEDLLOVERRIDES=winedbg.exe=d timeout 60 "$wine" "$dir/cudoctor.exe" check --timeout 3 --format json >"$dir/check.json" 2>"$dir/check.err"
  rc=$?
  set -e
  [ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$dir/check.err" >&2; fail "check beside an $dll.dll that $kind exited with $rc"; }
  [ $((SECONDS - started)) -lt 30 ] || fail "check beside an $dll.dll that $kind took $((SECONDS - started)) s"
  python3 - "$dir/check.json" "$case" <<'EOF4' || fail "check beside an $dll.dll that $kind: unexpected report"
import json, sys
report = json.load(open(sys.argv[1]))
case = sys.argv[2]
drv007 = [f for f in report["findings"] if f["code"] == "DRV007"]
assert len(drv007) == 1, [f["code"] for f in report["findings"]]
title = drv007[0]["title"]
expected = {
    "nvml-hangs": "NVML hung for 3 s",
    "nvml-crashes": "NVML crashed (exception 0xC0000005 (access violation))",
    "nvcuda-crashes": "nvcuda.dll crashed (exception 0xC0000005 (access violation))",
}[case]
assert expected in title, title
fix = json.dumps(drv007[0]["fix"])
assert "dmesg" not in fix and "/proc" not in fix and "sudo" not in fix, fix
assert "powershell" in fix, fix
print(f"windows: {case}: {title}", file=sys.stderr)
EOF4
done

# The live machine's registry, written by Wine's own reg.exe: a Python registered as python.org's
# installer registers it (HKCU, InstallPath and ExecutablePath), another company's with
# InstallPath only (HKLM: python.exe in it), and KnownDLLs. The Windows binary must find both
# Pythons through the registry (PEP 514) and list exactly the KnownDLLs written; what was added
# is removed again, the prefix is left as it was.
wreg() { timeout 120 "$wine" reg "$@" >/dev/null 2>&1; }
registered="$WINEPREFIX/drive_c/cudoctor-registry"
core_key='HKCU\Software\Python\PythonCore\3.12'
other_key='HKLM\Software\Python\CudoctorCI'
known_key='HKLM\System\CurrentControlSet\Control\Session Manager\KnownDLLs'
forget_registry() {
  wreg delete "$core_key" /f || true
  wreg delete "$other_key" /f || true
  wreg delete "$known_key" /f || true
  rm -rf "$registered"
}
forget_registry
mkdir -p "$registered/Python312" "$registered/Other311"
printf MZ >"$registered/Python312/python.exe"
printf MZ >"$registered/Python312/python312.dll"
printf MZ >"$registered/Other311/python.exe"
printf MZ >"$registered/Other311/python311.dll"
wreg add "$core_key\InstallPath" /ve /d 'C:\cudoctor-registry\Python312\' /f &&
  wreg add "$core_key\InstallPath" /v ExecutablePath /d 'C:\cudoctor-registry\Python312\python.exe' /f &&
  wreg add "$other_key\other-3.11\InstallPath" /ve /d 'C:\cudoctor-registry\Other311' /f &&
  wreg add "$known_key" /v kernel32 /d kernel32.dll /f &&
  wreg add "$known_key" /v ole32 /d OLE32.dll /f &&
  wreg add "$known_key" /v DllDirectory /t REG_EXPAND_SZ /d '%SystemRoot%\system32' /f ||
  { forget_registry; fail "Wine's reg.exe could not write the test keys"; }
set +e
run_wine check --format json >"$work/registry.json" 2>"$work/registry.err"
rc=$?
set -e
forget_registry
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { cat "$work/registry.err" >&2; fail "check with registered Pythons exited with $rc"; }
python3 - "$work/registry.json" <<'EOF3' || fail "check under Wine: the registry's Pythons or KnownDLLs were not read as written"
import json, sys
report = json.load(open(sys.argv[1]))
snapshot = report.get("snapshot", report)
envs = {(e.get("interpreter") or "").lower(): e for e in snapshot["python_envs"]}
for exe, version in [("c:\\cudoctor-registry\\python312\\python.exe", "3.12"),
                     ("c:\\cudoctor-registry\\other311\\python.exe", "3.11")]:
    e = envs.get(exe)
    assert e is not None, f"{exe} not among {sorted(envs)}"
    assert "registry (PEP 514)" in e["found_via"], e["found_via"]
    assert e.get("python_version") == version, e.get("python_version")
known = snapshot["windows"].get("known_dlls")
assert known == ["kernel32.dll", "ole32.dll"], known
print(f"windows: the registry under Wine: 2 registered Pythons found, KnownDLLs {known}", file=sys.stderr)
EOF3

step "the PE reader's tests as Windows programs under Wine"
# Without the wheels: their tests compare with objdump, a Linux program that a Windows program
# under Wine cannot start; they run natively in the next step. (.ci/run exports the wheels for
# the workspace's tests, and with CUDOCTOR_REQUIRE_TOOLS=1 a missing objdump is a failure.)
env -u CUDOCTOR_WINDOWS_WHEELS CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$wine" \
  cargo test --target "$target" --quiet -p cudoctor-pe
step "fetching the Windows wheels"
wheels=$(scripts/windows/fetch-wheels.sh)
step "the PE reader on every DLL of the wheels, against objdump; import torch on trees of them"
CUDOCTOR_WINDOWS_WHEELS="$wheels" cargo test --quiet -p cudoctor-pe --test wheels --test torch_import -- --nocapture
step "passed"
