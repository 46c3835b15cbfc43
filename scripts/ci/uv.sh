# Sourced (`. scripts/ci/uv.sh`) by the scripts that make environments with uv: puts uv on PATH,
# installing it with pip into the user's ~/.local when a fresh machine has none.
if ! command -v uv >/dev/null 2>&1; then
  export PATH="$HOME/.local/bin:$PATH"
  if ! command -v uv >/dev/null 2>&1; then
    "${CUDOCTOR_REALENV_PYTHON:-python3}" -m pip install --quiet --user uv >&2 ||
      "${CUDOCTOR_REALENV_PYTHON:-python3}" -m pip install --quiet uv >&2
  fi
fi
