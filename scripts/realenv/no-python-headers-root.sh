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

# shellcheck source=debian-root.sh
. "$repo/scripts/realenv/debian-root.sh"
root_env=(PATH="$HOME/.local/bin:$HOME/.cargo/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    DEBIAN_FRONTEND=noninteractive CUDOCTOR_REAL_BUILDS=1)
enter_root
run_given_command "$@"
# The state the test starts from: the headers' packages absent (the test installs them).
in_root apt-get purge -y -q python3.11-dev libpython3.11-dev >/dev/null 2>&1 || true
echo "python in the root: $(in_root python3.11 -c 'import sys; print(sys.version.split()[0])'), Python.h: $(test -e "$root/usr/include/python3.11/Python.h" && echo present || echo absent)"
run_real_build_test a_debian_python_without_its_dev_package_fails_as_predicted_and_the_printed_package_builds
