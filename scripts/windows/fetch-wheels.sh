#!/usr/bin/env bash
# The real Windows wheels the Windows tier reads, downloaded once for win_amd64 and unpacked
# under the user cache (about 130 MB of downloads, 500 MB unpacked):
#   torch 2.15.0 (the CPU build: c10.dll, torch_cpu.dll, torch_python.dll, ...), torchvision
#   0.29.2 (an extension of torch), and the Visual C++ runtime as the msvc-runtime wheel ships it
#   in two releases: 14.51.36231 (current, with vcruntime140_threads.dll) and 14.34.31931 (an
#   older one without it).
# Prints the directory of the unpacked wheels (one subdirectory per wheel) on stdout; the tests
# read it from CUDOCTOR_WINDOWS_WHEELS.
set -euo pipefail
cache="${CUDOCTOR_REALENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-realenv}/windows"
mkdir -p "$cache/unpacked"
cd "$cache"
# name==version python-version
wheels=(
  "torch==2.15.0 3.12"
  "torchvision==0.29.2 3.12"
  "msvc-runtime==14.51.36231 3.12"
  "msvc-runtime==14.34.31931 3.8"
)
# `timeout` runs programs, not shell functions: it goes inside.
pip_download() {
  if python3 -m pip --version >/dev/null 2>&1; then
    timeout 900 python3 -m pip download --quiet "$@"
  else
    timeout 900 uv tool run --quiet pip download --quiet "$@"
  fi
}
for w in "${wheels[@]}"; do
  read -r spec py <<<"$w"
  name=${spec%%==*}
  version=${spec##*==}
  file=$(ls "${name//-/_}-$version-"*win_amd64.whl 2>/dev/null | head -n 1 || true)
  if [ -z "$file" ]; then
    echo "fetch-wheels: downloading $spec for win_amd64, Python $py" >&2
    pip_download --platform win_amd64 --only-binary=:all: --no-deps \
      --python-version "$py" "$spec" -d "$cache"
    file=$(ls "${name//-/_}-$version-"*win_amd64.whl | head -n 1)
  fi
  target="unpacked/${file%.whl}"
  if [ ! -f "$target/.unpacked" ]; then
    rm -rf "$target"
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$file" "$target"
    touch "$target/.unpacked"
  fi
done
echo "$cache/unpacked"
