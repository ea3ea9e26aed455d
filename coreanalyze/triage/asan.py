"""AddressSanitizer (and its LLVM siblings') error reports.

    ==12345==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014 at pc 0x4f5e2d bp .. sp ..
    WRITE of size 4 at 0x602000000014 thread T0
        #0 0x4f5e2c in main /tmp/x.c:5:3
        #1 0x7f3c2a in __libc_start_main (/lib/x86_64-linux-gnu/libc.so.6+0x21b96)
        #2 0x41c0e9  (/tmp/a.out+0x41c0e9) (BuildId: 4f1a..)
    ...
    SUMMARY: AddressSanitizer: heap-buffer-overflow /tmp/x.c:5:3 in main

The first stack after the ERROR line is where the error happened; the stacks after it
("freed by thread T0 here:", "previously allocated by ...", "Thread T7 created by") are
history, not threads. A SEGV/BUS/FPE/ILL/ABRT report is a signal the sanitizer caught; the
other reports are memory errors the sanitizer found before anything faulted.

The same layout comes from the sanitizer's siblings, each with its own header line:
MemorySanitizer / ThreadSanitizer `WARNING: ...Sanitizer: ...`, LeakSanitizer, libFuzzer's
`ERROR: libFuzzer: deadly signal` and UBSan's `file.cc:12:3: runtime error: ...`. The class
the report names ("heap-buffer-overflow", "READ of size 4") is kept as the report's detail.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "asan"

_ERROR = re.compile(r"(?:==(\d{1,9})==\s*)?(?:ERROR: (\w{1,40}Sanitizer|libFuzzer)|WARNING: ((?:Memory|Thread)Sanitizer)): (.*)")
_UBSAN = re.compile(r"^(?:\S{1,300}:\d{1,9}(?::\d{1,6})?: )?runtime error: (.{1,300})")
# The class a report names, without the address that follows it.
_CLASS = re.compile(r"^(.*?)(?: on (?:unknown )?address\b| on 0x| \(pid=| \(0x|$)")
_LIBRARY = re.compile(r"[\w.+-]{1,200}\.so(?:\.\d+)*")
_NO_NAME = re.compile(r"\s*\?\?(?::\?|:0)?$")
_FILE_ONLY = re.compile(r"[\w./+-]+\.\w{1,4}:\d{1,9}(?::\d{1,6})?")
# Windows builds of the sanitizers say "access-violation" where Linux says SEGV.
_SIGNAL_REPORT = re.compile(r"(SEGV|BUS|FPE|ILL|ABRT|TRAP|access-violation) on unknown address (0x[0-9a-fA-F]{1,16})")
_NEAR_NULL = re.compile(r"\bon address (0x0{0,12}[0-9a-fA-F]{1,4})\b")
_STACK_OVERFLOW = re.compile(r"stack-overflow on address (0x[0-9a-fA-F]{1,16})")
_THREAD = re.compile(r"\b(?:thread )?T(\d{1,7})\b(?: \(([^)]*)\))?")
_FRAME = re.compile(r"[ \t]*#(\d{1,6}) (0x[0-9a-fA-F]{1,16})(?: in)? ?(.*)")
_MODULE = re.compile(r"\(([^()\s]+)\+(0x[0-9a-fA-F]{1,16})\)")
_BUILD_ID = re.compile(r"\s*\(BuildId: [0-9a-fA-F]{1,80}\)\s*$")
_FILE_LINE = re.compile(r"(\S+?):(\d{1,9})(?::\d{1,6})?")
_SUMMARY = re.compile(r"SUMMARY: (\w{1,40}Sanitizer): (.*)")
# Lines of a report between its first stack and its SUMMARY.
_REPORT_LINE = re.compile(
    r"here:$|is located |allocated by|freed by|created by|^==\d+==|^Address |^0x[0-9a-fA-F]+ is |"
    r"can not provide additional info|^Hint:|^The signal is caused|^[A-Z]+ of size \d+|"
    # MSan origins, TSan's other access and thread stacks, LSan's leak list, libFuzzer's footer.
    r"^Uninitialized value|^Previous (?:write|read|atomic)|^Location is|^Mutex |^As if synchroni|"
    r"^(?:Direct|Indirect) leak of|^Thread T\d+|^(?:Read|Write|Atomic \w+) of size|^SUMMARY:|"
    r"^MS: |^base unit:|^artifact_prefix|^Test unit written|^0x[0-9a-fA-F]+: |^=>0x|^Shadow |"
    r"^DEADLYSIGNAL|Sanitizer:DEADLYSIGNAL|^-+$"
)
_ACCESS = re.compile(r"(READ|WRITE) of size \d+ at (0x[0-9a-fA-F]{1,16}) thread T(\d{1,7})")


def parse_frame_text(rest: str, pc: int | None) -> fd.model.Frame:
    """'func file:line:col' | 'func (lib.so+0x12)' | '(lib.so+0x12)' -> Frame."""
    rest = _NO_NAME.sub("", _BUILD_ID.sub("", rest)).strip()
    module = None
    file = None
    line = None
    if rest.endswith(")"):
        start = rest.rfind(" (")
        candidate = rest[start + 1 :] if start >= 0 else rest
        m = _MODULE.fullmatch(candidate)
        if m:
            module = m.group(1)
            rest = rest[:start].strip() if start >= 0 else ""
    if module is None:
        cut = rest.rfind(" ")
        tail = rest[cut + 1 :] if cut >= 0 else ""
        m = _FILE_LINE.fullmatch(tail) if tail else None
        if m:
            file, line = m.group(1), int(m.group(2))
            rest = rest[:cut].strip()
        elif _FILE_ONLY.fullmatch(rest):
            # No function name at all: `#0 0x7f.. /glibc/.../memmove-vec-unaligned-erms.S:345`.
            m = _FILE_LINE.fullmatch(rest)
            file, line, rest = m.group(1), int(m.group(2)), ""
    if rest and module is None and _LIBRARY.fullmatch(rest):
        module, rest = rest, ""  # `#0 0x7f.. in libc.so.6`: a library, no symbol
    if rest and _FILE_ONLY.fullmatch(rest):
        rest = ""  # a file:line standing where the name should be (assembly without symbols)
    return fd.native_frame(rest or None, pc=pc, module=module, file=file, line=line)


def _header(s: str) -> tuple[int | None, str, str] | None:
    """(pid, tool, what the report says) for a sanitizer report's first line."""
    if "Sanitizer" in s or "libFuzzer" in s:
        m = _ERROR.search(s)
        if m:
            return (int(m.group(1)) if m.group(1) else None), m.group(2) or m.group(3), m.group(4).strip()
    if "runtime error:" in s:
        m = _UBSAN.search(s.strip())
        if m:
            return None, "UndefinedBehaviorSanitizer", "runtime error: " + m.group(1).strip()
    return None


def report_class(what: str) -> str:
    """'heap-buffer-overflow on address 0x60.. at pc ..' -> 'heap-buffer-overflow'."""
    if what.startswith("runtime error: "):
        return what[:200]
    m = _CLASS.match(what)
    return (m.group(1) if m else what).strip()[:200]


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    i, n = 0, len(lines)
    while i < n:
        s = lines[i]
        header = None if claimed[i] else _header(s)
        if header is None:
            i += 1
            continue
        if len(found) >= limits.MAX_BLOCKS_PER_FORMAT:
            break
        finding = fd.Finding(FORMAT, i)
        finding.pid, tool, what = header
        finding.detail = report_class(what)
        sig = _SIGNAL_REPORT.search(what)
        overflow = _STACK_OVERFLOW.search(what)
        if sig:
            name = "SIGSEGV" if sig.group(1) == "access-violation" else signals.normalize_name(sig.group(1))
            finding.set_signal(name, fd.SIGNAL_WITH_ADDRESS, address=fd.hex_int(sig.group(2)))
        elif overflow:
            finding.set_signal("SIGSEGV", fd.SIGNAL_WITH_ADDRESS, address=fd.hex_int(overflow.group(1)))
        elif tool != "libFuzzer" and not what.startswith("runtime error"):
            # A memory error found by the sanitizer: it reports and exits (or aborts).
            finding.add_message(fd.MESSAGE_ALLOCATOR, f"{tool}: {what}")
            near_null = _NEAR_NULL.search(what)
            if near_null:
                # "unknown-crash on address 0x000000000006": the access a run without the
                # sanitizer takes its SIGSEGV at; no allocation lives in the null page.
                finding.set_signal("SIGSEGV", fd.SIGNAL_IMPLIED, address=fd.hex_int(near_null.group(1)))
        thread = fd.TextThread(crashed=True)
        tm = _THREAD.search(what)
        if tm:
            _name_thread(thread, tm, finding.pid)
        claimed[i] = 1
        i += 1
        # The access line and the first stack.
        in_stack = False
        while i < n:
            s = lines[i]
            st = s.strip()
            fm = _FRAME.match(s) if st.startswith("#") else None
            if fm:
                in_stack = True
                thread.add(parse_frame_text(fm.group(3), fd.hex_int(fm.group(2))))
                claimed[i] = 1
                i += 1
                continue
            if in_stack:
                if not st and _frame_follows(lines, i, len(thread.frames)):
                    claimed[i] = 1  # a blank line inside the stack (Android's log copies)
                    i += 1
                    continue
                break
            am = _ACCESS.search(st)
            if am:
                _name_thread(thread, _THREAD.search(st[am.start(3) - 1 :]), finding.pid)
                finding.detail = f"{finding.detail} {am.group(0).split(' at ')[0]}"
            if st.startswith("SUMMARY:") or _header(st) is not None:
                break
            claimed[i] = 1
            i += 1
            if i - finding.line > 40:  # no stack within the report's header: give up
                break
        # History stacks ("freed by thread T0 here:") and the summary belong to the report.
        j = i
        while j < n and j - i < 4000:
            st = lines[j].strip()
            if st.startswith("SUMMARY:"):
                sm = _SUMMARY.search(st)
                if sm:
                    finding.warnings.append(f"{sm.group(1)} summary: {sm.group(2)[:300]}")
                claimed[j] = 1
                j += 1
                # The thread-creation stacks ASan prints after its summary are history too.
                continue
            if _header(st) is not None:
                break
            if not (not st or _REPORT_LINE.search(st) or (st.startswith("#") and _FRAME.match(st))):
                break
            claimed[j] = 1
            j += 1
        i = j
        if thread.dropped_frames:
            finding.warnings.append(f"only the first {limits.MAX_FRAMES_PER_THREAD} frames of the sanitizer stack were kept")
        finding.add_thread(thread)
        found.append(finding)
    return found


def _frame_follows(lines: list[str], i: int, number: int, gap: int = 2) -> bool:
    """True when, past at most `gap` blank lines from i, the stack goes on with frame #number."""
    for j in range(i, min(len(lines), i + gap + 1)):
        st = lines[j].strip()
        if st:
            fm = _FRAME.match(lines[j]) if st.startswith("#") else None
            return fm is not None and fm.group(1) == str(number)
    return False


def _name_thread(thread: fd.TextThread, m: re.Match | None, pid: int | None) -> None:
    if m is None:
        return
    number = int(m.group(1))
    thread.number = number
    if m.group(2):
        thread.name = m.group(2)
    if number == 0 and pid is not None:
        thread.tid = pid  # T0 is the main thread, whose tid is the pid
