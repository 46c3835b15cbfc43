#!/usr/bin/env bash
# The real Windows wheels the Windows tier reads, downloaded once for win_amd64 and unpacked
# under the user cache (about 820 MB of downloads, 500 MB unpacked):
#   torch 2.15.0 (the CPU build: c10.dll, torch_cpu.dll, torch_python.dll, ...), torchvision
#   0.29.2 (an extension of torch), and the Visual C++ runtime as the msvc-runtime wheel ships it
#   in two releases: 14.51.36231 (current, with vcruntime140_threads.dll) and 14.34.31931 (an
#   older one without it); and from NVIDIA's CUDA wheels for win_amd64 only cudart64_12.dll
#   (nvidia-cuda-runtime-cu12 12.9.79) and cudnn64_9.dll (nvidia-cudnn-cu12 9.28.0.42), with
#   their dist-info.
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
# NVIDIA's CUDA wheels for win_amd64 (torch's CUDA wheels for Windows are not on PyPI, these
# are): only their small DLLs and dist-info are kept (cudart64_12.dll 0.6 MB, cudnn64_9.dll
# 0.3 MB), the wheel itself (cuDNN's is 690 MB) is removed once they are out. The tests load
# them beside a stand-in of torch's CUDA library (tests/fixtures/windows/cuda).
partial=(
  "nvidia-cuda-runtime-cu12==12.9.79 nvidia/cuda_runtime/bin/cudart64_12.dll"
  "nvidia-cudnn-cu12==9.28.0.42 nvidia/cudnn/bin/cudnn64_9.dll"
)
for w in "${partial[@]}"; do
  read -r spec member <<<"$w"
  name=${spec%%==*}
  version=${spec##*==}
  target="unpacked/${name//-/_}-$version-partial"
  [ -f "$target/.unpacked" ] && continue
  rm -rf "$target" "partial-download"
  echo "fetch-wheels: downloading $spec for win_amd64 (keeping $member)" >&2
  pip_download --platform win_amd64 --only-binary=:all: --no-deps "$spec" -d partial-download
  file=$(ls partial-download/*.whl | head -n 1)
  python3 - "$file" "$target" "$member" <<'PY'
import sys, zipfile
wheel, target, member = sys.argv[1:]
z = zipfile.ZipFile(wheel)
for n in z.namelist():
    if n == member or ".dist-info/" in n:
        z.extract(n, target)
PY
  rm -rf partial-download
  touch "$target/.unpacked"
done
echo "$cache/unpacked"
