#!/usr/bin/env bash
# Checks the cudoctor binary inside a wheel without running it. A win_amd64 wheel: one
# .data/scripts/cudoctor.exe, a PE of machine x86-64 that imports no NVIDIA DLL (nvml.dll and
# nvcuda.dll are loaded at run time, in a child). A Linux wheel: the ELF machine matches the
# wheel's platform tag, the highest GLIBC symbol version it needs is at most the tag's glibc
# (2.17), it links no NVIDIA library (NVML and libcuda are dlopen()ed at run time) and it imports
# dlopen from glibc. Prints the evidence; exits 1 on the first broken promise.
# Usage: scripts/check-wheel.sh WHEEL [BINARY_OUT]   (BINARY_OUT: where to leave the extracted binary)
set -euo pipefail
# (No `producer | grep -q` here: grep's early exit can fail the producer under pipefail.)
wheel=${1:?usage: check-wheel.sh WHEEL [BINARY_OUT]}
name=$(basename "$wheel")
fail() { echo "check-wheel: ${arch:-$name}: $*" >&2; exit 1; }
for tool in objdump python3; do
  command -v "$tool" >/dev/null || fail "needs $tool (binutils, python3)"
done

if [[ $name == *-win_amd64.whl ]]; then
  arch=win_amd64
  exe=${2:-$(mktemp -d)/cudoctor.exe}
  python3 - "$wheel" "$exe" <<'EOF'
import shutil, struct, sys, zipfile
wheel, out = sys.argv[1:3]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".data/scripts/cudoctor.exe")]
    if len(names) != 1:
        sys.exit(f"check-wheel: expected one .data/scripts/cudoctor.exe in {wheel}, found {names}")
    with z.open(names[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
data = open(out, "rb").read(4096)
if data[:2] != b"MZ":
    sys.exit("check-wheel: win_amd64: cudoctor.exe is not a PE file (no MZ)")
pe = struct.unpack_from("<I", data, 0x3C)[0]
if data[pe:pe + 4] != b"PE\0\0":
    sys.exit("check-wheel: win_amd64: no PE signature")
machine = struct.unpack_from("<H", data, pe + 4)[0]
if machine != 0x8664:
    sys.exit(f"check-wheel: win_amd64: PE machine {machine:#x}, the tag says x86-64 (0x8664)")
print("check-wheel: win_amd64: PE machine: x86-64 (0x8664)")
EOF
  objdump_pe=$(command -v x86_64-w64-mingw32-objdump || command -v objdump)
  dlls=$("$objdump_pe" -p "$exe" | sed -n 's/^[[:space:]]*DLL Name: //p' | sort -u | tr '\n' ' ')
  [ -n "$dlls" ] || fail "no imported DLL read by $objdump_pe -p"
  echo "check-wheel: win_amd64: imports: $dlls"
  if grep -qiE 'nvml|nvcuda|cudart' <<<"$dlls"; then
    fail "imports an NVIDIA DLL at load time ($dlls): it would not start without a driver"
  fi
  echo "check-wheel: win_amd64: OK"
  exit 0
fi

# The platform tag names both the architecture and the glibc floor: manylinux_2_17_x86_64.
case $name in
  *manylinux_2_17_x86_64*) arch=x86_64 machine='Advanced Micro Devices X86-64' ;;
  *manylinux_2_17_aarch64*) arch=aarch64 machine='AArch64' ;;
  *) fail "not a manylinux_2_17 x86_64/aarch64 wheel" ;;
esac
glibc_max=2.17
command -v readelf >/dev/null || fail "needs readelf (binutils)"

bin=${2:-$(mktemp -d)/cudoctor}
python3 - "$wheel" "$bin" <<'EOF'
import os, shutil, sys, zipfile
wheel, out = sys.argv[1:3]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".data/scripts/cudoctor")]
    if len(names) != 1:
        sys.exit(f"check-wheel: expected one .data/scripts/cudoctor in {wheel}, found {names}")
    with z.open(names[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
os.chmod(out, 0o755)
EOF

got_machine=$(readelf -h "$bin" | sed -n 's/^ *Machine: *//p')
[ "$got_machine" = "$machine" ] || fail "ELF machine is '$got_machine', the tag says $arch ('$machine')"
echo "check-wheel: $arch: ELF machine: $got_machine"

# Version needs (.gnu.version_r) are what the dynamic loader checks at start-up: every GLIBC_x.y
# named there must exist in the target's glibc. readelf reads them for any architecture.
versions=$(readelf -V -W "$bin" | sed -n '/\.gnu\.version_r/,$p' | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV)
[ -n "$versions" ] || fail "no GLIBC version needs found (not a glibc binary?)"
highest=$(tail -n 1 <<<"$versions")
echo "check-wheel: $arch: GLIBC versions needed: $(tr '\n' ' ' <<<"$versions")"
echo "check-wheel: $arch: highest: $highest (limit GLIBC_$glibc_max)"
[ "$(printf '%s\n' "GLIBC_$glibc_max" "$highest" | sort -V | tail -n 1)" = "GLIBC_$glibc_max" ] ||
  fail "needs $highest, newer than GLIBC_$glibc_max: it would not start on glibc $glibc_max"

# objdump -T: the per-symbol view of the same versions, where this objdump reads the architecture.
if dyn=$(objdump -T "$bin" 2>/dev/null); then
  obj_highest=$(grep -o 'GLIBC_[0-9][0-9.]*' <<<"$dyn" | sort -uV | tail -n 1)
  echo "check-wheel: $arch: objdump -T highest: $obj_highest"
  [ "$obj_highest" = "$highest" ] || fail "objdump -T says $obj_highest, readelf -V says $highest"
  grep -qE '\*UND\*.*[[:space:]]dlopen$' <<<"$dyn" || fail "dlopen is not imported (objdump -T)"
  echo "check-wheel: $arch: imports: $(grep -E '\*UND\*.*[[:space:]](dlopen|dlsym)$' <<<"$dyn" | awk '{print $(NF) " " $(NF-1)}' | tr '\n' ' ')"
else
  echo "check-wheel: $arch: objdump here does not read $arch binaries; readelf only"
fi
grep -qE ' UND dlopen(@|$)' <<<"$(readelf --dyn-syms -W "$bin")" || fail "dlopen is not imported (readelf --dyn-syms)"

needed=$(readelf -d -W "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "check-wheel: $arch: NEEDED: $needed"
if grep -qiE 'nvidia|cuda|nvml' <<<"$needed"; then
  fail "links an NVIDIA library at link time ($needed): it would not start without a driver"
fi
grep -qE '^/lib(64)?/ld-linux' <<<"$(readelf -l -W "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')" ||
  fail "no glibc program interpreter (a static or musl binary cannot dlopen the driver's glibc libraries)"
echo "check-wheel: $arch: OK"
