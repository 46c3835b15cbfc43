#!/usr/bin/env bash
# Copies what cudoctor reads of the framework builds in real envs (scripts/realenv/make-envs.sh)
# into tests/fixtures/real/frameworks/<env>/venv: pyvenv.cfg, each CUDA-relevant dist-info's
# METADATA header (the description after the first blank line is dropped), the RECORD lines of
# shared objects for the framework wheels, and the version and build-info modules. The result is
# a fake environment root that `cudoctor check --root` reads as the real one.
#
#   scripts/realenv/capture-framework-fixtures.sh jax-cuda12 onnxruntime-gpu ...
set -euo pipefail
cache="${CUDOCTOR_REALENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-realenv}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
for name in "$@"; do
  src="$cache/$name"
  [ -f "$src/.cudoctor-spec" ] || { echo "no real env $name under $cache" >&2; exit 1; }
  dst="$repo/tests/fixtures/real/frameworks/$name/venv"
  rm -rf "$dst"
  mkdir -p "$dst"
  grep -v '^home' "$src/pyvenv.cfg" >"$dst/pyvenv.cfg"
  cp "$src/.cudoctor-spec" "$dst/../spec"
  sp_rel=$(cd "$src" && ls -d lib/python3*/site-packages)
  sp="$src/$sp_rel"
  mkdir -p "$dst/$sp_rel"
  for d in "$sp"/*.dist-info; do
    base=$(basename "$d")
    case "$base" in
      torch-*|torchvision-*|torchaudio-*|triton-*|jax-*|jaxlib-*|jax_*|cupy*|onnxruntime*|tensorflow*|vllm-*|sglang*|sgl_kernel*|flashinfer*|nvidia_*|cuda_*) ;;
      *) continue ;;
    esac
    mkdir -p "$dst/$sp_rel/$base"
    sed '/^$/q' "$d/METADATA" >"$dst/$sp_rel/$base/METADATA"
    case "$base" in
      jax_cuda*|cupy*|onnxruntime*|vllm-*)
        grep -E '\.so(\.|,)' "$d/RECORD" >"$dst/$sp_rel/$base/RECORD" || true ;;
    esac
  done
  for f in torch/version.py cupy/.data/_wheel.json onnxruntime/capi/build_and_package_info.py \
           tensorflow/python/platform/build_info.py; do
    if [ -f "$sp/$f" ]; then
      mkdir -p "$(dirname "$dst/$sp_rel/$f")"
      cp "$sp/$f" "$dst/$sp_rel/$f"
    fi
  done
done
