#!/usr/bin/env python3
"""Runs a command with io_uring blocked by a real seccomp filter, as Docker's default profile
and hardened kernels do: io_uring_setup (425 on every architecture) fails with EPERM.
    no_io_uring.py CMD [ARGS...]"""
import ctypes
import os
import struct
import sys

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, EPERM = 0x7FFF0000, 0x00050000, 1
NR_IO_URING_SETUP = 425
BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06


def insn(code, jt, jf, k):
    return struct.pack("=HBBI", code, jt, jf, k)


prog = b"".join([
    insn(BPF_LD_W_ABS, 0, 0, 0),                       # A = seccomp_data.nr
    insn(BPF_JEQ_K, 0, 1, NR_IO_URING_SETUP),          # io_uring_setup?
    insn(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM),  #   yes: fail with EPERM
    insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),          #   no: allow
])
buf = ctypes.create_string_buffer(prog)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


fprog = SockFprog(len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
        libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit("no_io_uring.py: seccomp refused: " + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[1], sys.argv[1:])
