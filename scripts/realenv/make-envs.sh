#!/usr/bin/env bash
# Builds the real-env test tier: Python environments installed from the package index with uv,
# cached under the user cache directory, so the tests can compare cudoctor with what a real
# interpreter does (crates/cudoctor/tests/real_envs.rs).
#
#   scripts/realenv/make-envs.sh            the core set (what .ci/run uses)
#   scripts/realenv/make-envs.sh --full     also the extended set (large downloads)
#   scripts/realenv/make-envs.sh NAME...    just these
#
# Each env is made once; a `.cudoctor-spec` file records what it was made from, and an env whose
# spec changed is made again. Prints the cache directory on stdout at the end.
set -euo pipefail
cache="${CUDOCTOR_REALENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-realenv}"
mkdir -p "$cache"
python_bin="${CUDOCTOR_REALENV_PYTHON:-python3}"
# shellcheck source=../ci/uv.sh
. "$(dirname "$0")/../ci/uv.sh"

core=(stock-current stock-cu126 nvcc-cu13 deleted-wheel-lib)
extended=(ssp-over-user jax-cuda12-beside-torch companion-wrong-release jax-cuda12 jax-plugin-wrong-release
  cupy-cuda12x-beside-torch onnxruntime-gpu sglang-beside-torch bnb-transformers xformers-matching
  nvcc-cu12 jax-cuda13 cuda13-frameworks-beside-torch cupy-cuda12x-beside-jax-cuda13
  xformers-other-torch vllm-stock sglang-stock tensorflow-and-cuda
  companions-beside-torch-2.15 ctranslate2-numba-cuda ctranslate2-beside-torch-cu126
  paddlepaddle-cpu paddlepaddle-gpu cudf-cu12 dali-cuda120)

spec_of() {
  case "$1" in
    # Today's stock install: the index's default torch with its pair.
    stock-current) echo "venv|torch torchvision torchaudio" ;;
    # A CUDA-12-era stock set: torch 2.7.1 (cu126 on the index) with its pair.
    stock-cu126) echo "venv|torch==2.7.1 torchvision==0.22.1 torchaudio==2.7.1" ;;
    # A --system-site-packages venv with its own torch while the user site (~/.local of the
    # HOME in ssp-over-user-home, which the tests set) holds another torch.
    ssp-over-user) echo "ssp|torch==2.7.1|user:torch" ;;
    # A CUDA-12 framework next to a CUDA-13 torch: the nvidia -cu12 wheels land beside cu13 ones.
    jax-cuda12-beside-torch) echo "venv|torch torchvision jax[cuda12]" ;;
    # torchvision from another torch release, installed with --no-deps.
    companion-wrong-release) echo "venv|torch==2.7.1|--no-deps torchvision==0.23.0" ;;
    # torch 2.15 with torchvision of another release (--no-deps) and the generic torchaudio
    # 2.11.1 (py3-none, Requires-Dist torch>=2.11), which imports and runs with it.
    companions-beside-torch-2.15) echo "venv|torch==2.15.0 torchaudio==2.11.1|--no-deps torchvision==0.28.0" ;;
    # JAX for CUDA 12 alone: jaxlib, the CUDA plugin and PJRT plugin, the -cu12 wheels.
    jax-cuda12) echo "venv|jax[cuda12]==0.10.2" ;;
    # The CUDA plugin of another JAX release, installed with --no-deps over a matching set.
    jax-plugin-wrong-release) echo "venv|jax[cuda12]==0.10.2|--no-deps jax-cuda12-plugin==0.10.1" ;;
    # JAX for CUDA 13 alone: the CUDA-13 plugin, PJRT plugin and the unsuffixed CUDA-13 wheels.
    jax-cuda13) echo "venv|jax[cuda13]==0.10.2" ;;
    # One CUDA major for every framework, as on the GPU machine: torch, jax[cuda13], cupy-cuda13x.
    cuda13-frameworks-beside-torch) echo "venv|torch torchvision jax[cuda13]==0.10.2 cupy-cuda13x" ;;
    # CuPy for CUDA 12 next to a CUDA-13 torch: two CUDA majors in one env.
    cupy-cuda12x-beside-torch) echo "venv|torch cupy-cuda12x" ;;
    # Two CUDA majors without torch: JAX for CUDA 13 and CuPy for CUDA 12.
    cupy-cuda12x-beside-jax-cuda13) echo "venv|jax[cuda13]==0.10.2 cupy-cuda12x" ;;
    # ONNX Runtime's CUDA build alone (its CUDA and cuDNN in build_and_package_info.py).
    onnxruntime-gpu) echo "venv|onnxruntime-gpu" ;;
    # SGLang (pins one torch release) next to today's torch, installed with --no-deps.
    sglang-beside-torch) echo "venv|torch|--no-deps sglang==0.5.23" ;;
    # torch with bitsandbytes (which opens its own CUDA library at run time) and transformers.
    bnb-transformers) echo "venv|torch bitsandbytes transformers" ;;
    # torch with the xformers release built for it (the resolver picks the one pinning it).
    xformers-matching) echo "venv|torch==2.7.1 xformers" ;;
    # xformers built for torch 2.7.1 (its Requires-Dist and cpp_lib.json say so) over torch 2.8.0.
    xformers-other-torch) echo "venv|torch==2.8.0|--no-deps xformers==0.0.31" ;;
    # vLLM as its own metadata installs it: its torch, xformers, flashinfer; Hopper-only modules.
    vllm-stock) echo "venv|vllm" ;;
    # SGLang with its own dependencies: sglang-kernel, flashinfer, its torch.
    sglang-stock) echo "venv|sglang" ;;
    # TensorFlow with its CUDA wheels (the and-cuda extra), which it opens at import.
    tensorflow-and-cuda) echo "venv|tensorflow[and-cuda]" ;;
    # CTranslate2 (a CUDA 12 build) and numba-cuda with its CUDA 12 extra, as their docs
    # install them: their --deep probes are compared with what each says when asked directly.
    ctranslate2-numba-cuda) echo "venv|ctranslate2==4.8.5 numba-cuda[cu12]==0.30.4" ;;
    # CTranslate2 beside a CUDA 12 torch, whose import loads nvidia-cublas-cu12's libcublas.so.12:
    # CTranslate2's own dlopen of that name finds it only in a process that imported torch first.
    ctranslate2-beside-torch-cu126) echo "venv|torch==2.7.1 ctranslate2==4.8.5" ;;
    # PaddlePaddle's CPU and CUDA builds, RAPIDS cuDF and DALI for CUDA 12: each framework's
    # --deep probe, on a machine without a GPU, names the framework's own reason. (setuptools:
    # paddle imports it at start-up, and a venv made by uv has none. TensorRT's libraries come
    # only from NVIDIA's own index, and llama-cpp-python and Transformer Engine's torch extension
    # only as source distributions: none of them here.)
    paddlepaddle-cpu) echo "venv|paddlepaddle setuptools" ;;
    paddlepaddle-gpu) echo "venv|paddlepaddle-gpu setuptools" ;;
    cudf-cu12) echo "venv|cudf-cu12" ;;
    dali-cuda120) echo "venv|nvidia-dali-cuda120" ;;
    # A copy (hard links) of stock-cu126 with one wheel library deleted: registered, file gone.
    deleted-wheel-lib) echo "copy|stock-cu126|nvidia/cudnn/lib/libcudnn.so.9" ;;
    # Toolkits from NVIDIA's nvcc wheels: CUDA_HOME at another major's nvcc, and an nvcc that
    # cannot build an arch of TORCH_CUDA_ARCH_LIST (CUDA 13 dropped sm_70).
    nvcc-cu12) echo "venv|nvidia-cuda-nvcc-cu12" ;;
    nvcc-cu13) echo "venv|nvidia-cuda-nvcc" ;;
    *) echo "unknown env $1" >&2; return 1 ;;
  esac
}

make_env() {
  local name=$1 spec dir kind pkgs extra
  spec=$(spec_of "$name")
  dir="$cache/$name"
  if [ -f "$dir/.cudoctor-spec" ] && [ "$(cat "$dir/.cudoctor-spec")" = "$spec" ]; then
    echo "real env $name: cached" >&2
    return 0
  fi
  rm -rf "$dir"
  IFS='|' read -r kind pkgs extra <<<"$spec"
  if [ "$kind" = copy ]; then
    # pkgs: the env copied; extra: the file (under site-packages) deleted from the copy.
    make_env "$pkgs"
    echo "real env $name: hard-link copy of $pkgs without $extra" >&2
    cp -al "$cache/$pkgs" "$dir"
    rm -f "$dir/.cudoctor-spec"
    local victim
    victim=$(ls -d "$dir"/lib/python3*/site-packages/"$extra")
    rm "$victim"
    echo "$spec" >"$dir/.cudoctor-spec"
    return 0
  fi
  echo "real env $name: installing $pkgs $extra" >&2
  if [ "$kind" = ssp ]; then
    uv venv -q --system-site-packages --python "$python_bin" "$dir"
  else
    uv venv -q --python "$python_bin" "$dir"
  fi
  # shellcheck disable=SC2086
  VIRTUAL_ENV="$dir" uv pip install -q $pkgs >&2
  case "$extra" in
    "") ;;
    user:*)
      # Into the user site of a HOME of its own, never the real ~/.local.
      local home="$dir-home" pyver
      pyver=$("$dir/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
      rm -rf "$home"
      # shellcheck disable=SC2086
      uv pip install -q --python "$dir/bin/python" --target "$home/.local/lib/python$pyver/site-packages" ${extra#user:} >&2
      ;;
    *)
      # shellcheck disable=SC2086
      VIRTUAL_ENV="$dir" uv pip install -q $extra >&2
      ;;
  esac
  echo "$spec" >"$dir/.cudoctor-spec"
}

names=()
case "${1:-}" in
  "") names=("${core[@]}") ;;
  --full) names=("${core[@]}" "${extended[@]}") ;;
  *) names=("$@") ;;
esac
for n in "${names[@]}"; do make_env "$n"; done
echo "$cache"
