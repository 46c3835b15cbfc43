#!/usr/bin/env bash
# A Debian sid root whose gcc (16) is newer than older CUDA releases accept, for the real build
# test of TK013 (crates/cudoctor/tests/real_build_readiness.rs,
# a_gcc_newer_than_the_pip_nvcc_accepts_is_refused_as_predicted_and_the_fix_builds): NVIDIA's
# pip compiler of CUDA 13.1 refuses gcc 16 (`#if __GNUC__ > 15` in its crt/host_config.h), and
# no gcc past 12 installs on Debian 12 itself.
#
# Usage (as root: debootstrap and chroot):
#   scripts/realenv/newer-gcc-root.sh            make the root if missing, build the test on the
#                                                host, run it inside the root with
#                                                CUDOCTOR_REAL_BUILDS=1 (about 8 minutes)
#   scripts/realenv/newer-gcc-root.sh -- CMD...  run CMD inside the root instead
#
# The root (about 900 MB) is kept at $CUDOCTOR_NEWER_GCC_ROOT (default
# ~/.cache/cudoctor-newer-gcc-root). The repository and $HOME (the real-env tier's torch
# environment, uv, the toolchains) are bind-mounted at their own paths, and unmounted at the end.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
root=${CUDOCTOR_NEWER_GCC_ROOT:-$HOME/.cache/cudoctor-newer-gcc-root}

if [ ! -x "$root/usr/bin/gcc-16" ] || [ ! -x "$root/usr/bin/gcc-15" ]; then
    command -v debootstrap >/dev/null || apt-get install -y debootstrap
    mkdir -p "$root"
    # gcc/g++ of sid are 16; g++-15 is the fix TK013 prints; the libraries the real-env
    # tier's Python links.
    debootstrap --variant=minbase \
        --include=gcc,g++,gcc-15,g++-15,ca-certificates,libffi8,libssl3t64,zlib1g,libbz2-1.0,liblzma5,libsqlite3-0,libreadline8t64,libncursesw6,libuuid1 \
        sid "$root" http://deb.debian.org/debian
fi

# shellcheck source=debian-root.sh
. "$repo/scripts/realenv/debian-root.sh"
root_env=(PATH="$HOME/.local/bin:$HOME/.cargo/bin:/usr/local/bin:/usr/bin:/bin" CUDOCTOR_REAL_BUILDS=1)
enter_root
run_given_command "$@"
echo "gcc in the root: $(in_root gcc -dumpfullversion), gcc-15: $(in_root gcc-15 -dumpfullversion)"
run_real_build_test a_gcc_newer_than_the_pip_nvcc_accepts_is_refused_as_predicted_and_the_fix_builds
