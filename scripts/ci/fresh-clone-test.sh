#!/usr/bin/env bash
# Runs the README's test command in a fresh clone of the commit, in an empty temporary directory
# (nothing beside it: no ../shared, no .venv-ci), so the tests read only what the repository
# carries. It builds in target/fresh-clone of the checkout (or CUDOCTOR_FRESH_TARGET), never in
# the checkout's own build directory: cargo names workspace crates by their relative path, so a
# shared one would mix the two trees' compile-time paths (CARGO_MANIFEST_DIR).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
commit="$(git -C "$root" rev-parse HEAD)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

git clone --quiet --no-local "$root" "$work/cudoctor"
git -C "$work/cudoctor" checkout --quiet --detach "$commit"
if [ -e "$work/shared" ]; then
  echo "fresh-clone-test: $work/shared exists" >&2
  exit 1
fi

# The command under "Run the tests:" in README.md, fenced as sh.
test_cmd="$(awk '/^Run the tests:/ {on = 1; next} on && /^```sh/ {inside = 1; next}
  inside && /^```/ {exit} inside {print}' "$work/cudoctor/README.md")"
if [ -z "$test_cmd" ]; then
  echo "fresh-clone-test: no test command under 'Run the tests:' in README.md" >&2
  exit 1
fi

cd "$work/cudoctor"
export CARGO_TARGET_DIR="${CUDOCTOR_FRESH_TARGET:-$root/target/fresh-clone}"
echo "fresh-clone-test: in a clone of $commit: $test_cmd" >&2
bash -euo pipefail -c "$test_cmd"
