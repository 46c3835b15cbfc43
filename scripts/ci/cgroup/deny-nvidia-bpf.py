#!/usr/bin/env python3
"""Attaches to a cgroup v2 directory a device program (BPF_PROG_TYPE_CGROUP_DEVICE) that denies
every access to character major 195 (/dev/nvidia0..N, /dev/nvidiactl) and allows the rest, as a
container runtime's device rules do for a container given no GPU, or as they are left after the
host's systemd rewrote them. The program stays attached after this exits; it goes with the
cgroup (rmdir). No bpftool needed: the six instructions are written here and loaded with the
bpf(2) system call.

Usage (root): deny-nvidia-bpf.py /sys/fs/cgroup/unified/some-cgroup
"""
import ctypes
import os
import struct
import sys

NR_BPF = {"x86_64": 321, "aarch64": 280}[os.uname().machine]
BPF_PROG_LOAD, BPF_PROG_ATTACH = 5, 8
BPF_PROG_TYPE_CGROUP_DEVICE, BPF_CGROUP_DEVICE = 15, 6
NVIDIA_MAJOR = 195

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def insn(code, dst, src, off, imm):
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


# struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32 minor; } in r1.
program = b"".join([
    insn(0x61, 2, 1, 4, 0),             # r2 = ctx->major
    insn(0x15, 2, 0, 2, NVIDIA_MAJOR),  # if r2 == 195 goto deny
    insn(0xB7, 0, 0, 0, 1),             # r0 = 1 (allow)
    insn(0x95, 0, 0, 0, 0),             # exit
    insn(0xB7, 0, 0, 0, 0),             # deny: r0 = 0
    insn(0x95, 0, 0, 0, 0),             # exit
])


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    ret = libc.syscall(NR_BPF, cmd, buf, 128)
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


insns = ctypes.create_string_buffer(program, len(program))
license = ctypes.create_string_buffer(b"GPL")
log = ctypes.create_string_buffer(4096)
attr = struct.pack(
    "<IIQQIIQII16s",
    BPF_PROG_TYPE_CGROUP_DEVICE, len(program) // 8,
    ctypes.addressof(insns), ctypes.addressof(license),
    1, len(log), ctypes.addressof(log), 0, 0, b"cudoctor_test",
)
try:
    prog_fd = bpf(BPF_PROG_LOAD, attr)
except OSError as e:
    sys.exit(f"deny-nvidia-bpf: BPF_PROG_LOAD: {e}: {log.value.decode(errors='replace')}")
cgroup_fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
try:
    bpf(BPF_PROG_ATTACH, struct.pack("<IIII", cgroup_fd, prog_fd, BPF_CGROUP_DEVICE, 0))
except OSError as e:
    sys.exit(f"deny-nvidia-bpf: BPF_PROG_ATTACH to {sys.argv[1]}: {e}")
print(f"deny-nvidia-bpf: major {NVIDIA_MAJOR} denied in {sys.argv[1]}", file=sys.stderr)
