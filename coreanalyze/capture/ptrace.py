"""ptrace(2) for the watcher: seize, continue, interrupt, read registers and siginfo.

Linux only, through libc with ctypes (no compiler, no extra package). Every call that the kernel
refuses raises PtraceError with the errno, which the watcher turns into one line or a quiet
"that thread is gone" (ESRCH: a thread may exit between its stop and our next request).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import signal
import struct
from dataclasses import dataclass

PTRACE_CONT = 7
PTRACE_DETACH = 17
PTRACE_SETOPTIONS = 0x4200
PTRACE_GETEVENTMSG = 0x4201
PTRACE_GETSIGINFO = 0x4202
PTRACE_GETREGSET = 0x4204
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
PTRACE_LISTEN = 0x4208

O_TRACEFORK = 0x02
O_TRACEVFORK = 0x04
O_TRACECLONE = 0x08
O_TRACEEXEC = 0x10
# Threads, forks (multiprocessing, tf.data workers, a launcher's ranks), vfork+exec (subprocess)
# and exec: every process CMD starts is watched as CMD is. Not PTRACE_O_EXITKILL: when the
# watcher dies, the processes it watched run on.
WATCH_OPTIONS = O_TRACEFORK | O_TRACEVFORK | O_TRACECLONE | O_TRACEEXEC

EVENT_FORK = 1
EVENT_VFORK = 2
EVENT_CLONE = 3
EVENT_EXEC = 4
EVENT_STOP = 128
NEW_TRACEE_EVENTS = (EVENT_FORK, EVENT_VFORK, EVENT_CLONE)

WALL = 0x40000000  # __WALL: threads and children alike

NT_PRSTATUS = 1
NT_PRFPREG = 2
NT_X86_XSTATE = 0x202
NT_ARM_TLS = 0x401

SIGINFO_SIZE = 128

# The signals whose default action writes a core, and that `run` holds (issue: SIGSEGV, SIGBUS,
# SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS).
FATAL_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT, signal.SIGTRAP, signal.SIGSYS})
# Group-stop signals: a seized tracee in group-stop is kept stopped with PTRACE_LISTEN, so that
# job control (Ctrl-Z, kill -STOP) still works on a watched process.
STOP_SIGNALS = frozenset({signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU})


class PtraceError(OSError):
    pass


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


_libc = ctypes.CDLL(None, use_errno=True)
_ptrace = _libc.ptrace
_ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
_ptrace.restype = ctypes.c_long


def _call(request: int, tid: int, addr: int | None = 0, data: int | ctypes.c_void_p | None = 0) -> int:
    ctypes.set_errno(0)
    result = _ptrace(request, tid, addr, data)
    if result == -1:
        err = ctypes.get_errno()
        if err:
            raise PtraceError(err, f"ptrace({request:#x}, {tid}): {os.strerror(err)}")
    return result


def seize(tid: int, options: int = WATCH_OPTIONS) -> None:
    _call(PTRACE_SEIZE, tid, 0, options)


def interrupt(tid: int) -> None:
    _call(PTRACE_INTERRUPT, tid)


def cont(tid: int, sig: int = 0) -> None:
    _call(PTRACE_CONT, tid, 0, sig)


def listen(tid: int) -> None:
    _call(PTRACE_LISTEN, tid)


def detach(tid: int, sig: int = 0) -> None:
    _call(PTRACE_DETACH, tid, 0, sig)


def event_message(tid: int) -> int:
    value = ctypes.c_ulong(0)
    _call(PTRACE_GETEVENTMSG, tid, 0, ctypes.addressof(value))
    return value.value


def siginfo(tid: int) -> bytes:
    buf = ctypes.create_string_buffer(SIGINFO_SIZE)
    _call(PTRACE_GETSIGINFO, tid, 0, ctypes.addressof(buf))
    return buf.raw


def regset(tid: int, note_type: int, size: int) -> bytes | None:
    """The register set `note_type` of a stopped thread as the kernel writes it into a core
    (None where this kernel or CPU has no such set)."""
    buf = ctypes.create_string_buffer(size)
    iov = _Iovec(ctypes.cast(buf, ctypes.c_void_p), size)
    try:
        _call(PTRACE_GETREGSET, tid, note_type, ctypes.addressof(iov))
    except PtraceError as e:
        if e.errno in (errno.EINVAL, errno.ENODEV, errno.EIO):
            return None
        raise
    return buf.raw[: iov.length]


def gone(error: OSError) -> bool:
    """The thread exited (or was killed) between its stop and this request."""
    return error.errno == errno.ESRCH


@dataclass(frozen=True)
class Stop:
    """What waitpid said of one tracee."""

    tid: int
    status: int

    @property
    def exited(self) -> bool:
        return os.WIFEXITED(self.status) or os.WIFSIGNALED(self.status)

    @property
    def killed_by(self) -> int | None:
        return os.WTERMSIG(self.status) if os.WIFSIGNALED(self.status) else None

    @property
    def exit_code(self) -> int | None:
        return os.WEXITSTATUS(self.status) if os.WIFEXITED(self.status) else None

    @property
    def stopped(self) -> bool:
        return os.WIFSTOPPED(self.status)

    @property
    def signal(self) -> int:
        return os.WSTOPSIG(self.status) if self.stopped else 0

    @property
    def event(self) -> int:
        return (self.status >> 16) & 0xFF if self.stopped else 0

    @property
    def group_stop(self) -> bool:
        return self.event == EVENT_STOP and self.signal in STOP_SIGNALS

    @property
    def signal_delivery(self) -> bool:
        """A signal is about to be delivered: the tracer decides whether it is."""
        return self.stopped and self.event == 0


def wait(tid: int = -1, *, block: bool = True) -> Stop | None:
    """The next stop or death of a tracee (None: none yet, without blocking; or no tracee left)."""
    try:
        pid, status = os.waitpid(tid, WALL | (0 if block else os.WNOHANG))
    except ChildProcessError:
        return None
    if pid == 0:
        return None
    return Stop(pid, status)


def prstatus_size() -> int:
    """Bytes of the general registers in NT_PRSTATUS for this machine."""
    return {"x86_64": 27 * 8, "aarch64": 34 * 8}.get(platform.machine(), 0)


def unpack_siginfo(raw: bytes) -> tuple[int, int, int]:
    """(signo, errno, code) at the head of a siginfo_t."""
    return struct.unpack_from("<iii", raw)
