#!/usr/bin/env bash
# Installs NVIDIA's CUDA compiler and cuobjdump from PyPI into .venv-ci, for the tests of the
# kernel-image reader (crates/cudoctor-fatbin/tests/nvcc.rs), then prints the lines to export:
#
#   eval "$(scripts/ci/install-cuda-tools.sh)"
#
# Idempotent: a venv that already holds the pinned versions is left alone. Only the export
# lines go to stdout; progress and errors go to stderr. Needs python3 (with venv), and a host
# C++ compiler (g++) plus binutils (objcopy) for the tests themselves.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${CUDOCTOR_CI_VENV:-$root/.venv-ci}"

# nvcc needs the crt headers, NVVM (cicc) and the runtime headers/libraries besides its own
# wheel; they are pinned to the same release so a new upload cannot change the test.
packages=(
  nvidia-cuda-nvcc==13.5.37
  nvidia-cuda-crt==13.5.37
  nvidia-nvvm==13.5.37
  nvidia-cuda-runtime==13.5.37
  nvidia-cuda-cuobjdump==13.5.37
  # ptxas 12.9 only: builds cubins with the CUDA 12 ELF header for the old-format test.
  nvidia-cuda-nvcc-cu12==12.9.86
)

installed_all() {
  [ -x "$venv/bin/python" ] || return 1
  local frozen
  frozen="$("$venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null)" || return 1
  local p
  for p in "${packages[@]}"; do
    grep -qxi -- "$p" <<<"$frozen" || return 1
  done
}

if ! installed_all; then
  echo "install-cuda-tools: installing ${packages[*]} into $venv" >&2
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}" >&2
fi

site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
nvcc="$site/nvidia/cu13/bin/nvcc"
cuobjdump="$site/nvidia/cu13/bin/cuobjdump"
ptxas12="$site/nvidia/cuda_nvcc/bin/ptxas"
for tool in "$nvcc" "$cuobjdump" "$ptxas12"; do
  if [ ! -x "$tool" ]; then
    echo "install-cuda-tools: $tool is missing after the install" >&2
    exit 1
  fi
done

printf 'export CUDOCTOR_NVCC=%q\n' "$nvcc"
printf 'export CUDOCTOR_CUOBJDUMP=%q\n' "$cuobjdump"
printf 'export CUDOCTOR_PTXAS12=%q\n' "$ptxas12"
