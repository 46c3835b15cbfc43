#!/usr/bin/env bash
# A real MCP client for `cudoctor mcp`'s test (crates/cudoctor/tests/mcp.rs): the `mcp` package
# from the package index in a small environment cached under ~/.cache.
#
#   eval "$(scripts/ci/mcp-env.sh --env)"   # .ci/run: the workspace tests then use it
#   scripts/ci/mcp-env.sh                   # runs that test against it
#
# The test fails rather than skips when CUDOCTOR_REQUIRE_TOOLS=1 and the client is missing.
# Only the export line goes to stdout; progress and errors go to stderr.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
env="${CUDOCTOR_MCP_ENV:-$HOME/.cache/cudoctor-ci/mcp-client}"

if ! "$env/bin/python" -c "import mcp.client.stdio" >/dev/null 2>&1; then
  echo "mcp-env: creating $env" >&2
  # shellcheck source=uv.sh
  . "$root/scripts/ci/uv.sh"
  mkdir -p "$(dirname "$env")"
  uv venv --quiet --allow-existing "$env" >&2
  uv pip install --quiet --python "$env/bin/python" mcp >&2
fi
"$env/bin/python" -c "import importlib.metadata as m; print('mcp-env: mcp', m.version('mcp'), 'in $env')" >&2

if [ "${1:-}" = "--env" ]; then
  printf 'export CUDOCTOR_MCP_PYTHON=%q\n' "$env/bin/python"
  exit 0
fi
cd "$root"
CUDOCTOR_MCP_PYTHON="$env/bin/python" CUDOCTOR_REQUIRE_TOOLS=1 \
  cargo test -p cudoctor --test mcp
