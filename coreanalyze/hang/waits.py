"""Where each thread of a snapshot is: running on a CPU, or waiting - on what, held by whom.

Two sources agree on a waiting thread: the system call it sleeps in (the syscall-number
register of its saved user registers; -1 when it was running user code) and its innermost
frames (pthread_mutex_lock, pthread_cond_wait, take_gil, ...). The frames name the kind of
wait; the system call's first argument is the futex word's address, and for a glibc mutex
that word is the mutex itself, whose `__owner` field holds the tid of the thread that holds it.

A thread inside a GPU synchronize, stream or event wait, synchronous copy or collective call
waits for the GPU (state "gpu"), whether its CPU spins, yields or polls meanwhile.
"""

from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING

from coreanalyze.base.model import Frame, Thread, ThreadWait
from coreanalyze.classify.gpuhost import HostCall, thread_call
from coreanalyze.classify.names import normalize_function
from coreanalyze.hang.rules import HangRules, SyscallTable

if TYPE_CHECKING:
    from coreanalyze.process.process import Process

RUNNING = -1
# glibc's pthread_mutex_t (struct __pthread_mutex_s), the same on x86_64 and aarch64:
# int __lock; unsigned __count; int __owner; ...
MUTEX_LOCK_OFFSET = 0
MUTEX_OWNER_OFFSET = 8


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def mutex_owner(memory, address: int | None) -> int | None:
    """The tid in a locked glibc mutex's owner field, or None (unlocked, unreadable, not a mutex)."""
    if address is None or memory is None:
        return None
    raw = memory.read(address + MUTEX_LOCK_OFFSET, MUTEX_OWNER_OFFSET + 4)
    if raw is None or len(raw) < MUTEX_OWNER_OFFSET + 4:
        return None
    lock, _count, owner = struct.unpack_from("<iIi", raw)
    # A locked mutex's word is 1 (locked) or 2 (locked, with waiters); robust and PI mutexes
    # keep the owner's tid (plus flag bits) in the word itself.
    if lock == 0:
        return None
    if owner > 0:
        return owner
    tid_in_word = lock & 0x3FFFFFFF
    return tid_in_word if lock not in (1, 2) and tid_in_word > 0 else None


def frame_name(frame: Frame) -> str:
    """The normalized name hang rules match, without glibc's internal alias prefix (__GI_)."""
    name = normalize_function(frame.function or frame.raw_function or "")
    return name[len("__GI_"):] if name.startswith("__GI_") else name


def _is_interpreter(frame: Frame) -> bool:
    name = os.path.basename(frame.module or "")
    return name.startswith(("python", "libpython", "libffi", "_ctypes"))


def waiting_frame(thread: Thread, rules: HangRules) -> int | None:
    """Position (in thread.frames) of the first frame below the waiting primitives: the code that
    waits. When that is CPython's own machinery, the first Python frame below it."""
    frames = thread.frames
    for position, frame in enumerate(frames):
        if frame.kind == "python":
            return position
        name = frame_name(frame)
        if name and not rules.is_primitive(name):
            if _is_interpreter(frame):
                python = next((i for i in range(position, len(frames)) if frames[i].kind == "python"), None)
                if python is not None:
                    return python
            return position
    return None


def _primitive_run(thread: Thread, rules: HangRules) -> list[str]:
    """Normalized names of the innermost native frames, down to the first non-primitive one."""
    names = []
    for frame in thread.frames[: rules.window]:
        if frame.kind == "python":
            break
        name = frame_name(frame)
        names.append(name)
        if name and not rules.is_primitive(name):
            break
    return names


def gpu_wait(thread: Thread) -> HostCall | None:
    """The GPU call the thread waits in (a synchronize, a stream or event wait, a synchronous
    copy, a collective; coreanalyze/gpu/host_calls.toml), or None."""
    call = thread_call(thread)
    return call if call is not None and call.waits else None


def _syscall(registers: dict[str, int], table: SyscallTable | None) -> int | None:
    if table is None or table.register not in registers:
        return None
    return _signed64(registers[table.register])


def thread_wait(
    thread: Thread,
    registers: dict[str, int],
    rules: HangRules,
    arch: str | None,
    process,  # the Process whose memory holds the mutexes (None for a pasted text)
    gil_holder: int | None,
    gil_range: tuple[int, int] | None = None,
) -> ThreadWait:
    table = rules.syscalls.get(arch or "")
    wait = ThreadWait(tid=thread.tid, state="unknown", holds_gil=thread.holds_gil)
    position = waiting_frame(thread, rules)
    if position is not None:
        frame = thread.frames[position]
        wait.frame_index, wait.file, wait.line = frame.index, frame.file, frame.line
        wait.function = frame.function if frame.kind == "python" else (normalize_function(frame.function or frame.raw_function or "") or None)

    number = _syscall(registers, table)
    in_kernel = number is not None and number != RUNNING
    gpu = gpu_wait(thread)
    if gpu is not None:
        # Drivers spin, yield or poll while they wait for the GPU: the call says what the
        # thread waits for, whatever the CPU was doing at that instant.
        wait.state, wait.object_kind = "gpu", gpu.short_api
        if in_kernel:
            wait.syscall = table.names.get(number, f"syscall {number}")
        if gpu.python is not None:
            wait.frame_index, wait.file, wait.line = gpu.python.index, gpu.python.file, gpu.python.line
            wait.function = gpu.python.function
        return wait
    if arch == "aarch64" and number is not None:
        # x8 keeps the last system call's number after it returns: only a thread whose innermost
        # frame is a primitive (a system call wrapper) is taken to be in the kernel.
        top = frame_name(thread.frames[0]) if thread.frames else ""
        in_kernel = bool(top) and rules.is_primitive(top)
    if number is not None and not in_kernel:
        wait.state = "running"
        return wait
    if in_kernel:
        wait.syscall = table.names.get(number, f"syscall {number}")

    run = _primitive_run(thread, rules)
    rule = next((r for r in rules.waits if any(r.function.search(name) for name in run if name)), None)
    by_syscall = table.states.get(number, "other-syscall") if in_kernel else None
    if rule is not None and by_syscall in (None, "futex", "join", "signal"):
        wait.state, wait.object_kind = rule.state, rule.object_kind
        if rule.object == "futex-word" and by_syscall == "futex":
            wait.object = registers.get(table.argument)
    elif by_syscall is not None:
        wait.state = by_syscall
        if by_syscall == "futex":
            wait.object, wait.object_kind = registers.get(table.argument), "futex"
            if gil_range is not None and wait.object is not None and gil_range[0] <= wait.object < gil_range[1]:
                # Blocked on the GIL's own mutex or condition: a wait for the GIL even where the
                # frames that would say so could not be unwound (glibc 2.41+'s cancellable
                # system calls stop older debuggers' unwinding there).
                wait.state, wait.object_kind = "gil", "GIL"
    if wait.state == "mutex" and wait.object_kind == "mutex":
        wait.owner = mutex_owner(process, wait.object)
    elif wait.state == "gil" and not thread.holds_gil:
        wait.owner = gil_holder
    return wait


def thread_waits(threads: list[Thread], process: Process | None, rules: HangRules) -> list[ThreadWait]:
    """Every thread's wait state; the process (None for a pasted text) gives registers and memory."""
    arch = process.arch if process is not None else None
    gil_holder = next((t.tid for t in threads if t.holds_gil), None)
    gil_range = process.gil_range if process is not None else None
    out = []
    for thread in threads:
        noted = process.thread(thread.tid) if process is not None else None
        registers = dict(noted.registers) if noted is not None else dict(thread.registers)
        out.append(thread_wait(thread, registers, rules, arch, process, gil_holder, gil_range))
    return out
