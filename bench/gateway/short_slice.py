#!/usr/bin/env python3
"""Runs a command with a short scheduler slice (Linux 6.12+ EEVDF custom
slice, inherited by its threads and children), as kvgate serve's loop
threads ask for one (--loop-slice-us): the head-of-line probe's client and
engine, so that what the probe measures is the gateway, not its own client
waiting for a CPU behind the long traffic. Older kernels keep their own
slices; the command runs either way.
    short_slice.py MICROSECONDS COMMAND [ARGS...]"""
import ctypes
import os
import platform
import struct
import sys

NR = {"x86_64": (314, 315), "aarch64": (274, 275)}  # sched_setattr, sched_getattr


def set_slice(us):
    nrs = NR.get(platform.machine())
    if not nrs:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(56)  # struct sched_attr, version 1 (56 bytes)
    if libc.syscall(nrs[1], 0, buf, 56, 0):
        return
    # size, policy, flags, nice, priority, runtime, deadline, period, util min/max
    f = list(struct.unpack("IIQiIQQQII", buf.raw))
    if f[1] not in (0, 3):  # SCHED_OTHER, SCHED_BATCH only
        return
    f[0], f[5] = 56, us * 1000
    libc.syscall(nrs[0], 0, ctypes.create_string_buffer(struct.pack("IIQiIQQQII", *f), 56), 0)


if len(sys.argv) < 3:
    sys.exit(__doc__)
set_slice(int(sys.argv[1]))
os.execvp(sys.argv[2], sys.argv[2:])
