#!/usr/bin/env bash
# The container doctor's "device nodes present but the device cgroup denies them", for real: the
# binary runs in a private mount namespace laid out as a container's inside (a /dev of its own
# with /dev/nvidiactl and /dev/nvidia0 made by mknod as a runtime makes them, /run/.containerenv),
# its process in a cgroup whose device rules deny the NVIDIA major (195):
#   - cgroup v2: a BPF_PROG_TYPE_CGROUP_DEVICE program (scripts/ci/cgroup/deny-nvidia-bpf.py),
#     seen through a cgroup namespace's own cgroup2 mount, as Docker and Podman set it up:
#     PLT004, judged by the open of /dev/nvidiactl (EPERM), the rules being unreadable;
#   - cgroup v1: a devices cgroup with Docker's default allow-list (`a` denied, then the usual
#     c 1:*, 5:*, 136:*, 10:200), mounted at /sys/fs/cgroup/devices as Docker mounts it:
#     PLT004 naming the rules that lack c 195:255; and one that allows all but the major
#     (devices.deny), which the kernel lists as `a *:* rwm`: PLT004 by the open alone;
#   - the same nodes without the rules: the open reaches the (absent) driver (ENXIO), no PLT004.
# Needs root (cgroups, bpf(2), mknod, mount namespaces). Prints SKIPPED and exits 0 where that is
# refused, unless CUDOCTOR_REQUIRE_TOOLS=1 (as .ci/run sets), where it fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

skip() {
  if [ "${CUDOCTOR_REQUIRE_TOOLS:-0}" = 1 ]; then
    echo "cgroup-test: FAILED: $1" >&2
    exit 1
  fi
  echo "cgroup-test: SKIPPED: $1" >&2
  exit 0
}
fail() {
  echo "cgroup-test: FAILED: $1" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || skip "not root (cgroups, bpf(2) and mknod need it)"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
command -v python3 >/dev/null || skip "python3 is needed to load the device program"
unshare -m -C true 2>/dev/null || skip "unshare -m -C (mount and cgroup namespaces) is refused here"
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cg2" ] || skip "no cgroup2 hierarchy is mounted"
cg1=$(awk '$9 == "cgroup" && $NF ~ /(^|,)devices(,|$)/ { print $5; exit }' /proc/self/mountinfo)

bin="${CUDOCTOR_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/cudoctor}"
[ -x "$bin" ] || cargo build --quiet -p cudoctor
work="$(mktemp -d)"
v2="$cg2/cudoctor-test-$$"
v1="${cg1:+$cg1/cudoctor-test-$$}"
cleanup() {
  rmdir "$v2" 2>/dev/null || true
  [ -z "$v1" ] || rmdir "$v1" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A container's inside: its own /dev (the NVIDIA nodes made as the runtime makes them, the few
# nodes any program opens), /run/.containerenv; then the process joins CGROUP (if any), gets a
# cgroup namespace and sees its own cgroup where a container does; then check runs.
#   in_container OUT CGROUP_DIR MODE   (MODE: v2, v1 or none)
in_container() {
  unshare -m --propagation private sh -c '
    set -e
    out=$1 cg=$2 mode=$3 bin=$4
    mount -t tmpfs -o mode=755 cudoctor-dev /dev
    mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5
    mknod -m 666 /dev/random c 1 8; mknod -m 666 /dev/urandom c 1 9
    mknod -m 666 /dev/nvidiactl c 195 255; mknod -m 666 /dev/nvidia0 c 195 0
    mount -t tmpfs cudoctor-run /run
    : >/run/.containerenv
    [ "$mode" = none ] || echo $$ >"$cg/cgroup.procs"
    exec unshare -C sh -c "
      set -e
      case $mode in
        v2) mount -t cgroup2 cgroup2 /sys/fs/cgroup ;;
        v1) mount --bind \"$cg\" /sys/fs/cgroup/devices ;;
      esac
      exec \"$bin\" check --format json" >"$out" 2>"$out.err"
  ' sh "$1" "$2" "$3" "$bin" || true
}

judge() { # OUT CASE
  python3 - "$1" "$2" <<'PY'
import json, sys
path, case = sys.argv[1], sys.argv[2]
try:
    report = json.load(open(path))
except ValueError as e:
    sys.exit(f"{case}: no JSON report ({e}): {open(path + '.err').read()[-2000:]}")
snap = report["snapshot"]
container = snap["platform"].get("container") or {}
# /run/.containerenv marks it (a machine with /.dockerenv names docker first).
assert "/run/.containerenv exists" in container.get("evidence", []), container
access = container["gpu_access"]
assert "/dev/nvidiactl" in snap["platform"]["device_nodes"], snap["platform"]["device_nodes"]
plt004 = [f for f in report["findings"] if f["code"] == "PLT004"]
codes = [f["code"] for f in report["findings"]]
if case == "none":
    assert access["nvidiactl_open"] == {"kind": "failed", "errno": 6}, access
    assert not plt004, codes
    print(f"cgroup-test: nodes, no rules: open ENXIO (no driver), findings {codes}", file=sys.stderr)
    sys.exit(0)
assert access["nvidiactl_open"] == {"kind": "not_permitted"}, access
assert len(plt004) == 1, codes
evidence = " | ".join(plt004[0]["evidence"])
assert "Operation not permitted" in evidence, evidence
if case == "v2":
    assert access["cgroup"] == {"kind": "v2"}, access["cgroup"]
    assert "cgroup v2" in evidence, evidence
elif case == "v1":
    assert access["cgroup"]["kind"] == "v1", access["cgroup"]
    assert "no rule for c 195:255" in evidence, evidence
else:
    assert access["cgroup"] == {"kind": "v1", "rules": ["a *:* rwm"]}, access["cgroup"]
    assert "exceptions" in evidence and "no rule" not in evidence, evidence
print(f"cgroup-test: {case}: {plt004[0]['title']} ({evidence})", file=sys.stderr)
PY
}

# cgroup v2: the device program.
mkdir "$v2"
python3 scripts/ci/cgroup/deny-nvidia-bpf.py "$v2" || skip "the device program could not be attached (above)"
in_container "$work/v2.json" "$v2" v2
judge "$work/v2.json" v2 || fail "cgroup v2: the denial was not judged PLT004"

# The same nodes, no rule against them.
in_container "$work/none.json" "" none
judge "$work/none.json" none || fail "nodes without rules: judged as denied"

# cgroup v1: Docker's default allow-list, where the machine mounts the v1 devices controller.
if [ -n "$v1" ]; then
  mkdir "$v1"
  echo a >"$v1/devices.deny"
  for rule in 'c 1:* rwm' 'c 5:* rwm' 'c 136:* rwm' 'c 10:200 rwm' 'c 4:* rwm'; do
    echo "$rule" >"$v1/devices.allow"
  done
  in_container "$work/v1.json" "$v1" v1
  judge "$work/v1.json" v1 || fail "cgroup v1: the denial was not judged PLT004"
  # An allow-all cgroup with one exception (devices.deny of the major): the kernel lists it as
  # `a *:* rwm`, hiding the exception; the open tells.
  rmdir "$v1"
  mkdir "$v1"
  echo 'c 195:* rwm' >"$v1/devices.deny"
  in_container "$work/v1-exception.json" "$v1" v1
  judge "$work/v1-exception.json" v1-exception || fail "cgroup v1 allow-all with an exception: not judged PLT004 by the open"
else
  echo "cgroup-test: no cgroup v1 devices controller mounted here: the v1 case is the fake trees' (crates/cudoctor/tests/container_doctor.rs)" >&2
fi
echo "cgroup-test: passed" >&2
