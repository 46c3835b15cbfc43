#!/usr/bin/env bash
# A real torch on the CPU for the tests of `cudoctor run` (crates/cudoctor/tests/run_command.rs):
# a small environment cached under ~/.cache, with torch's CPU wheel from PyTorch's CPU index when
# that index is reachable, else the default torch wheel (which runs on a CPU too).
#
#   eval "$(scripts/ci/run-observer-test.sh --env)"   # .ci/run: the workspace tests then use it
#   scripts/ci/run-observer-test.sh                   # runs those tests against it
#
# The tests fail rather than skip when CUDOCTOR_REQUIRE_TOOLS=1 and the interpreter is missing.
# Only the export line goes to stdout; progress and errors go to stderr.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
env="${CUDOCTOR_TORCH_ENV:-$HOME/.cache/cudoctor-ci/torch-cpu}"
cpu_index="https://download.pytorch.org/whl/cpu"

if ! "$env/bin/python" -c "import torch" >/dev/null 2>&1; then
  echo "run-observer-test: creating $env" >&2
  # shellcheck source=uv.sh
  . "$root/scripts/ci/uv.sh"
  mkdir -p "$(dirname "$env")"
  uv venv --quiet --allow-existing "$env" >&2
  if ! uv pip install --quiet --python "$env/bin/python" torch --index-url "$cpu_index" >&2; then
    echo "run-observer-test: the CPU index failed; installing the default torch wheel" >&2
    uv pip install --quiet --python "$env/bin/python" torch >&2
  fi
fi
"$env/bin/python" -c "import torch; print('run-observer-test: torch', torch.__version__, 'in $env')" >&2

if [ "${1:-}" = "--env" ]; then
  printf 'export CUDOCTOR_TORCH_PYTHON=%q\n' "$env/bin/python"
  exit 0
fi
cd "$root"
CUDOCTOR_TORCH_PYTHON="$env/bin/python" CUDOCTOR_REQUIRE_TOOLS=1 \
  cargo test -p cudoctor --test run_command --test deep_parallel
