"""The Debugger protocol (coreanalyze.unwind.debugger) spoken by a GdbSession over GDB/MI, and what
only gdb answers, used inside coreanalyze.gdb: its reads of memory, its expressions
(`$_siginfo`, a symbol's address), its mappings and libraries, the CPython walker's gdb command."""

from __future__ import annotations

import re
from typing import Any, Collection

from coreanalyze.base import signals
from coreanalyze.base.errors import GdbError, GdbTimeout
from coreanalyze.base.model import SignalInfo
from coreanalyze.base.resources import GDB_SCRIPTS
from coreanalyze.gdb.session import GdbSession, mi_quote
from coreanalyze.python.pywalk import WalkOptions, WalkResult, parse_walk_result
from coreanalyze.unwind.debugger import DebuggerFrame, DebuggerThread, Instruction

PYSTACKS_SCRIPT = GDB_SCRIPTS / "pystacks.py"
PYSTACKS_COMMAND = "-coreanalyze-pystacks"
PYSTACKS_TIMEOUT = 120.0  # seconds; a TensorFlow process with many threads takes a few

MAX_READ_BYTES = 1 << 20
MAX_MAPPINGS = 200_000

_LWP = re.compile(r"\bLWP (\d+)")
_PROCESS = re.compile(r"\bprocess (\d+)")
_MAPPING_LINE = re.compile(
    r"^\s*(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+0x[0-9a-fA-F]+\s+0x[0-9a-fA-F]+\s+(?:[rwxsp-]{4}\s+)?(\S.*?)\s*$"
)


def to_int(text: Any) -> int | None:
    """An integer from gdb's text of a value ("0x10 <sym>", "-3"); None when it is not one."""
    if not isinstance(text, str):
        return None
    token = text.strip().split(" ", 1)[0]
    try:
        return int(token, 0)
    except ValueError:
        return None


class GdbDebugger:
    """A Debugger over a GdbSession that has a core loaded."""

    def __init__(self, session: GdbSession) -> None:
        self.session = session
        self._register_numbers: dict[str, int] | None = None  # asked of gdb once

    def threads(self) -> tuple[list[DebuggerThread], str | None]:
        payload = self.session.mi("-thread-info")
        threads: list[DebuggerThread] = []
        for t in payload.get("threads") or []:
            if not isinstance(t, dict):
                continue
            target_id = str(t.get("target-id", ""))
            m = _LWP.search(target_id) or _PROCESS.search(target_id)
            name = t.get("name") or t.get("details") or None
            threads.append(DebuggerThread(str(t.get("id")), int(m.group(1)) if m else None, name, target_id))
        current = payload.get("current-thread-id")
        return threads, str(current) if current is not None else None

    def frames(self, thread: str, low: int, high: int) -> list[DebuggerFrame]:
        stack = self.session.mi(f"-stack-list-frames --thread {thread} {low} {high}").get("stack")
        return [_frame(f) for f in stack or [] if isinstance(f, dict)]

    def registers(self, thread: str, names: Collection[str]) -> dict[str, int]:
        if self._register_numbers is None:
            self._register_numbers = {n: i for i, n in enumerate(self.register_names()) if n}
        numbers = {self._register_numbers[n]: n for n in names if n in self._register_numbers}
        if not numbers:
            return {}
        values = self.register_values(thread, sorted(numbers))
        return {numbers[number]: value for number, value in values.items() if number in numbers}

    def instruction_at(self, thread: str | None, pc: int, length: int) -> Instruction | None:
        """The instruction at pc (thread None: in the current thread; the bytes are the same in
        every thread of a core)."""
        selected = "" if thread is None else f"--thread {thread} "
        try:
            insns = self.session.mi(f"-data-disassemble {selected}-s {pc:#x} -e {pc + length:#x} -- 0").get("asm_insns")
        except GdbTimeout:
            raise
        except GdbError:
            return None
        if not insns or not isinstance(insns[0], dict):
            return None
        first = insns[0]
        return Instruction(str(first.get("inst", "")), first.get("func-name"), to_int(first.get("offset")))

    # -- gdb's own, beyond the Debugger protocol --------------------------------------------

    def register_names(self) -> list[str]:
        """Register names by gdb's register number ([] when unknown)."""
        try:
            return self.session.mi("-data-list-register-names").get("register-names") or []
        except GdbTimeout:
            raise
        except GdbError:
            return []

    def register_values(self, thread: str, numbers: list[int]) -> dict[int, int]:
        """Values of the numbered registers in a thread's innermost frame ({} when unknown)."""
        wanted = " ".join(str(n) for n in numbers)
        try:
            values = self.session.mi(f"-data-list-register-values --thread {thread} x {wanted}").get("register-values")
        except GdbTimeout:
            raise
        except GdbError:
            return {}
        out: dict[int, int] = {}
        for v in values or []:
            number = to_int(v.get("number")) if isinstance(v, dict) else None
            value = to_int(v.get("value")) if isinstance(v, dict) else None
            if number is not None and value is not None:
                out[number] = value
        return out

    def read_memory(self, address: int, size: int) -> bytes | None:
        if address < 0 or size <= 0:
            return None
        size = min(size, MAX_READ_BYTES)
        try:
            payload = self.session.mi(f"-data-read-memory-bytes {address:#x} {size}")
        except GdbTimeout:
            raise
        except GdbError:
            return None
        blocks = payload.get("memory")
        if not isinstance(blocks, list):
            return None
        for block in blocks:
            if not isinstance(block, dict) or to_int(block.get("begin")) != address:
                continue
            try:
                return bytes.fromhex(block.get("contents", ""))[:size] or None
            except ValueError:
                return None
        return None

    def evaluate(self, expression: str, thread: str | None = None) -> str | None:
        where = f"--thread {thread} " if thread is not None else ""
        try:
            value = self.session.mi(f"-data-evaluate-expression {where}{mi_quote(expression)}").get("value")
        except GdbTimeout:
            raise
        except GdbError:
            return None
        return value if isinstance(value, str) else None

    def siginfo(self, thread: str | None = None) -> SignalInfo | None:
        """gdb's `$_siginfo` of a thread (what the kernel saved with the thread's registers)."""

        def field(expr: str) -> int | None:
            return to_int(self.evaluate(f"$_siginfo.{expr}", thread))

        number = field("si_signo")
        if number is None:
            return None
        info = SignalInfo(number=number, name=signals.signal_name(number))
        info.code = field("si_code")
        info.errno = field("si_errno")
        info.code_name = signals.code_name(info.name, info.code)
        if info.code is not None and info.code <= 0:
            info.sender_pid = field("_sifields._kill.si_pid")
            info.sender_uid = field("_sifields._kill.si_uid")
        elif info.name in signals.FAULT_ADDRESS_SIGNALS:
            info.address = field("_sifields._sigfault.si_addr")
        return info

    def symbol_address(self, name: str) -> int | None:
        return to_int(self.evaluate(f"(unsigned long)&{name}"))

    def file_mappings(self) -> list[tuple[int, int, str]]:
        text = self.session.console("info proc mappings")
        ranges = []
        for line in text.splitlines()[:MAX_MAPPINGS]:
            m = _MAPPING_LINE.match(line)
            if m and m.group(3).startswith("/"):
                ranges.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
        return ranges

    def library_ranges(self) -> list[tuple[int, int, str]]:
        try:
            libs = self.session.mi("-file-list-shared-libraries").get("shared-libraries") or []
        except GdbTimeout:
            raise
        except GdbError:
            libs = []
        ranges = []
        for lib in libs[:MAX_MAPPINGS]:
            for r in lib.get("ranges") or []:
                lo, hi = to_int(r.get("from")), to_int(r.get("to"))
                if lo is not None and hi is not None:
                    ranges.append((lo, hi, lib.get("target-name") or lib.get("id") or ""))
        return ranges

    def python_stacks(self, options: WalkOptions) -> WalkResult:
        """The CPython walker's answer from inside gdb (a PythonWalker, coreanalyze.python.pywalk): its
        gdb command, sourced first when this gdb does not have it yet."""
        command = " ".join([PYSTACKS_COMMAND, *walker_arguments(options)])
        try:
            return parse_walk_result(self.session.mi(command, timeout=PYSTACKS_TIMEOUT))
        except GdbTimeout:
            raise
        except GdbError as e:
            if "Undefined MI command" not in str(e):
                raise
        self.session.source(str(PYSTACKS_SCRIPT))
        return parse_walk_result(self.session.mi(command, timeout=PYSTACKS_TIMEOUT))


def walker_arguments(options: WalkOptions) -> list[str]:
    """The walker's gdb command's arguments for the options (its pywalker.parse_args reads them)."""
    args = ["--imports"] if options.imports else []
    if options.runtime is not None:
        args += ["--runtime", f"0x{options.runtime:x}"]
    if options.version_hint is not None:
        args += ["--python-version", ".".join(str(v) for v in options.version_hint[:2])]
    if options.with_locals:
        args += ["--locals", "--locals-frames", str(int(options.locals_frames))]
        if options.locals_tid is not None:
            args += ["--locals-tid", str(int(options.locals_tid))]
    if options.show_layout:
        args.append("--show-layout")
    return args


def _frame(raw: dict[str, Any]) -> DebuggerFrame:
    func = raw.get("func")
    line = raw.get("line")
    return DebuggerFrame(
        pc=to_int(raw.get("addr")),
        function=None if func in (None, "??") else func,
        file=raw.get("file"),
        line=int(line) if isinstance(line, str) and line.isdigit() else None,
        library=raw.get("from"),
    )


def as_gdb(session: GdbSession | GdbDebugger) -> GdbDebugger:
    """The GdbDebugger for a GdbSession (a GdbDebugger is returned as it is)."""
    return GdbDebugger(session) if isinstance(session, GdbSession) else session
