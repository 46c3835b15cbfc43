#!/usr/bin/env bash
# CI test of the wheels as users install them (issue "Install like ruff and uv"):
#  - builds the x86_64 and aarch64 wheels of the commit (HEAD: commit what you want tested)
#    in a clean clone with scripts/build-wheels.sh, which checks each
#    binary's ELF machine, GLIBC symbol versions (<= 2.17, readelf -V and objdump -T) and its
#    import of dlopen;
#  - x86_64: installs the wheel with pip into a fresh venv, with `uv tool install` and runs it
#    with `uvx --from WHEEL`; each runs `cudoctor --version` and `cudoctor check`; the driver
#    libraries are really dlopen()ed: without a driver the check says so, and with a stand-in
#    libnvidia-ml.so.1 / libcuda.so.1 (built here, on LD_LIBRARY_PATH) the binary's calls reach
#    them; the shipped man pages render and the completions parse (bash, zsh, fish);
#  - aarch64: the wheel installs for its platform, and its binary runs under qemu-user with
#    Debian's arm64 glibc: --version, check, and the same stand-in driver libraries.
# Usage: scripts/ci/wheel-test.sh [X86_64_WHEEL AARCH64_WHEEL]   (given: test them, build nothing)
# Environment: CUDOCTOR_WHEEL_PROFILE (default wheel-ci: optimised, no LTO, for time; `release`
# checks the shipped build). Steps that cannot run here (no qemu, no zsh/fish) say SKIPPED.
set -euo pipefail
# (No `producer | grep -q`: grep's early exit can fail the producer under pipefail.)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
start=$SECONDS
profile=${CUDOCTOR_WHEEL_PROFILE:-wheel-ci}
work=$(mktemp -d "${TMPDIR:-/tmp}/cudoctor-wheel-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { echo "wheel-test: $* ($((SECONDS - start)) s)"; }
fail() { echo "wheel-test: FAILED: $*" >&2; exit 1; }
skipped() { echo "wheel-test: SKIPPED: $*"; }

# qemu-user and Debian's arm64 glibc for the aarch64 run; zsh and fish to parse the completions.
apt_packages=()
command -v qemu-aarch64-static >/dev/null || apt_packages+=(qemu-user-static)
[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || apt_packages+=(libc6-arm64-cross)
command -v zsh >/dev/null || apt_packages+=(zsh)
command -v fish >/dev/null || apt_packages+=(fish)
if [ ${#apt_packages[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  step "installing ${apt_packages[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${apt_packages[@]}"; } >"$work/apt.log" 2>&1 || { tail -n 5 "$work/apt.log"; echo "wheel-test: apt-get failed"; }
fi

if [ $# = 2 ]; then
  # Wheels given (e.g. release builds): test those, build nothing.
  wheels=("$(readlink -f "$1")" "$(readlink -f "$2")")
  for w in "${wheels[@]}"; do scripts/check-wheel.sh "$w"; done
  export PATH=${CUDOCTOR_WHEEL_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-wheel-tools}/venv/bin:$PATH
else
  # Built from a clean clone of the commit, as a release would be. The clone stays at one
  # path (under target/) and shares the build directory, so rebuilds are incremental.
  commit=$(git rev-parse HEAD)
  clone=$root/target/wheel-test-clone
  step "building the wheels (profile $profile) in a clean clone of $commit"
  if [ -d "$clone/.git" ]; then
    git -C "$clone" fetch --quiet "$root" "$commit"
  else
    rm -rf "$clone"
    git clone --quiet --no-local "$root" "$clone"
  fi
  git -C "$clone" checkout --quiet --force --detach "$commit"
  git -C "$clone" clean --quiet -fdx
  mapfile -t wheels < <(CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target} \
    "$clone/scripts/build-wheels.sh" --profile "$profile" --out "$work/wheels" x86_64 aarch64)
fi
[ ${#wheels[@]} = 2 ] || fail "build-wheels printed ${#wheels[@]} wheels, expected 2"
x86=${wheels[0]} arm=${wheels[1]}
for w in "$x86" "$arm"; do echo "wheel-test: built $(basename "$w") ($(du -k "$w" | cut -f1) KiB)"; done
case $(basename "$x86") in cudoctor-*-py3-none-*manylinux_2_17_x86_64*.whl) ;; *) fail "x86_64 wheel name $x86" ;; esac
case $(basename "$arm") in cudoctor-*-py3-none-*manylinux_2_17_aarch64*.whl) ;; *) fail "aarch64 wheel name $arm" ;; esac
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
[[ $(basename "$x86") == cudoctor-$version-* ]] || fail "the wheel's version is not the workspace's $version"

tools=${CUDOCTOR_WHEEL_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-wheel-tools}/venv
export PATH=$tools/bin:$PATH # zig (python -m ziglang), from build-wheels.sh
if ! grep -qxi 'uv==0.13.9' <<<"$("$tools/bin/python" -m pip freeze 2>/dev/null)"; then
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check uv==0.13.9
fi

# Stand-ins for the driver's user-space libraries, built for each architecture with zig: NVML
# answers "driver not loaded" (NVML_ERROR_DRIVER_NOT_LOADED, 9), as it does where the library
# is installed but the kernel module is not; libcuda reports CUDA 12.8. Only the loading is
# under test: the snapshot must show the binary called into them by name.
cat >"$work/nvml.c" <<'EOF'
int nvmlInit_v2(void) { return 9; }
int nvmlShutdown(void) { return 0; }
EOF
cat >"$work/cuda.c" <<'EOF'
int cuDriverGetVersion(int *version) { *version = 12080; return 0; }
EOF
for a in x86_64 aarch64; do
  mkdir -p "$work/standin-$a"
  python -m ziglang cc -target "$a-linux-gnu.2.17" -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 \
    -o "$work/standin-$a/libnvidia-ml.so.1" "$work/nvml.c"
  python -m ziglang cc -target "$a-linux-gnu.2.17" -shared -fPIC -Wl,-soname,libcuda.so.1 \
    -o "$work/standin-$a/libcuda.so.1" "$work/cuda.c"
done

attempt() { # SNAPSHOT SOURCE: "outcome: detail" of the driver layer's attempt through SOURCE
  python3 - "$@" <<'EOF'
import json, sys
snapshot, source = sys.argv[1:3]
for a in json.load(open(snapshot))["driver"]["attempts"]:
    if a["source"] == source:
        print(f'{a["outcome"]}: {a.get("detail", "")}')
        break
else:
    sys.exit(f"no {source} attempt in {snapshot}")
EOF
}
# Runs one installed cudoctor (a command line, e.g. "qemu-aarch64-static -L ... BIN") through
# --version and check, without and with the stand-in driver libraries.
exercise() { # LABEL ARCH COMMAND...
  local label=$1 arch=$2 out rc
  shift 2
  out=$("$@" --version) || fail "$label: --version exited $?"
  # The version, then the build's facts in parentheses (commit, date, knowledge base).
  [[ $out == "cudoctor $version ("*")" ]] || fail "$label: --version printed '$out'"
  rc=0
  "$@" check >"$work/check.txt" 2>&1 || rc=$?
  { [ $rc = 0 ] || [ $rc = 1 ]; } || { cat "$work/check.txt"; fail "$label: check exited $rc"; }
  grep -q "^cudoctor $version — CUDA stack check" "$work/check.txt" || { cat "$work/check.txt"; fail "$label: no report"; }
  "$@" check --save "$work/snap.json" >/dev/null 2>&1 || true
  local nvml cuda
  nvml=$(attempt "$work/snap.json" nvml) cuda=$(attempt "$work/snap.json" libcuda)
  [[ $nvml == "absent: libnvidia-ml.so.1: cannot open shared object file"* ]] || fail "$label: nvml without a driver: $nvml"
  [[ $cuda == "absent: libcuda.so.1: cannot open shared object file"* ]] || fail "$label: libcuda without a driver: $cuda"
  LD_LIBRARY_PATH=$work/standin-$arch "$@" check --save "$work/snap.json" >/dev/null 2>&1 || true
  nvml=$(attempt "$work/snap.json" nvml) cuda=$(attempt "$work/snap.json" libcuda)
  [ "$nvml" = "failed: nvmlInit_v2 returned NVML error 9" ] || fail "$label: nvml through the stand-in: $nvml"
  [ "$cuda" = "ok: cuDriverGetVersion = 12080 (12.8)" ] || fail "$label: libcuda through the stand-in: $cuda"
  echo "wheel-test: $label: --version, check (exit $rc), driver absent: reported; dlopen of libnvidia-ml.so.1 and libcuda.so.1: called into"
}

step "x86_64: pip install into a fresh venv"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$x86"
exercise "pip venv" x86_64 "$work/venv/bin/cudoctor"

step "x86_64: shipped manual pages and completions"
share=$work/venv/share
pages=("$share"/man/man1/cudoctor*.1)
[ -f "$share/man/man1/cudoctor.1" ] && [ -f "$share/man/man1/cudoctor-check.1" ] || fail "man pages missing: ${pages[*]}"
for page in "${pages[@]}"; do
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $page: $warnings"
  [ -z "$warnings" ] || fail "groff warns on $(basename "$page"): $warnings"
done
grep -q '^SYNOPSIS' <<<"$(MANWIDTH=100 man -l "$share/man/man1/cudoctor.1" 2>/dev/null)" || fail "man -l cudoctor.1 shows no SYNOPSIS"
# MANPATH from PATH: man finds the venv's pages when its bin/ is on PATH, as after activation.
grep -qF "$share/man/man1/cudoctor-check.1" <<<"$(PATH=$work/venv/bin:$PATH MANPATH= man -w cudoctor-check 2>/dev/null)" ||
  skipped "man -w did not find the venv's page through PATH (man-db's manpath configuration)"
echo "wheel-test: ${#pages[@]} man pages render without warnings"
bash_completion=$share/bash-completion/completions/cudoctor
bash -n "$bash_completion" || fail "bash -n on the bash completions"
got=$(bash -c 'source "$1"; COMP_WORDS=(cudoctor ch); COMP_CWORD=1; COMP_LINE="cudoctor ch"; COMP_POINT=${#COMP_LINE}
  _cudoctor cudoctor ch cudoctor; printf "%s\n" "${COMPREPLY[@]}"' _ "$bash_completion")
grep -qx check <<<"$got" || fail "bash completion of 'cudoctor ch' gave: $got"
echo "wheel-test: bash completions parse; 'cudoctor ch<TAB>' completes to check"
if command -v zsh >/dev/null; then
  zsh -n "$share/zsh/site-functions/_cudoctor" || fail "zsh -n on the zsh completions"
  echo "wheel-test: zsh completions parse"
else skipped "zsh completions (no zsh)"; fi
if command -v fish >/dev/null; then
  fish --no-execute "$share/fish/vendor_completions.d/cudoctor.fish" || fail "fish --no-execute on the fish completions"
  echo "wheel-test: fish completions parse"
else skipped "fish completions (no fish)"; fi

step "x86_64: uv tool install and uvx --from"
export UV_TOOL_DIR=$work/uv-tools UV_TOOL_BIN_DIR=$work/uv-bin UV_PYTHON_DOWNLOADS=never
uv tool install --quiet --offline "$x86" || fail "uv tool install $x86"
exercise "uv tool install" x86_64 "$UV_TOOL_BIN_DIR/cudoctor"
exercise "uvx --from" x86_64 uvx --offline --from "$x86" cudoctor

step "aarch64: install for its platform, run under qemu-user"
python3 -m pip install --quiet --disable-pip-version-check --no-index --no-deps --only-binary=:all: \
  --platform manylinux_2_17_aarch64 --target "$work/arm" "$arm"
arm_bin=$work/arm/bin/cudoctor
[ -x "$arm_bin" ] || fail "the aarch64 wheel installed no bin/cudoctor"
if command -v qemu-aarch64-static >/dev/null && [ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ]; then
  exercise "aarch64 under qemu" aarch64 qemu-aarch64-static -L /usr/aarch64-linux-gnu "$arm_bin"
else
  skipped "aarch64 run (needs qemu-aarch64-static and /usr/aarch64-linux-gnu from libc6-arm64-cross)"
fi
step "done"
