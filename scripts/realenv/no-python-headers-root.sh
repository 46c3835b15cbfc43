#!/usr/bin/env bash
# A Debian 12 root whose Python 3.11 has no C headers (python3.11 without python3.11-dev, as a
# slim image or a fresh install has it), for the real build test of TK018
# (crates/cudoctor/tests/real_build_readiness.rs,
# a_debian_python_without_its_dev_package_fails_as_predicted_and_the_printed_package_builds):
# a venv of the root's /usr/bin/python3.11 holding the real-env tier's torch stops at
# "fatal error: Python.h: No such file or directory", and the `apt-get install python3.11-dev`
# check prints, run in the root, makes the same build pass.
#
# Usage (as root: debootstrap and chroot):
#   scripts/realenv/no-python-headers-root.sh            make the root if missing, take the
#                                                        headers away (apt-get purge), build the
#                                                        test on the host, run it inside the root
#                                                        with CUDOCTOR_REAL_BUILDS=1 (minutes)
#   scripts/realenv/no-python-headers-root.sh -- CMD...  run CMD inside the root instead
#
# The root (about 600 MB) is kept at $CUDOCTOR_NO_PYTHON_HEADERS_ROOT (default
# ~/.cache/cudoctor-no-python-headers-root). The repository and $HOME (the real-env tier's
# torch environment, uv and its cache) are bind-mounted at their own paths, and unmounted at
# the end. debootstrap uses its default mirror.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
root=${CUDOCTOR_NO_PYTHON_HEADERS_ROOT:-$HOME/.cache/cudoctor-no-python-headers-root}

if [ ! -x "$root/usr/bin/python3.11" ] || [ ! -x "$root/usr/bin/g++" ]; then
    command -v debootstrap >/dev/null || apt-get install -y debootstrap
    mkdir -p "$root"
    # The interpreter alone (no python3.11-dev), the compilers an extension build runs.
    debootstrap --variant=minbase --include=python3.11,gcc,g++,ca-certificates bookworm "$root"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The host's certificate authorities (a machine behind an inspecting proxy adds its own).
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"

mounted=()
bind() {
    mkdir -p "$root$1"
    if ! mountpoint -q "$root$1"; then
        mount --bind "$1" "$root$1"
        mounted+=("$root$1")
    fi
}
cleanup() {
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}" || true; done
}
trap cleanup EXIT
mkdir -p "$root/proc"
if ! mountpoint -q "$root/proc"; then
    mount -t proc proc "$root/proc"
    mounted+=("$root/proc")
fi
bind /dev
bind "$HOME"
case "$repo/" in
"$HOME"/*) ;;
*) bind "$repo" ;;
esac

# Proxy, certificate and package-index settings pass through; nothing else of the host's.
passed=()
while IFS= read -r var; do passed+=("$var=${!var}"); done < <(compgen -e | grep -E '^(https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY|SSL_CERT_FILE|SSL_CERT_DIR|UV_[A-Z_]+|PIP_[A-Z_]+)$' || true)
in_root() {
    chroot "$root" /usr/bin/env -i HOME="$HOME" "${passed[@]}" \
        PATH="$HOME/.local/bin:$HOME/.cargo/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        DEBIAN_FRONTEND=noninteractive CUDOCTOR_REAL_BUILDS=1 "$@"
}

if [ "${1:-}" = "--" ]; then
    shift
    in_root "$@"
    exit $?
fi

# The state the test starts from: the headers' packages absent (the test installs them).
in_root apt-get purge -y -q python3.11-dev libpython3.11-dev >/dev/null 2>&1 || true
echo "python in the root: $(in_root python3.11 -c 'import sys; print(sys.version.split()[0])'), Python.h: $(test -e "$root/usr/include/python3.11/Python.h" && echo present || echo absent)"
test_bin=$(cd "$repo" && cargo test -p cudoctor --test real_build_readiness --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "real_build_readiness":
        print(m["executable"])')
in_root "$test_bin" --nocapture --test-threads 1 \
    a_debian_python_without_its_dev_package_fails_as_predicted_and_the_printed_package_builds
