#!/usr/bin/env bash
# Validates `cudoctor check --format prometheus` with Prometheus's own checker, `promtool check
# metrics` (Debian's prometheus package): the real H200 snapshots of docs/device-runs, a snapshot
# whose label values need escaping and whose probes failed, and a live check of this machine.
#
# Installs the package when promtool is missing and this runs as root. Without promtool it prints
# SKIPPED and exits 0, unless CUDOCTOR_REQUIRE_TOOLS=1 (as .ci/run sets), where it fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

skip() {
  if [ "${CUDOCTOR_REQUIRE_TOOLS:-0}" = 1 ]; then
    echo "promtool-test: FAILED: $1" >&2
    exit 1
  fi
  echo "promtool-test: SKIPPED: $1" >&2
  exit 0
}

if ! command -v promtool >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "promtool-test: installing Debian's prometheus package for promtool" >&2
    timeout 600 apt-get install -y --no-install-recommends prometheus >/tmp/promtool-apt.log 2>&1 ||
      { timeout 300 apt-get update >/dev/null 2>&1 &&
        timeout 600 apt-get install -y --no-install-recommends prometheus >/tmp/promtool-apt.log 2>&1; } ||
      skip "promtool is not installed and apt-get could not install prometheus (see /tmp/promtool-apt.log)"
  else
    skip "promtool is not installed (apt-get install prometheus, as root)"
  fi
fi
command -v python3 >/dev/null || skip "python3 is needed to write the escaping snapshot"

# The binary the test command built (CI builds it in a fresh clone sharing this target directory).
bin="${CUDOCTOR_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/cudoctor}"
[ -x "$bin" ] || cargo build --quiet -p cudoctor
echo "promtool-test: $bin" >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A snapshot whose label values hold a quote, a backslash and a line feed, with a probe that timed
# out and one that failed.
python3 - "$root/docs/device-runs/2026-11-30-h200x2/check.json" "$work/odd.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
snap = report["snapshot"]
snap["driver"]["gpus"][0]["name"] = 'NVIDIA "H200" \\ test\nsecond line'
snap["python_envs"][0]["prefix"] = '/opt/with "quote"'
# A hostile package's values: CR, ESC, a right-to-left override, a word joiner, tag characters.
# The format has no escape for them; one raw in a label value would invalidate the whole scrape.
for env in snap["python_envs"]:
    if env.get("torch"):
        env["torch"]["version"] = "2.9.0\r\x1b[31m\u202egpt\u2060\U000e0041\u00ad"
snap["driver"]["gpus"][-1]["name"] = "H200\r\x1b]0;t\x07\u2028\u061c"
snap["driver"]["attempts"].append({"source": "nvidia-smi", "outcome": "timed_out", "detail": "5 s"})
snap["toolkit"]["attempts"].append({"source": "nvcc --version", "outcome": "failed", "detail": "exit 1"})
json.dump(snap, open(sys.argv[2], "w"))
PY

check() {
  local name="$1"; shift
  local status=0
  "$bin" check --format prometheus "$@" >"$work/$name.prom" || status=$?
  # 0 healthy, 1 problems found: both print a full exposition.
  if [ "$status" -gt 1 ]; then
    echo "promtool-test: cudoctor check $* exited $status" >&2
    exit 1
  fi
  if ! promtool check metrics <"$work/$name.prom"; then
    echo "promtool-test: promtool rejected the exposition of $name:" >&2
    cat "$work/$name.prom" >&2
    exit 1
  fi
  echo "promtool-test: $name: $(grep -vc '^#' "$work/$name.prom") samples accepted by promtool"
}

check h200x2 --snapshot docs/device-runs/2026-11-30-h200x2/check.json
check h200x1-deep --snapshot docs/device-runs/2026-11-30-h200x1/deep.json
check escaping --snapshot "$work/odd.json"
grep -q 'cudoctor_probe_failed{section="driver",source="nvidia-smi",outcome="timed_out"} 1' "$work/escaping.prom" ||
  { echo "promtool-test: the timed-out probe is missing" >&2; exit 1; }
grep -qF 'name="NVIDIA \"H200\" \\ test\nsecond line"' "$work/escaping.prom" ||
  { echo "promtool-test: the GPU name is not escaped as expected" >&2; exit 1; }
if LC_ALL=C grep -qP '[\x00-\x09\x0b-\x1f\x7f]' "$work/escaping.prom"; then
  echo "promtool-test: a control character reached the exposition" >&2; exit 1
fi
check this-machine
echo "promtool-test: ok"
