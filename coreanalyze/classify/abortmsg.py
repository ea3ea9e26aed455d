"""Recover the text a dying process wrote about itself from its memory.

TensorFlow's CHECK / LOG(FATAL) (absl logging: `F0000 00:00:1712345678.123456  4242
tensor_shape.cc:356] Check failed: d < dims() (1 vs. 1)`), protobuf's `[libprotobuf FATAL ...]`,
libstdc++'s `terminate called after throwing an instance of 'X'`, glibc's assert and malloc
messages: all of them are formatted into memory before the process aborts, on the stack of
the crashing thread, in a heap buffer that a stack frame still points to, or (glibc's
`__abort_msg`) in a small anonymous mapping of their own.

The scan reads, in this order and within a fixed total budget: the crashing thread's stack
from a little below its stack pointer upward; memory that words on that stack point to; small
writable mappings; then other writable memory nearest the stack. Only writable memory the core
holds is read, so string literals in a library's read-only data never pass for a message.

Far memory (the last step: tens of MiB of heap, most of the scan's time) is left out when it
cannot matter: when a message was found nearer (any nearer one outranks it), and when the
kernel raised the signal at a faulting instruction (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP
with si_code > 0). Such a process did not abort; a message of its own last moments (a fault
inside an abort's signal handler) lies near the crash, and text far off in the heap is older.

The memory object needs `read(address, size) -> bytes | None` and `segments` (objects with
start, end, file_offset, filesz, flags), as the Process (coreanalyze.process.process: the
analysis passes it) and coreanalyze.corefile.memory.CoreMemory provide.
"""

from __future__ import annotations

import bisect
import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator, Protocol, Sequence

from coreanalyze.base.signals import FAULT_ADDRESS_SIGNALS, SIGNAL_NUMBERS
from coreanalyze.classify.rules import builtin_heap_messages, required_literal
from coreanalyze.corefile.memory import searching

PF_W = 2

STACK_ABOVE_SP = 2 * 1024 * 1024  # the live frames of the crashing thread
STACK_BELOW_SP = 64 * 1024  # dead frames just popped (formatting buffers of the logger)
POINTER_WINDOW = 256 * 1024  # stack words looked at for pointers into the heap
POINTER_TARGETS = 512  # distinct heap pages those pointers lead to, at most
POINTER_READ_BEFORE = 256
POINTER_READ_AFTER = 20 * 1024  # absl's LogMessageData holds a ~15 KB text buffer
SMALL_SEGMENT = 256 * 1024
TOTAL_BUDGET = 64 * 1024 * 1024
CHUNK = 1024 * 1024
OVERLAP = 4096
MAX_LINE = 2048
MAX_BACKTRACK = 512
MAX_MESSAGES = 32
# Signals the kernel sends for a fault of the instruction itself (si_code > 0), by number:
# SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV.
KERNEL_FAULT_SIGNALS = frozenset(SIGNAL_NUMBERS[name] for name in FAULT_ADDRESS_SIGNALS)

# (kind, pattern); a kind's place in this list is its rank (most telling first).
_FIXED_PATTERNS: list[tuple[str, bytes]] = [
    # absl: "F0820 12:34:56.789012  4242 file.cc:42] "; before absl::InitializeLog() the
    # time reads "F0000 00:00:1712345678.123456".
    ("fatal-log", rb"F\d{4} \d\d:\d\d:\d+(?:\.\d+)?\s+\d+ [\w./+-]{1,200}:\d{1,7}\] "),
    ("fatal-log", rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: F [\w./+-]{1,200}:\d{1,7}\] "),
    ("check-failure", rb"Check failed: "),
    ("protobuf-fatal", rb"\[libprotobuf FATAL [\w./+-]{1,200}:\d{1,7}\] "),
    ("check-failure", rb"CHECK failed: "),
    ("terminate", rb"terminate called (?:after throwing an instance of '|recursively|without an active exception)"),
    ("python-fatal", rb"Fatal Python error: "),
    ("glibc-assert", rb": Assertion `"),
    # ducc0's MR_assert (TensorFlow's FFT kernels): "<file>: <line> (<function>):\n\nAssertion
    # failure\n<reason>\n", the text of the exception TensorFlow catches before it aborts.
    ("assertion-failure", rb"^Assertion failure$"),
    ("glibc-fortify", rb"\*\*\* (?:stack smashing|buffer overflow) detected \*\*\*"),
    # TensorFlow's and XLA's BFC allocator giving up (not its "The caller indicates that this is
    # not a failure" warning, which the caller survives).
    ("allocator-oom", rb"Allocator \([\w.:-]{1,80}\) ran out of memory trying to allocate [\d.]{1,20} ?[KMGTP]?i?B(?!(?: with freed_by_count=\d+)?\.? ?The caller)"),
]
# Kinds that describe the same event share a tier; within a tier the most complete line wins.
_KIND_TIER = {
    "fatal-log": 0,
    "protobuf-fatal": 0,
    "check-failure": 0,
    "terminate": 1,
    "python-fatal": 1,
    "glibc-assert": 2,
    "assertion-failure": 2,
    "glibc-fortify": 2,
    "glibc-malloc": 2,
    "allocator-oom": 2,
}
_FULL_PREFIX = re.compile(rb"^(?:" + _FIXED_PATTERNS[0][1] + rb"|" + _FIXED_PATTERNS[1][1] + rb"|" + _FIXED_PATTERNS[3][1] + rb")")
# printf directives: a format string (a compiler-built copy of a literal), not a message.
_FORMAT_DIRECTIVE = re.compile(rb"%[-+ #0-9.*]*(?:hh|h|ll|l|z|j|t)?[sdiuxXfFgGpc]")
# Memory tied to the crash (the stack, what it points to, glibc's own abort-message mapping)
# outranks the rest of the heap, where old text (even a script's source) may linger.
_WHERE_RANK = {"stack": 0, "stack-pointer": 0, "small-mapping": 0, "writable-memory": 1}
_PRINTABLE = frozenset(range(0x20, 0x7F)) | {0x09}
_WHAT_LINE = re.compile(rb"\n\s*what\(\):\s+([ -~\t]{1,1000})")


class _Memory(Protocol):
    segments: Sequence[Any]

    def read(self, address: int, size: int) -> bytes | None: ...


@dataclass(frozen=True)
class AbortMessage:
    text: str
    kind: str  # fatal-log | check-failure | protobuf-fatal | terminate | python-fatal | glibc-*
    address: int  # where the line starts in the process
    where: str  # stack | stack-pointer | small-mapping | writable-memory

    @property
    def rank(self) -> tuple[int, int, int, int, int]:
        # Among copies of one message the longest is the whole one: a freed copy loses its
        # first bytes to the allocator's free-list pointers, a stack copy its tail.
        raw = self.text.encode("ascii", "replace")
        whole = 0 if _FULL_PREFIX.match(raw) else 1
        if _has_repeated_run(raw):
            whole = 2  # pieces of string literals the compiler assembled on the stack, not a message
        return (_WHERE_RANK[self.where], _KIND_TIER.get(self.kind, 9), whole, -len(self.text), self.address)


def _has_repeated_run(text: bytes, run: int = 20) -> bool:
    seen: set[bytes] = set()
    for i in range(0, max(0, len(text) - run + 1)):
        piece = text[i: i + run]
        if piece in seen:
            return True
        seen.add(piece)
    return False


def _present_end(seg: Any) -> int:
    size = max(0, int(seg.end) - int(seg.start))
    return int(seg.start) + max(0, min(int(seg.filesz), size))


def _writable(seg: Any) -> bool:
    return bool(int(getattr(seg, "flags", 0)) & PF_W)


class _DumpedRanges:
    """The dumped part of some segments, asked by bisection whether a word points into it."""

    def __init__(self, segments: Sequence[Any]) -> None:
        self.ranges = sorted((int(s.start), _present_end(s)) for s in segments)
        self.starts = [r[0] for r in self.ranges]

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __contains__(self, value: int) -> bool:
        i = bisect.bisect_right(self.starts, value) - 1
        return i >= 0 and self.ranges[i][0] <= value < self.ranges[i][1]


def _segment_at(segments: Sequence[Any], address: int) -> Any | None:
    for seg in segments:
        if seg.start <= address < seg.end:
            return seg
    return None


class _Budget:
    def __init__(self, total: int):
        self.left = total

    def take(self, size: int) -> int:
        granted = max(0, min(size, self.left))
        self.left -= granted
        return granted


def _read_range(memory: _Memory, start: int, end: int, budget: _Budget) -> Iterator[tuple[int, bytes]]:
    """(address, bytes) chunks of [start, end), overlapping so that no line is cut in two."""
    cursor = start
    while cursor < end:
        size = budget.take(min(CHUNK, end - cursor))
        if size <= 0:
            return
        data = memory.read(cursor, size)
        if data:
            yield cursor, data
        if cursor + size >= end:
            return
        cursor = cursor + size - OVERLAP if size > OVERLAP else cursor + size


def _line_at(data: bytes, pos: int) -> tuple[int, bytes] | None:
    """The printable line around pos: (start offset, bytes)."""
    start = pos
    limit = max(0, pos - MAX_BACKTRACK)
    while start > limit and data[start - 1] in _PRINTABLE:
        start -= 1
    end = pos
    stop = min(len(data), pos + MAX_LINE)
    while end < stop and data[end] in _PRINTABLE:
        end += 1
    while start < end and data[start] in (0x20, 0x09):
        start += 1
    line = data[start:end].rstrip()
    if not line:
        return None
    return start, line


def _what_after(data: bytes, end: int) -> bytes | None:
    m = _WHAT_LINE.match(data, end)
    return m.group(1).rstrip() if m else None


_LOCATION = re.compile(rb"([\w.+-]{1,200}): (\d{1,7}) \(.{0,600}\):\s*\Z", re.DOTALL)


def _line_after(data: bytes, end: int) -> bytes | None:
    """The line right after the one ending at end (the reason of an "Assertion failure")."""
    if end >= len(data) or data[end : end + 1] != b"\n":
        return None
    stop = data.find(b"\n", end + 1, end + 1 + MAX_LINE)
    line = data[end + 1 : stop if stop >= 0 else min(len(data), end + 1 + MAX_LINE)].rstrip(b"\0").strip()
    return line if line and all(0x20 <= b < 0x7F or b == 0x09 for b in line) else None


def _location_before(data: bytes, offset: int) -> bytes:
    """ ' (fft1d_impl.h:2948)' from the "<path>: <line> (<function>):" ducc0 prints first."""
    window = data[max(0, offset - MAX_BACKTRACK - 600) : offset]
    m = _LOCATION.search(window.rsplit(b"\0", 1)[-1])
    return b" (" + m.group(1) + b":" + m.group(2) + b")" if m else b""


def _plausible(kind: str, line: bytes) -> bool:
    letters = sum(1 for b in line if 0x41 <= (b | 0x20) <= 0x7A)
    if letters < 8 or _FORMAT_DIRECTIVE.search(line):
        return False
    if kind == "check-failure":
        tail = line.split(b"ailed:", 1)[-1]
        return sum(1 for b in tail if chr(b).isalnum()) >= 3
    if kind == "glibc-assert":
        return line.endswith(b"failed.") or line.endswith(b"failed")
    if kind == "terminate":
        return b"'" in line[40:] or b"recursively" in line or b"without an active" in line
    return True


# Literal byte strings that every message contains somewhere: memchr-speed `find` locates the
# few candidate lines, and only those lines meet the regular expressions (a regex alone runs
# at a few MB/s over binary memory).
_FIXED_ANCHORS = (
    b"Check failed: ",
    b"CHECK failed: ",
    b"[libprotobuf FATAL ",
    b"terminate called ",
    b"Fatal Python error: ",
    b": Assertion `",
    b"Assertion failure",
    b" detected ***",
    b") ran out of memory trying to allocate ",
)
_LAST_ANCHORS = (
    b": F ",  # "2024-01-01 12:00:00.000000: F file.cc:12] "
    b"F0",  # absl's "F0820 12:34:56..." / "F0000 00:00:..."
    b"F1",
)


@dataclass(frozen=True)
class _MessagePatterns:
    kinds: tuple[str, ...]  # the kind of each alternative of `combined`, by its group k<i>
    combined: re.Pattern[bytes]
    anchors: tuple[bytes, ...]


@lru_cache(maxsize=1)
def message_patterns() -> _MessagePatterns:
    """The patterns with the allocator's messages, which are rules data ([fault_kind]
    heap_messages in rules.toml): read and compiled on first use, in whichever thread or child
    scans first, not when the module is imported."""
    heap = builtin_heap_messages()
    patterns = [*_FIXED_PATTERNS, ("glibc-malloc", b"(?:" + "|".join(heap).encode() + b")")]
    return _MessagePatterns(
        kinds=tuple(kind for kind, _ in patterns),
        combined=re.compile(b"|".join(b"(?P<k%d>%s)" % (i, p) for i, (_, p) in enumerate(patterns))),
        # in order: deterministic
        anchors=(*_FIXED_ANCHORS, *dict.fromkeys(required_literal(p).encode() for p in heap), *_LAST_ANCHORS),
    )


def _kind_of(text: bytes) -> str | None:
    tables = message_patterns()
    m = tables.combined.search(text)
    return tables.kinds[int(m.lastgroup[1:])] if m is not None and m.lastgroup else None


MAX_HITS_PER_CHUNK = 4096


def _scan_bytes(base: int, data: bytes, where: str, seen: set[int], out: list[AbortMessage]) -> None:
    hits = 0
    done_lines: set[int] = set()
    for anchor in message_patterns().anchors:
        pos = data.find(anchor)
        while pos >= 0:
            hits += 1
            if hits > MAX_HITS_PER_CHUNK or len(out) >= MAX_MESSAGES:
                return
            found = _line_at(data, pos)
            next_from = pos + len(anchor)
            if found is not None:
                offset, line = found
                next_from = max(next_from, offset + len(line))
                if offset not in done_lines:
                    done_lines.add(offset)
                    _take_line(base, data, offset, line, where, seen, out)
            pos = data.find(anchor, next_from)


def _take_line(base: int, data: bytes, offset: int, line: bytes, where: str, seen: set[int], out: list[AbortMessage]) -> None:
    kind = _kind_of(line)
    if kind is None:
        return
    address = base + offset
    if address in seen or not _plausible(kind, line):
        return
    seen.add(address)
    text = line
    if kind == "terminate":
        newline = data.find(b"\n", offset, offset + MAX_LINE + MAX_BACKTRACK)
        what = _what_after(data, newline) if newline >= 0 else None
        if what:
            text = line + b"\n  what():  " + what
    elif kind == "assertion-failure":
        reason = _line_after(data, offset + len(line))
        if not reason:
            return
        text = line + b": " + reason + _location_before(data, offset)
    out.append(AbortMessage(text.decode("ascii", "replace"), kind, address, where))


def _stack_pointers(data: bytes, targets: Sequence[Any], stack_seg: Any | None) -> list[int]:
    """Distinct page-aligned targets of stack words that point into writable, dumped memory."""
    dumped = _DumpedRanges([s for s in targets if s is not stack_seg])
    if not dumped:
        return []
    pages: list[int] = []
    seen: set[int] = set()
    for (value,) in struct.iter_unpack("<Q", data[: len(data) - len(data) % 8]):
        if value < 4096 or value not in dumped:
            continue
        page = value & ~0xFFF
        if page in seen:
            continue
        seen.add(page)
        pages.append(value)
        if len(pages) >= POINTER_TARGETS:
            break
    return pages


@searching()
def scan_abort_messages(
    memory: _Memory,
    sp: int | None,
    *,
    stack_limit: int = STACK_ABOVE_SP,
    budget: int = TOTAL_BUDGET,
    far: bool = True,
    far_unless_found_near: bool = False,
) -> list[AbortMessage]:
    """Every fatal message found, best first.

    far: read other writable memory after the stack, what it points to and small mappings;
    far_unless_found_near: only when those held no message (the best one is then the same).
    """
    try:
        segments = [s for s in memory.segments if int(s.end) > int(s.start)]
    except (AttributeError, TypeError, ValueError):
        return []
    writable = [s for s in segments if _writable(s) and _present_end(s) > s.start]
    spent = _Budget(budget)
    seen: set[int] = set()
    found: list[AbortMessage] = []
    scanned: list[tuple[int, int]] = []

    stack_seg = _segment_at(segments, sp) if isinstance(sp, int) else None
    if stack_seg is not None:
        lo = max(int(stack_seg.start), sp - STACK_BELOW_SP)
        hi = min(_present_end(stack_seg), sp + max(0, stack_limit))
        stack_bytes = bytearray()
        for base, data in _read_range(memory, lo, hi, spent):
            _scan_bytes(base, data, "stack", seen, found)
            if base - lo < POINTER_WINDOW + STACK_BELOW_SP:
                stack_bytes += data[: max(0, lo + POINTER_WINDOW + STACK_BELOW_SP - base)]
        scanned.append((lo, hi))
        # Pointers from the live part of the stack into the heap (absl's LogMessage keeps its
        # text in a heap buffer that the LogMessage object on the stack points to).
        live_from = sp - lo
        pointer_words = bytes(stack_bytes[live_from - live_from % 8: live_from - live_from % 8 + POINTER_WINDOW])
        for target in _stack_pointers(pointer_words, writable, stack_seg):
            seg = _segment_at(writable, target)
            if seg is None:
                continue
            start = max(int(seg.start), target - POINTER_READ_BEFORE)
            end = min(_present_end(seg), target + POINTER_READ_AFTER)
            for base, data in _read_range(memory, start, end, spent):
                _scan_bytes(base, data, "stack-pointer", seen, found)
            if spent.left <= 0:
                break

    def covered(seg: Any) -> bool:
        return any(lo <= seg.start and _present_end(seg) <= hi for lo, hi in scanned)

    small = [s for s in writable if _present_end(s) - s.start <= SMALL_SEGMENT and not covered(s)]
    for seg in small:
        for base, data in _read_range(memory, int(seg.start), _present_end(seg), spent):
            _scan_bytes(base, data, "small-mapping", seen, found)
    if not far or (far_unless_found_near and found):
        return sorted(found, key=lambda m: m.rank)
    big = [s for s in writable if _present_end(s) - s.start > SMALL_SEGMENT and s is not stack_seg]
    anchor = sp if isinstance(sp, int) else 0
    big.sort(key=lambda s: min(abs(int(s.start) - anchor), abs(_present_end(s) - anchor)))
    for seg in big:
        if spent.left <= 0:
            break
        for base, data in _read_range(memory, int(seg.start), _present_end(seg), spent):
            _scan_bytes(base, data, "writable-memory", seen, found)

    return sorted(found, key=lambda m: m.rank)


def find_abort_message(memory: _Memory | None, sp: int | None, signal: Any = None, **limits: int) -> str | None:
    """The most telling fatal message in the process's memory, or None.

    signal: the core's SignalInfo (number, code); a fault the kernel raised is not searched
    for far from the crash (see the module's docstring).
    """
    if memory is None:
        return None
    messages = scan_abort_messages(memory, sp, far=searches_far_memory(signal), far_unless_found_near=True, **limits)
    return messages[0].text if messages else None


def searches_far_memory(signal: Any) -> bool:
    """False for a signal the kernel raised at a faulting instruction, True otherwise (also
    when the signal is not known)."""
    number = getattr(signal, "number", None)
    code = getattr(signal, "code", None)
    return not (number in KERNEL_FAULT_SIGNALS and isinstance(code, int) and code > 0)


# --------------------------------------------------------------------------- uncaught C++ exceptions
#
# libstdc++ / libsupc++ allocate every thrown object behind a __cxa_refcounted_exception header
# (Itanium C++ ABI, 64-bit layout):
#
#     -88 referenceCount (int)     -80 exceptionType (std::type_info*)   -72 exceptionDestructor
#     -64 unexpectedHandler        -56 terminateHandler                  -48 nextException
#     -40 handlerCount (int)       -36 handlerSwitchValue (int)          -32 actionRecord
#     -24 languageSpecificData     -16 catchTemp                         -8  adjustedPtr
#       0 unwindHeader.exception_class = "GNUCC++\0"   ... (32 bytes)   +32 the thrown object
#
# When nothing catches it, __cxa_throw calls __cxa_begin_catch (handlerCount becomes 1) and then
# std::terminate: the header and the object are still in the heap when the core is written. The
# type is the type_info's mangled name; the what() text of the standard exceptions (logic_error,
# runtime_error and everything derived from them) is a string the object points to at +8.

GXX_EXCEPTION_CLASS = b"\x00++CCUNG"  # "GNUCC++\0" as a little-endian uint64
# "GNUCC++\x01": a __cxa_dependent_exception, what std::rethrow_exception throws for an
# exception_ptr (pybind11's translators do): its first word points at the primary exception's
# thrown object, whose own header holds the type.
GXX_DEPENDENT_CLASS = b"\x01++CCUNG"
_HEADER_BEFORE = 88
_OBJECT_AFTER = 32
_TYPE_NAME = re.compile(rb"\*?[A-Za-z0-9_]{2,400}")
EXCEPTION_SCAN_BUDGET = 64 * 1024 * 1024
MAX_EXCEPTION_HITS = 64


@dataclass(frozen=True)
class ThrownException:
    type: str  # demangled: "std::invalid_argument"
    what: str | None
    address: int  # of the thrown object
    handler_count: int

    def message(self) -> str:
        """libstdc++'s own words for it (what its verbose terminate handler prints)."""
        text = f"terminate called after throwing an instance of '{self.type}'"
        return text + (f"\n  what():  {self.what}" if self.what else "")


def _u64(data: bytes | None) -> int | None:
    return struct.unpack("<Q", data)[0] if data is not None and len(data) == 8 else None


def _printable(raw: bytes | None, limit: int = MAX_LINE) -> str | None:
    if not raw:
        return None
    raw = raw.split(b"\0", 1)[0][:limit]
    if not raw or any(b < 0x20 and b not in (0x09, 0x0A) for b in raw):
        return None
    text = raw.decode("utf-8", "replace")
    return text if text.strip() else None


def _read_string(memory: _Memory, address: int | None, read_mapped, limit: int = MAX_LINE) -> bytes | None:
    """A NUL-terminated string from the core, else from the file mapped there (read-only data
    the kernel did not dump)."""
    if not address:
        return None
    for reader in (memory.read, read_mapped):
        if reader is None:
            continue
        data = reader(address, limit)
        if data is None:
            # Near the end of a segment: read less.
            data = reader(address, 256)
        if data:
            return data.split(b"\0", 1)[0] if b"\0" in data else None
    return None


def _demangle_type(name: bytes) -> str:
    text = name.decode("ascii").lstrip("*")
    try:
        import cxxfilt

        return cxxfilt.demangle("_Z" + text)  # a type_info name is a mangled type without _Z
    except Exception:  # noqa: BLE001 — a name the demangler refuses is shown mangled
        return text


def _exception_at(memory: _Memory, magic_at: int, read_mapped, *, type_required: bool = True) -> ThrownException | None:
    """The exception whose class word is at magic_at. type_required: a readable type name is
    what tells a real header from bytes that look like one (a heap scan); an exception reached
    through the thread's own pointers needs no such proof, and its type may sit in a library's
    read-only data that neither the core nor a local file holds ("" then)."""
    header = memory.read(magic_at - _HEADER_BEFORE, _HEADER_BEFORE)
    if header is None:
        return None
    refcount, handler_count = struct.unpack_from("<i", header, 0)[0], struct.unpack_from("<i", header, 48)[0]
    type_info = struct.unpack_from("<Q", header, 8)[0]
    if not (0 <= refcount < 1 << 16) or not (-(1 << 16) < handler_count < 1 << 16) or type_info < 4096:
        return None
    name_ptr = _u64(memory.read(type_info + 8, 8)) or _u64(read_mapped(type_info + 8, 8) if read_mapped else None)
    raw_name = _read_string(memory, name_ptr, read_mapped, 400)
    if not raw_name or not _TYPE_NAME.fullmatch(raw_name):
        if type_required:
            return None
        raw_name = None
    obj = magic_at + _OBJECT_AFTER
    what = None
    message_ptr = _u64(memory.read(obj + 8, 8))
    if message_ptr and message_ptr >= 4096:
        what = _printable(memory.read(message_ptr, MAX_LINE) or memory.read(message_ptr, 256))
    return ThrownException(type=_demangle_type(raw_name) if raw_name else "", what=what, address=obj, handler_count=handler_count)


def _dependent_exception_at(memory: _Memory, magic_at: int, read_mapped) -> ThrownException | None:
    """A rethrown exception_ptr: the primary exception it points at, with the dependent's own
    handler count (the catch that is running is the dependent's)."""
    header = memory.read(magic_at - _HEADER_BEFORE, _HEADER_BEFORE)
    if header is None:
        return None
    primary_object = struct.unpack_from("<Q", header, 8)[0]  # where __cxa_exception has its type
    handler_count = struct.unpack_from("<i", header, 48)[0]
    if primary_object < 4096 or memory.read(primary_object - _OBJECT_AFTER, 8) != GXX_EXCEPTION_CLASS:
        return None
    primary = _exception_at(memory, primary_object - _OBJECT_AFTER, read_mapped, type_required=False)
    if primary is None:
        return None
    return ThrownException(type=primary.type, what=primary.what, address=primary.address, handler_count=handler_count)


def find_uncaught_exception(memory: _Memory | None, read_mapped=None, budget: int = EXCEPTION_SCAN_BUDGET) -> ThrownException | None:
    """The C++ exception that std::terminate is handling, from the core's writable memory.

    read_mapped(address, size) -> bytes | None reads memory the core left out (a library's
    read-only data, where type names live) from the file mapped there; optional.
    """
    if memory is None:
        return None
    found: list[ThrownException] = []
    spent = 0
    for seg in memory.segments:
        if not _writable(seg) or len(found) >= MAX_EXCEPTION_HITS:
            continue
        start, end = seg.start, _present_end(seg)
        address = start
        while address < end and spent < budget:
            size = min(CHUNK, end - address)
            data = memory.read(address, size)
            spent += size
            if data is None:
                break
            at = data.find(GXX_EXCEPTION_CLASS)
            while at >= 0 and len(found) < MAX_EXCEPTION_HITS:
                if (address + at) % 8 == 0:
                    exc = _exception_at(memory, address + at, read_mapped)
                    if exc is not None:
                        found.append(exc)
                at = data.find(GXX_EXCEPTION_CLASS, at + 8)
            address += size
    if not found:
        return None
    # The one being handled has entered its (terminating) catch; older ones are freed.
    live = [e for e in found if e.handler_count != 0]
    return (live or found)[0]


# The exception a thread is handling right now (inside a catch block, or being terminated for)
# is the head of libsupc++'s per-thread list, __cxa_eh_globals.caughtExceptions: a pointer to the
# __cxa_exception (88 - 8 bytes before the "GNUCC++" class word) in the thread's TLS. libstdc++
# loaded at start-up keeps it in static TLS, just below the thread pointer (x86-64's fs_base);
# loaded later by dlopen (TensorFlow's case, through Python) in a block of its own that the
# thread's DTV (thread pointer + 8) points to. Either way it is a few KiB to read, and the object
# it names is alive: libsupc++ frees it only when the catch block ends, which abort() prevents.
# Text elsewhere in the heap (copies the thrower made while formatting) may already be reused.
_CXA_EXCEPTION_TO_CLASS = _HEADER_BEFORE - 8
STATIC_TLS_SPAN = 16 * 1024
TLS_BLOCK_SPAN = 4 * 1024
MAX_DTV_ENTRIES = 4096
_DTV_UNALLOCATED = (1 << 64) - 1


def _tls_blocks(memory: _Memory, thread_pointer: int) -> list[tuple[int, int]]:
    """(start, size) of the TLS memory of the thread whose x86-64 thread pointer is given."""
    # The static blocks lie just below the thread pointer, in the mapping that holds it; that
    # mapping may begin less than STATIC_TLS_SPAN below it (where ASLR puts it), and a read
    # running past its start would get nothing.
    start = thread_pointer - STATIC_TLS_SPAN
    holding = next((seg for seg in memory.segments if seg.start < thread_pointer <= seg.end), None)
    if holding is not None:
        start = max(start, holding.start)
    blocks = [(start, thread_pointer - start)]
    dtv = _u64(memory.read(thread_pointer + 8, 8))
    count = _u64(memory.read(dtv - 16, 8)) if dtv else None  # dtv[-1].counter: entries allocated
    if not dtv or not count:
        return blocks
    table = memory.read(dtv + 16, 16 * min(count, MAX_DTV_ENTRIES)) or b""
    for (block, _static) in struct.iter_unpack("<QQ", table[: len(table) - len(table) % 16]):
        if block and block != _DTV_UNALLOCATED:
            blocks.append((block, TLS_BLOCK_SPAN))
    return blocks


def find_handled_exception(memory: _Memory | None, thread_pointer: int | None, read_mapped=None) -> ThrownException | None:
    """The C++ exception the thread is handling (libsupc++'s caughtExceptions of that thread),
    read through its TLS; None when the thread handles none or its TLS cannot be read."""
    if memory is None or not thread_pointer:
        return None
    try:
        writable = _DumpedRanges([s for s in memory.segments if _writable(s)])
    except (AttributeError, TypeError):
        return None
    for start, size in _tls_blocks(memory, thread_pointer):
        data = memory.read(start, size) or b""
        for (value,) in struct.iter_unpack("<Q", data[: len(data) - len(data) % 8]):
            if value % 8 or value not in writable:
                continue
            exception_class = memory.read(value + _CXA_EXCEPTION_TO_CLASS, 8)
            if exception_class == GXX_DEPENDENT_CLASS:
                exc = _dependent_exception_at(memory, value + _CXA_EXCEPTION_TO_CLASS, read_mapped)
            elif exception_class == GXX_EXCEPTION_CLASS:
                exc = _exception_at(memory, value + _CXA_EXCEPTION_TO_CLASS, read_mapped, type_required=False)
            else:
                continue
            if exc is not None and exc.handler_count != 0:
                return exc
    return None


def reason_in(thrown: ThrownException) -> str | None:
    """A fatal message inside an exception's what() text (ducc0's "Assertion failure" and its
    reason, a CHECK's "Check failed: ..."), in the words the memory scan gives it."""
    if not thrown.what:
        return None
    raw = thrown.what.encode("utf-8", "replace")
    found: list[AbortMessage] = []
    _scan_bytes(thrown.address, raw, "stack", set(), found)
    return sorted(found, key=lambda m: m.rank)[0].text if found else None


def message_kind(text: str | None) -> str | None:
    """The kind of fatal message a text is (fatal-log, check-failure, ...), or None."""
    return _kind_of(text.encode("utf-8", "replace")) if text else None


def is_log_fatal(text: str | None) -> bool:
    """A CHECK / LOG(FATAL) / protobuf FATAL line: the program's own last words outrank the text
    of an exception it was handling."""
    return _KIND_TIER.get(message_kind(text) or "", 9) == 0


_TERMINATE_FRAME = re.compile(r"(^|::)(terminate|__terminate|__cxa_throw|__cxa_rethrow|__cxa_call_terminate|__verbose_terminate_handler|__clang_call_terminate)\b")


def dying_of_terminate(function_names: Sequence[str | None], depth: int = 40) -> bool:
    """True when the crashed thread's top frames show std::terminate / __cxa_throw."""
    return any(name and _TERMINATE_FRAME.search(name) for name in function_names[:depth])
