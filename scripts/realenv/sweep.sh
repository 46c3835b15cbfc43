#!/usr/bin/env bash
# The sweep (issue 37): every package of scripts/realenv/sweep-packages.txt installed with uv into
# its own env (uv's cache under the user cache directory; one env at a time, deleted after it is
# judged), judged by `cudoctor check` and its --gpu what-ifs (sm_80, sm_86, sm_90, sm_120), the
# what-ifs compared with cuobjdump's listing of the package's core modules. Writes docs/sweep.md
# (and docs/sweep-results.jsonl, one line per package). Never part of the default test suite.
#
#   scripts/realenv/sweep.sh             every package not yet in docs/sweep-results.jsonl
#   scripts/realenv/sweep.sh NAME...     just these (judged again)
#   scripts/realenv/sweep.sh --table     rewrite docs/sweep.md from the results
#
# CUDOCTOR_SWEEP_ENVS: where the envs are made (default: the user cache directory's
# cudoctor-sweep; uv's cache in its uv-cache); CUDOCTOR_SWEEP_MIN_FREE_GB: stop when less is
# free there (default 15; below 20 GB the sweep's uv cache is emptied first).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
# shellcheck source=../ci/uv.sh
. scripts/ci/uv.sh
envs="${CUDOCTOR_SWEEP_ENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-sweep}"
results=docs/sweep-results.jsonl
# A uv cache of the sweep's own beside the envs (same file system, so installs are hard links),
# emptied by sweep.py when the disk runs short.
export UV_CACHE_DIR="${CUDOCTOR_SWEEP_UV_CACHE:-$envs/uv-cache}"
if [ -z "${CUDOCTOR_CUOBJDUMP:-}" ]; then
  eval "$(CUDOCTOR_CI_VENV="${CUDOCTOR_CI_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-ci/cuda-tools}" scripts/ci/install-cuda-tools.sh)"
fi
# CUDA 12's cuobjdump beside it: 13.x stops with "Invalid ELF" on some CUDA-12-era fat binaries.
# PyPI has no CUDA-12 cuobjdump wheel; triton 3.3.1 ships CUDA 12.8's.
tools_venv="${CUDOCTOR_CI_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cudoctor-ci/cuda-tools}"
find12() { ls "$tools_venv"/lib/python3*/site-packages/triton/backends/nvidia/bin/cuobjdump 2>/dev/null || true; }
cuobjdump12=$(find12)
if [ -z "$cuobjdump12" ] && [ -x "$tools_venv/bin/python" ]; then
  "$tools_venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps triton==3.3.1 >&2 || true
  cuobjdump12=$(find12)
fi
cargo build -q -p cudoctor
extra=()
case "${1:-}" in
  --table) extra=(--table-only); shift ;;
  "") ;;
  *)
    # Judged again: drop their earlier lines.
    if [ -f "$results" ]; then
      tmp=$(mktemp)
      python3 - "$results" "$@" >"$tmp" <<'PY'
import json, sys
names = set(sys.argv[2:])
for line in open(sys.argv[1]):
    if json.loads(line)["name"] not in names:
        print(line, end="")
PY
      mv "$tmp" "$results"
    fi
    ;;
esac
if [ "${1:-}" = "" ] && [ -f "$results" ] && [ ${#extra[@]} -eq 0 ]; then
  # Resume: the packages without a result line.
  mapfile -t todo < <(python3 - "$results" scripts/realenv/sweep-packages.txt <<'PY'
import json, sys
done = {json.loads(l)["name"] for l in open(sys.argv[1])}
for line in open(sys.argv[2]):
    line = line.strip()
    if line and not line.startswith("#"):
        name = line.split("|")[0].strip()
        if name not in done:
            print(name)
PY
)
  [ ${#todo[@]} -gt 0 ] || extra=(--table-only)
  set -- "${todo[@]}"
fi
exec python3 scripts/realenv/sweep.py --list scripts/realenv/sweep-packages.txt --envs "$envs" \
  --cudoctor "$root/target/debug/cudoctor" --cuobjdump "$CUDOCTOR_CUOBJDUMP" \
  ${cuobjdump12:+--cuobjdump12 "$cuobjdump12"} \
  --python "${CUDOCTOR_REALENV_PYTHON:-python3}" --results "$results" --table docs/sweep.md \
  --capture tests/fixtures/real/frameworks/sweep \
  --min-free-gb "${CUDOCTOR_SWEEP_MIN_FREE_GB:-15}" "${extra[@]}" "$@"
