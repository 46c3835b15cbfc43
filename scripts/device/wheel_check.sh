#!/usr/bin/env bash
# On a GPU machine: installs the x86_64 wheel (built here by scripts/build-wheels.sh, carried in
# .whl-cudoctor/) with pip into a fresh venv, then runs the installed glibc-2.17 binary:
# --version, check (text, json, saved snapshot, and against the torch environment when there is
# one), and compares the driver and topology facts it reads through NVML with those of the
# natively built target/release/cudoctor (scripts/device/nvml_same.sh), when that is carried too.
# Nothing needs the network: the wheel has no dependencies.
# Usage: OUT=DIR scripts/device/wheel_check.sh [WHEEL]   (default: the one wheel in .whl-cudoctor/)
# Writes $OUT/wheel_check.txt (the summary) and the outputs beside it; exits 1 when a step fails.
set -uo pipefail
out=${OUT:?set OUT}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
summary=$out/wheel_check.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
failed=0
bad() { say "FAILED: $*"; failed=1; }

wheel=${1:-}
if [ -z "$wheel" ]; then
  shopt -s nullglob
  found=("$root"/.whl-cudoctor/cudoctor-*manylinux_2_17_x86_64*.whl)
  [ ${#found[@]} = 1 ] || { say "FAILED: expected one x86_64 wheel in .whl-cudoctor/, found ${#found[@]}"; exit 1; }
  wheel=${found[0]}
fi
say "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
say "machine: $(uname -srm); $(ldd --version 2>&1 | head -n 1)"
command -v nvidia-smi >/dev/null && say "driver: $(nvidia-smi --query-gpu=driver_version,name --format=csv,noheader 2>&1 | head -n 1)"

venv=$(mktemp -d /tmp/cudoctor-wheel-venv.XXXXXX)
py=python3
if ! "$py" -m venv "$venv" >"$out/venv.log" 2>&1; then
  # The image's python3 may lack ensurepip; the torch environment's interpreter has it.
  py=/opt/torch/.venv/bin/python3
  [ -x "$py" ] && "$py" -m venv "$venv" >>"$out/venv.log" 2>&1 || { say "FAILED: no python3 -m venv here"; cat "$out/venv.log"; exit 1; }
fi
say "venv: $venv ($("$venv/bin/python" -V 2>&1))"
if ! "$venv/bin/python" -m pip install --no-index --disable-pip-version-check "$wheel" >"$out/pip.log" 2>&1; then
  cat "$out/pip.log"; say "FAILED: pip install"; exit 1
fi
bin=$venv/bin/cudoctor
say "installed: $bin; man pages: $(ls "$venv/share/man/man1" 2>/dev/null | wc -l); completions: $(ls "$venv"/share/bash-completion/completions/ 2>/dev/null)"
if command -v readelf >/dev/null; then
  say "GLIBC needed: highest $(readelf -V -W "$bin" | sed -n '/\.gnu\.version_r/,$p' | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1); NEEDED: $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
fi

"$bin" --version >"$out/version.txt" 2>&1 || bad "--version exited $?"
say "version: $(cat "$out/version.txt")"

check() { # NAME ARGS...: one check run, its exit status and wall time recorded
  local name=$1 rc t0 t1
  shift
  t0=$(date +%s%N)
  "$bin" check "$@" >"$out/$name" 2>"$out/$name.stderr"
  rc=$?
  t1=$(date +%s%N)
  say "check $* -> exit $rc in $(((t1 - t0) / 1000000)) ms ($name)"
  [ $rc -le 1 ] || bad "check $* exited $rc: $(tail -n 3 "$out/$name.stderr")"
}
check check.txt
check check.json --format json
check save.stdout --save "$out/snapshot.json"
torch_py=/opt/torch/.venv/bin/python3
[ -x "$torch_py" ] && check check-torch.txt --python "$torch_py"

python3 - "$out/snapshot.json" <<'EOF' | tee -a "$summary"
import json, sys
s = json.load(open(sys.argv[1]))
d = s.get("driver") or {}
print("driver:", (d.get("version") or {}).get("value"), "max CUDA:", (d.get("max_cuda") or {}).get("value"))
for a in d.get("attempts", []):
    print(f'  attempt {a["source"]}: {a["outcome"]} ({a.get("detail", "")})')
print("GPUs:", [g.get("name") for g in d.get("gpus", [])])
answered = {a["source"] for a in d.get("attempts", []) if a["outcome"] == "ok"}
for lib in ("nvml", "libcuda"):
    print(f"{lib} dlopen()ed and answered:", "yes" if lib in answered else "NO")
sys.exit(0 if {"nvml", "libcuda"} <= answered else 1)
EOF
[ "${PIPESTATUS[0]}" = 0 ] || bad "NVML or libcuda did not answer the wheel's binary"

native=$root/target/release/cudoctor
if [ -x "$native" ]; then
  OUT=$out/nvml_same bash "$here/nvml_same.sh" "$native" "$bin" >"$out/nvml_same.log" 2>&1
  rc=$?
  say "NVML facts, native build vs wheel: $(tail -n 1 "$out/nvml_same.log")"
  [ $rc = 0 ] || bad "the wheel's binary reads other NVML facts than the native build (nvml_same/)"
else
  say "SKIPPED: NVML comparison with target/release/cudoctor (not carried)"
fi
rm -rf "$venv"
say "$([ $failed = 0 ] && echo PASSED || echo FAILED)"
exit $failed
