"""gdb's part of the unwinding stage: the threads and frames of a core gdb has loaded
(coreanalyze.unwind.threads, over GdbDebugger), and what gdb is asked for beyond them where the core's
notes do not tell: the module map of a core without a file list (gdb's `info proc mappings`,
else its libraries), `$_siginfo`, and glibc's abort message through gdb's symbols.

Everything here comes from an untrusted core: every read has a size limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from coreanalyze.base.demangle import demangle
from coreanalyze.base.errors import DebuggerError, DebuggerTimeout
from coreanalyze.gdb.debugger import GdbDebugger, as_gdb
from coreanalyze.gdb.session import GdbSession
from coreanalyze.unwind.threads import DISASSEMBLY_BYTES, FileRanges, Unwound, file_ranges, unwind

# What gdb's part of the unwinding stage leaves (coreanalyze.unwind.threads.Unwound).
GdbAnalysis = Unwound

__all__ = ["DISASSEMBLY_BYTES", "FromNotes", "GdbAnalysis", "abort_message", "collect", "demangle", "file_ranges", "read_memory"]

MAX_ABORT_MESSAGE = 4096
# The targets read (x86_64, aarch64) are 64-bit.
POINTER_SIZE = 8


def read_memory(session: GdbSession | GdbDebugger, address: int, size: int) -> bytes | None:
    """Bytes at address in the core, as gdb reads them; a short read returns the readable
    prefix, none -> None."""
    return as_gdb(session).read_memory(address, size)


@dataclass(frozen=True)
class FromNotes:
    """What the core's own notes already tell, which the debugger is then not asked for."""

    # NT_FILE's ranges (file_ranges): the frames' module map, as gdb's `info proc mappings`
    # prints it for a core; None or empty: the debugger lists them.
    file_mappings: FileRanges | None = None
    # NT_SIGINFO was read: the signal's details, which outrank the debugger's (its $_siginfo
    # is that same note; the first evaluation costs a fresh gdb ~15 ms).
    siginfo: bool = False


def module_ranges(debugger: GdbDebugger, known: FileRanges | None, warnings: list[str]) -> FileRanges:
    """known: the core's file mappings as its notes list them (file_ranges), which is what
    gdb's `info proc mappings` prints for a core; asked of gdb when None or empty."""
    if known:
        return list(known)
    ranges: FileRanges = []
    try:
        ranges = debugger.file_mappings()
    except DebuggerTimeout:
        raise
    except DebuggerError as e:
        warnings.append(f"gdb could not list the core's file mappings: {e}")
    if not ranges:
        # Fall back to the text ranges of the libraries the debugger loaded.
        ranges = debugger.library_ranges()
    return ranges


def abort_message(session: GdbSession | GdbDebugger) -> str | None:
    """The message glibc stored before abort() (assert, malloc_printerr, __libc_fatal).

    `__abort_msg` is a `struct abort_msg_s *` whose struct is `{unsigned int size; char
    msg[];}`; it is read as raw memory so that no libc debug info is needed.
    """
    debugger = as_gdb(session)
    address = debugger.symbol_address("__abort_msg")
    if not address:
        return None
    raw_pointer = debugger.read_memory(address, POINTER_SIZE)
    if raw_pointer is None or len(raw_pointer) != POINTER_SIZE:
        return None
    struct_address = int.from_bytes(raw_pointer, "little")
    if struct_address == 0:
        return None
    header = debugger.read_memory(struct_address, 4)
    if header is None or len(header) != 4:
        return None
    # size is the whole mapping (header included); from a core it may be anything.
    size = int.from_bytes(header, "little")
    length = max(0, min(size - 4, MAX_ABORT_MESSAGE)) if size > 4 else MAX_ABORT_MESSAGE
    text = debugger.read_memory(struct_address + 4, length)
    if not text:
        return None
    text = text.split(b"\0", 1)[0]
    message = text.decode("utf-8", errors="replace").strip()
    return message or None


def collect(
    session: GdbSession | GdbDebugger, *, max_frames: int = 256, max_threads: int = 512, from_notes: FromNotes = FromNotes()
) -> GdbAnalysis:
    """Everything gdb can tell about the loaded core's threads and the crash, but for what the
    core's notes already tell (from_notes)."""
    debugger = as_gdb(session)
    result = unwind(
        debugger, lambda warnings: module_ranges(debugger, from_notes.file_mappings, warnings),
        max_frames=max_frames, max_threads=max_threads,
    )  # fmt: skip
    if result.crashing_thread is None:
        return result  # no threads
    result.siginfo = None if from_notes.siginfo else debugger.siginfo(result.crashing_thread)
    result.abort_message = abort_message(debugger)
    return result
