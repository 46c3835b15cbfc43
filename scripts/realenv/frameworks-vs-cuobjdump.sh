#!/usr/bin/env bash
# The kernel images cudoctor reads from the frameworks' CUDA libraries (JAX's CUDA plugins,
# CuPy, ONNX Runtime's providers) against cuobjdump's listing of the same files, image for image
# (cudoctor-fatbin's real_libraries_match_cuobjdump), in the extended real-env tier
# (scripts/realenv/make-envs.sh --full). Fails when no framework env is there.
# Usage: scripts/realenv/frameworks-vs-cuobjdump.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-realenv
eval "$(scripts/ci/install-cuda-tools.sh)"
dirs=()
for rel in jax-cuda12/jax_cuda12_plugin jax-cuda13/jax_cuda13_plugin \
           cupy-cuda12x-beside-torch/cupy cuda13-frameworks-beside-torch/cupy \
           onnxruntime-gpu/onnxruntime/capi; do
  env=${rel%%/*} pkg=${rel#*/}
  for d in "$cache/$env"/lib/python3*/site-packages/"$pkg"; do
    [ -d "$d" ] && dirs+=("$d")
  done
done
[ ${#dirs[@]} -gt 0 ] || { echo "no framework env under $cache (make-envs.sh --full)" >&2; exit 1; }
CUDOCTOR_REQUIRE_CUDA_TOOLS=1 CUDOCTOR_REAL_LIBS=$(IFS=:; echo "${dirs[*]}") \
  cargo test -p cudoctor-fatbin --test nvcc real_libraries_match_cuobjdump -- --nocapture
