#!/usr/bin/env python3
"""Writes, in the systemd journal's export format (systemd.io/JOURNAL_EXPORT_FORMATS), kernel
records of this boot as systemd-journald stores what it reads from /dev/kmsg (_TRANSPORT=kernel,
SYSLOG_IDENTIFIER=kernel, the kernel's own timestamp in _SOURCE_MONOTONIC_TIMESTAMP): the real
NVRM lines of tests/fixtures/kernel-log/xid-lines.txt (their message part: the text from
"NVRM:" on, or from "Xid (" where a thread pasted it without its prefix), after the first --kmsg N records of this machine's own /dev/kmsg where readable, and
one message that is not UTF-8 (the journal stores it as bytes; journalctl -o json prints it as an
array of numbers). systemd-journal-remote turns this stream into a real journal file that
journalctl reads (scripts/ci/journal-test.sh; the capture in tests/fixtures/kernel-log/).

With --denials, the real SELinux and AppArmor denial lines of
crates/cudoctor/tests/fixtures/security/ follow, as the kernel prints an audit record where no
auditd takes it (`audit: type=1400 audit(...): ...`: a dmesg or syslog line's text from
"audit:" on, an audit.log `type=AVC msg=audit(...): ...` line as the kernel's own form of it).

Usage: kernel-export.py [--kmsg N] [--denials] > stream.export
"""
import os
import struct
import sys
import time

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
kmsg_records = 0
args = sys.argv[1:]
denials = "--denials" in args
if denials:
    args.remove("--denials")
if len(args) == 2 and args[0] == "--kmsg":
    kmsg_records = int(args[1])

boot_id = open("/proc/sys/kernel/random/boot_id").read().strip().replace("-", "")
try:
    machine_id = open("/etc/machine-id").read().strip()
except OSError:
    machine_id = "0" * 32
host = os.uname().nodename
out = sys.stdout.buffer


def entry(mono_us, message, priority=6, device=None):
    realtime_us = int(time.time() * 1e6) - int(time.monotonic() * 1e6) + mono_us
    fields = [
        ("__REALTIME_TIMESTAMP", str(realtime_us).encode()),
        ("__MONOTONIC_TIMESTAMP", str(mono_us).encode()),
        ("_BOOT_ID", boot_id.encode()),
        ("_SOURCE_MONOTONIC_TIMESTAMP", str(mono_us).encode()),
        ("_TRANSPORT", b"kernel"),
        ("PRIORITY", str(priority).encode()),
        ("SYSLOG_FACILITY", b"0"),
        ("SYSLOG_IDENTIFIER", b"kernel"),
        ("MESSAGE", message),
        ("_MACHINE_ID", machine_id.encode()),
        ("_HOSTNAME", host.encode()),
    ]
    if device:
        fields += [("_KERNEL_DEVICE", b"+pci:" + device), ("_KERNEL_SUBSYSTEM", b"pci")]
    for key, value in fields:
        if b"\n" in value or any(b < 0x20 and b != 9 for b in value) or not is_utf8(value):
            out.write(key.encode() + b"\n" + struct.pack("<Q", len(value)) + value + b"\n")
        else:
            out.write(key.encode() + b"=" + value + b"\n")
    out.write(b"\n")


def is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


mono = 1_000_000
if kmsg_records:
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        for _ in range(kmsg_records):
            try:
                rec = os.read(fd, 8192)
            except BlockingIOError:
                break
            header, _, rest = rec.partition(b";")
            parts = header.split(b",")
            message = rest.split(b"\n", 1)[0]
            mono = int(parts[2])
            entry(mono, message, priority=int(parts[0]) & 7)
        os.close(fd)
    except OSError as e:
        print(f"kernel-export: /dev/kmsg: {e}", file=sys.stderr)

seen = set()
for line in open(os.path.join(root, "tests/fixtures/kernel-log/xid-lines.txt"), encoding="utf-8"):
    if line.startswith("#") or line[:1].isspace():
        continue
    start = line.find("NVRM:") if "NVRM:" in line else line.find("Xid (")
    if start < 0:
        continue
    message = line[start:].rstrip("\n")
    if message in seen:
        continue
    seen.add(message)
    mono += 1_234_567
    device = None
    if "(PCI:" in message:
        device = message.split("(PCI:", 1)[1].split(")", 1)[0].encode() + b".0"
    entry(mono, message.encode(), priority=4 if "Xid" in message else 6, device=device)
mono += 1_000
# A message the journal keeps as bytes (Latin-1, not UTF-8), as a module's banner can be.
entry(mono, b"NVRM: loading module from /lib/modules/extra/nvidia-\xe9t\xe9.ko")

if denials:
    for name in ("kmsg-apparmor-denials.txt", "kmsg-selinux-denials.txt"):
        path = os.path.join(root, "crates/cudoctor/tests/fixtures/security", name)
        for line in open(path, encoding="utf-8"):
            line = line.rstrip("\n")
            if "audit:" in line:
                message = line[line.find("audit:"):]
            elif line.startswith("type=AVC msg=audit("):
                stamp, _, rest = line[len("type=AVC msg="):].partition(": ")
                message = f"audit: type=1400 {stamp}: {rest}"
            else:
                continue
            mono += 1_000
            entry(mono, message.encode(), priority=5)
