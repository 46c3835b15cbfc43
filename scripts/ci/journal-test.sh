#!/usr/bin/env bash
# The kernel log read from the systemd journal where /dev/kmsg is closed, for real: a journal
# file written by systemd-journal-remote (Debian's systemd-journal-remote package) from kernel
# records of this boot (scripts/ci/journal/kernel-export.py: the real NVRM lines of
# tests/fixtures/kernel-log/xid-lines.txt), laid where journalctl looks
# (/var/log/journal/<machine-id>/) in a private mount namespace whose /dev has no kmsg (as a
# container's has none). Checks, with the binary's real `journalctl -k` call:
#   - the Xid events are read from the journal (the source says so) and judged (GPU004);
#   - the SELinux and AppArmor denials of NVIDIA's files are read from the same journal
#     (the security facts' kernel log says so);
#   - with an empty journal directory, the kernel log is "not read", saying why for both.
# Needs root (mount namespaces, mknod) and unshare. Installs the package when missing and this
# runs as root. Otherwise prints SKIPPED and exits 0, unless CUDOCTOR_REQUIRE_TOOLS=1 (as .ci/run
# sets), where it fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

skip() {
  if [ "${CUDOCTOR_REQUIRE_TOOLS:-0}" = 1 ]; then
    echo "journal-test: FAILED: $1" >&2
    exit 1
  fi
  echo "journal-test: SKIPPED: $1" >&2
  exit 0
}
fail() {
  echo "journal-test: FAILED: $1" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || skip "not root (a private mount namespace and mknod need it)"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
command -v python3 >/dev/null || skip "python3 is needed to write the journal's export stream"
[ -x /usr/bin/journalctl ] || [ -x /bin/journalctl ] || skip "no journalctl (systemd)"
remote=/lib/systemd/systemd-journal-remote
if [ ! -x "$remote" ]; then
  if command -v apt-get >/dev/null; then
    echo "journal-test: installing Debian's systemd-journal-remote" >&2
    timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd-journal-remote >/tmp/journal-apt.log 2>&1 ||
      { timeout 300 apt-get update >/dev/null 2>&1 &&
        timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd-journal-remote >/tmp/journal-apt.log 2>&1; } ||
      skip "systemd-journal-remote is not installed and apt-get could not install it (see /tmp/journal-apt.log)"
  else
    skip "systemd-journal-remote is not installed (apt-get install systemd-journal-remote)"
  fi
fi
unshare -m true 2>/dev/null || skip "unshare -m is refused here"

bin="${CUDOCTOR_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/cudoctor}"
[ -x "$bin" ] || cargo build --quiet -p cudoctor
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
machine_id=$(cat /etc/machine-id 2>/dev/null || echo 00000000000000000000000000000000)
mkdir -p "$work/journal/$machine_id" "$work/empty"
python3 scripts/ci/journal/kernel-export.py --denials >"$work/kernel.export"
"$remote" -o "$work/journal/$machine_id/system.journal" "$work/kernel.export" 2>"$work/remote.log" ||
  { cat "$work/remote.log" >&2; fail "systemd-journal-remote could not write the journal"; }

# check in a mount namespace: /dev without kmsg (the nodes a program needs, made again), the
# journal directory given, /run/log/journal hidden (a running journald's), the rest the machine's.
in_namespace() { # JOURNAL_DIR OUT
  unshare -m --propagation private sh -c '
    set -e
    mount -t tmpfs -o mode=755 cudoctor-dev /dev
    mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5
    mknod -m 666 /dev/random c 1 8; mknod -m 666 /dev/urandom c 1 9
    mkdir -p /var/log/journal
    mount --bind "$1" /var/log/journal
    if [ -d /run/log ]; then mount -t tmpfs cudoctor-run-log /run/log; fi
    exec "$2" check --format json' sh "$1" "$bin" >"$2" 2>"$2.err" || true
}

in_namespace "$work/journal" "$work/journal.json"
python3 - "$work/journal.json" <<'PY' || fail "the journal's Xid events were not read or judged"
import json, sys
report = json.load(open(sys.argv[1]))
log = report["snapshot"]["health"]["kernel_log"]
read = log["read"]
assert read["kind"] == "read" and read["source"] == "journalctl -k (the systemd journal)", read
assert read["records"] > 60, read
xids = {(x["pci"], x["xid"]) for x in log["xids"]}
assert ("0000:a1:00", 79) in xids and ("0000:07:00", 64) in xids, sorted(xids)
gpu004 = [f for f in report["findings"] if f["code"] == "GPU004"]
assert any("Xid 79" in f["title"] and "0000:a1:00" in f["title"] for f in gpu004), [f["title"] for f in gpu004]
print(f"journal-test: read from the journal: {read['records']} kernel records, {len(log['xids'])} Xid events, {len(gpu004)} GPU004 findings", file=sys.stderr)
security = report["snapshot"]["platform"]["security"]
attempt = security["kernel_log"]
assert attempt["source"] == "journalctl -k (the systemd journal)" and attempt["outcome"] == "ok", attempt
assert attempt["detail"].startswith("/dev/kmsg: "), attempt
denied = sorted({(d["module"], d["object"]) for d in security["denials"]})
assert ("apparmor", "/dev/char/195:0") in denied and ("selinux", "/dev/nvidia-modeset") in denied, denied
assert not any("renderD128" in o or "operstate" in o for _, o in denied), denied
print(f"journal-test: denials read from the journal: {denied}", file=sys.stderr)
PY

in_namespace "$work/empty" "$work/empty.json"
python3 - "$work/empty.json" <<'PY' || fail "with no journal, the kernel log was not said to be unread"
import json, sys
report = json.load(open(sys.argv[1]))
read = report["snapshot"]["health"]["kernel_log"]["read"]
assert read["kind"] == "not_read", read
assert read["why"].startswith("/dev/kmsg: ") and "journalctl -k" in read["why"], read
assert not [f for f in report["findings"] if f["code"] == "GPU004"]
print(f"journal-test: no journal: {read['why']}", file=sys.stderr)
PY
echo "journal-test: passed" >&2
