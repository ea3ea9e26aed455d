"""What every output format shows, derived once from a Report.

The renderers (HTML, Markdown, text, verdict) differ only in markup; what to show — which
frame is the culprit, which frames to elide, which modules are suspicious, how an address or a
signal is spelled — is decided here. Every field may be missing (a triage report has no core
and no modules; a report from the notes alone has frames without names), so nothing here
assumes a value is present.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from coreanalyze.base.model import Culprit, Frame, Module, Report, Thread
from coreanalyze.base.vocabulary import ModuleStatus

UNKNOWN = "?"

# Strings from a core can be absurdly long (a crafted cmdline, a template-heavy C++ name);
# display is clipped, the JSON keeps everything.
MAX_TEXT = 4000
MAX_FUNCTION = 400

# Frames shown per thread: the top (where it died) and the bottom (how it got there); the
# middle of a deep recursion says nothing new. The culprit and suspect are always kept.
CRASHED_HEAD, CRASHED_TAIL = 96, 24
OTHER_HEAD, OTHER_TAIL = 48, 8
CONTEXT_AROUND_MARKED = 2
MAX_OTHER_THREADS = 256
# Below this many modules the whole table is shown; above it, the modules that matter for
# this crash (problems, the crashing thread's own) are shown and the rest is folded.
MODULES_SHOWN_IN_FULL = 12


@dataclass(frozen=True)
class ViewLimits:
    """How much of each thread a view keeps; the Markdown renderer tightens these until the
    report fits in a ticket."""

    crashed_head: int = CRASHED_HEAD
    crashed_tail: int = CRASHED_TAIL
    other_head: int = OTHER_HEAD
    other_tail: int = OTHER_TAIL
    max_other_threads: int = MAX_OTHER_THREADS
    value_chars: int = MAX_TEXT  # environment values

    @property
    def other_frames(self) -> bool:
        """False when other threads are shown as one line each, without frames."""
        return self.other_head + self.other_tail > 0

# Control characters would let a core rewrite the user's terminal (ANSI/OSC sequences) or
# break a line-oriented format; bidirectional overrides can make a name read differently
# from what it is. Both are shown as visible escapes, and so are lone surrogates (bytes
# that were not UTF-8, kept by a surrogateescape decode), which no UTF-8 writer accepts.
_UNSAFE_CHARS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)
_LINE_BREAKS = re.compile(r"\r\n|\r|\n|\t")

# Register display order; anything else follows alphabetically.
_REGISTER_ORDER = (
    # x86_64
    "rip", "rsp", "rbp", "rax", "rbx", "rcx", "rdx", "rsi", "rdi",
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "eflags",
    "cs", "ss", "ds", "es", "fs", "gs", "fs_base", "gs_base", "orig_rax",
    # aarch64
    "pc", "sp", "lr", "fp", "cpsr", "pstate", *(f"x{i}" for i in range(31)),
)


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: Any, limit: int = MAX_TEXT, *, keep_newlines: bool = True) -> str:
    """A string safe to print on a terminal or put in any format: no control characters
    (newlines and tabs kept unless asked otherwise), no bidi overrides, bounded length."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = text[:limit] + f"… ({len(text) - limit} more characters)"
    if _UNSAFE_CHARS.search(text) is None and (keep_newlines or ("\n" not in text and "\t" not in text)):
        return text  # nearly every string: nothing to escape (a "\r" is one of the unsafe)
    if not keep_newlines:
        text = _LINE_BREAKS.sub(" ", text)
        return _UNSAFE_CHARS.sub(_escape_char, text)
    # Keep \n and \t; escape every other control character.
    return "".join(
        part if part in ("\n", "\t") else _UNSAFE_CHARS.sub(_escape_char, part)
        for part in re.split(r"(\n|\t)", text.replace("\r\n", "\n"))
    )


def one_line(value: Any, limit: int = MAX_TEXT) -> str:
    return clean(value, limit, keep_newlines=False)


def hex_addr(value: int | None, width: int = 0) -> str | None:
    if value is None:
        return None
    if value < 0:  # a sign-extended value from a parser; show the 64-bit pattern
        value &= (1 << 64) - 1
    return f"0x{value:0{width}x}"


def basename(path: str | None) -> str | None:
    if not path:
        return None
    return path.rstrip("/").rsplit("/", 1)[-1] or path


_MAX_ITEMS = 1000  # items of one environment value shown; the JSON keeps all


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def pretty_value(value: Any) -> str:
    """An environment value as one readable string: text as is, a list of packages as
    "name version, ...", a flat list as "a, b", a flat mapping as "k: v; k: v", anything
    deeper as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return UNKNOWN
    if isinstance(value, (list, tuple)):
        items = list(value[:_MAX_ITEMS])
        more = f", … ({len(value) - _MAX_ITEMS} more)" if len(value) > _MAX_ITEMS else ""
        if items and all(isinstance(i, dict) and "name" in i and "version" in i for i in items):
            return ", ".join(f"{i['name']} {i['version']}" for i in items) + more
        if all(_scalar(i) for i in items):
            return ", ".join(UNKNOWN if i is None else str(i) for i in items) + more
    if isinstance(value, dict) and len(value) <= _MAX_ITEMS:
        parts = []
        for k, v in value.items():
            shown = pretty_value(v) if _scalar(v) or (
                isinstance(v, (list, tuple)) and all(_scalar(i) for i in v[:_MAX_ITEMS])) else _json(v)
            parts.append(f"{k}: {shown}")
        return "; ".join(parts)
    return _json(value)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


_TRAILING_QUALIFIERS = re.compile(r"\)(?:\s*(?:const|volatile|noexcept|&&|&))*\s*$")
_MAX_SPLIT = 20_000  # longer names are shown unsplit rather than scanned


def split_signature(name: str) -> tuple[str, str]:
    """("ns::Op::Compute", "(tensorflow::OpKernelContext*) const") for a demangled C++ name,
    so that the parameter list can be shown quieter than the name; (name, "") when there is
    no parameter list ("(anonymous namespace)::f", a Python function, a plain C symbol)."""
    tail = _TRAILING_QUALIFIERS.search(name) if len(name) <= _MAX_SPLIT else None
    if tail is None:
        return name, ""
    depth = 0
    for pos in range(tail.start(), -1, -1):
        ch = name[pos]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                if pos == 0 or not name[:pos].strip():
                    return name, ""
                return name[:pos], name[pos:]
    return name, ""


@dataclass
class FrameRow:
    """One line of a frame table: a frame, or a gap standing for `omitted` elided frames."""

    frame: Frame | None
    omitted: int = 0
    culprit: bool = False
    suspect: bool = False
    unreliable: str | None = None  # why the frame's name/line may be wrong

    @property
    def is_gap(self) -> bool:
        return self.frame is None

    @property
    def is_python(self) -> bool:
        return self.frame is not None and self.frame.kind == "python"

    @property
    def function(self) -> str:
        f = self.frame
        if f is None or not f.function:
            return self._unnamed
        return one_line(f.function, MAX_FUNCTION)

    @property
    def _unnamed(self) -> str:
        """An unnamed frame: "??", with the exported function a stripped library ran it for."""
        entry = self.frame.entry_point if self.frame is not None else None
        return one_line(f"?? under {entry}", MAX_FUNCTION) if entry else "??"

    @property
    def function_parts(self) -> tuple[str, str]:
        """The function's name and its parameter list (maybe ""), each clipped for display."""
        f = self.frame
        if f is None or not f.function:
            return self._unnamed, ""
        if f.kind == "python":
            return self.function, ""
        name, params = split_signature(f.function)
        return one_line(name, MAX_FUNCTION), one_line(params, MAX_FUNCTION) if params else ""

    @property
    def pc(self) -> str | None:
        return None if self.frame is None else hex_addr(self.frame.pc, 16)

    @property
    def offset(self) -> str | None:
        f = self.frame
        if f is None or f.offset is None:
            return None
        return f"+{hex_addr(f.offset)}"

    @property
    def module_name(self) -> str | None:
        return None if self.frame is None else basename(self.frame.module)

    @property
    def location(self) -> str | None:
        """file:line when known."""
        f = self.frame
        if f is None or not f.file:
            return None
        return f"{f.file}:{f.line}" if f.line is not None else f.file

    @property
    def source(self) -> str | None:
        f = self.frame
        if f is None or not f.source:
            return None
        return f.source.strip()

    @property
    def locals(self) -> list[tuple[str, str]]:
        f = self.frame
        if f is None or not f.locals:
            return []
        return [(str(k), str(v)) for k, v in f.locals.items()]

    @property
    def marks(self) -> list[str]:
        out = []
        if self.culprit:
            out.append("culprit")
        if self.suspect:
            out.append("suspect")
        if self.unreliable:
            out.append("unreliable")
        return out

    def plain(self) -> str:
        """The frame as one line of plain text (text format, Markdown code blocks, verdict)."""
        if self.frame is None:
            return f"    ... {self.omitted} frames omitted ..."
        f = self.frame
        if f.kind == "python":
            text = f"#{f.index:<3} [py] {self.function}"
            if self.location:
                text += f" ({one_line(self.location)})"
        else:
            text = f"#{f.index:<3} {self.pc or '?':<18} in {self.function}"
            if self.offset:
                text += f" {self.offset}"
            if self.module_name:
                text += f" ({one_line(self.module_name)})"
            if self.location:
                text += f" at {one_line(self.location)}"
        if self.marks:
            text += "  <== " + ", ".join(self.marks)
        if self.unreliable:
            text += f" ({self.unreliable})"
        return text


@dataclass
class ThreadView:
    thread: Thread
    rows: list[FrameRow]
    # A free-threaded interpreter ran without its GIL (environment.python_gil): no thread held one.
    gil_disabled: bool = False

    @property
    def tid(self) -> int:
        return self.thread.tid

    @property
    def name(self) -> str | None:
        return one_line(self.thread.name, 200) if self.thread.name else None

    @property
    def role(self) -> str | None:
        return one_line(self.thread.role, 100) if self.thread.role else None

    @property
    def gil(self) -> str | None:
        """"holds the GIL" / "no GIL" / "GIL disabled" / None when unknown."""
        if self.thread.holds_gil is None:
            return "GIL disabled" if self.gil_disabled else None
        return "holds the GIL" if self.thread.holds_gil else "no GIL"

    @property
    def title(self) -> str:
        text = f"Thread {self.tid}"
        if self.name:
            text += f' "{self.name}"'
        return text

    @property
    def frame_count(self) -> int:
        return len(self.thread.frames)

    @property
    def frames_text(self) -> str:
        return f"{self.frame_count} frame{'s' if self.frame_count != 1 else ''}"

    @property
    def top_function(self) -> str | None:
        for row in self.rows:
            if row.frame is not None and row.frame.function:
                return row.function
        return None

    @property
    def has_python(self) -> bool:
        return any(f.kind == "python" for f in self.thread.frames)

    def plain_lines(self) -> list[str]:
        lines = []
        for row in self.rows:
            lines.append(row.plain())
            if row.source:
                lines.append(f"          {one_line(row.source)}")
            for name, value in row.locals:
                lines.append(f"          {one_line(name, 200)} = {one_line(value, 400)}")
        return lines


def _culprit_position(frames: list[Frame], culprit: Culprit | None) -> int | None:
    if culprit is None or culprit.frame_index is None:
        return None
    for pos, f in enumerate(frames):
        if f.index == culprit.frame_index:
            return pos
    return None


def _kept_positions(count: int, head: int, tail: int, marked: list[int]) -> list[int]:
    keep = set(range(min(head, count))) | set(range(max(0, count - tail), count))
    for pos in marked:
        lo, hi = max(0, pos - CONTEXT_AROUND_MARKED), min(count, pos + CONTEXT_AROUND_MARKED + 1)
        keep.update(range(lo, hi))
    return sorted(keep)


def frame_rows(
    thread: Thread,
    *,
    head: int,
    tail: int,
    culprit: Culprit | None = None,
    suspect: Culprit | None = None,
    module_status: dict[str, ModuleStatus] | None = None,
) -> list[FrameRow]:
    frames = thread.frames
    culprit_pos = _culprit_position(frames, culprit)
    suspect_pos = _culprit_position(frames, suspect)
    marked = [p for p in (culprit_pos, suspect_pos) if p is not None]
    statuses = module_status or {}
    rows: list[FrameRow] = []
    previous = -1
    for pos in _kept_positions(len(frames), head, tail, marked):
        if pos > previous + 1:
            rows.append(FrameRow(frame=None, omitted=pos - previous - 1))
        f = frames[pos]
        unreliable = None
        status = statuses.get(f.module or "")
        if status is not None and status.unreliable:
            unreliable = f"module {status}: {status.problem}"
        elif not f.reliable:
            unreliable = "module does not match the core"
        rows.append(
            FrameRow(
                frame=f,
                culprit=pos == culprit_pos,
                suspect=pos == suspect_pos and pos != culprit_pos,
                unreliable=unreliable,
            )
        )
        previous = pos
    return rows


def _register_key(name: str) -> tuple[int, str]:
    try:
        return (_REGISTER_ORDER.index(name), name)
    except ValueError:
        return (len(_REGISTER_ORDER), name)


@dataclass(frozen=True)
class PackageRow:
    """One package of the process that died: what its sys.modules said, where it was loaded from."""

    name: str
    version: str
    path: str
    libraries: str


def _package_rows(packages: Any, limits: ViewLimits) -> list[PackageRow]:
    rows = []
    for p in packages if isinstance(packages, list) else []:
        if not isinstance(p, dict):
            continue
        libraries = p.get("libraries") or []
        rows.append(
            PackageRow(
                name=one_line(str(p.get("name")), 200),
                version=one_line(str(p.get("version") or UNKNOWN), 64),
                path=one_line(str(p.get("path") or ""), limits.value_chars),
                libraries=one_line(", ".join(str(x) for x in libraries), limits.value_chars),
            )
        )
    return rows


@dataclass
class ReportView:
    report: Report
    crashed: ThreadView | None
    others: list[ThreadView]
    others_omitted: int
    registers: list[tuple[str, str]]
    modules: list[Module]
    module_problems: list[Module]
    module_counts: dict[str, int]
    environment: list[tuple[str, str]]
    packages: list[PackageRow] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The modules that matter for this crash (problems, the crashing thread's own, the
    # executable) and the rest, which the HTML folds and the Markdown only counts.
    key_modules: list[Module] = field(default_factory=list)
    other_modules: list[Module] = field(default_factory=list)
    limits: ViewLimits = field(default_factory=ViewLimits)

    # --- the verdict, spelled once for every format -------------------------------------

    @property
    def classification(self):
        return self.report.classification

    @property
    def op_inputs(self) -> list:
        """The op instance's inputs as rows (coreanalyze.opinstance.view)."""
        from coreanalyze.opinstance.view import input_rows

        instance = self.report.classification.op_instance
        return input_rows(instance) if instance is not None else []

    @property
    def hang_threads(self) -> list[str]:
        """For a hang: where every thread is, one line each (state, object, owner, frame)."""
        from coreanalyze.hang.describe import describe_wait

        hang = self.classification.hang
        return [one_line(describe_wait(w), 400) for w in hang.threads[: self.limits.max_other_threads + 1]] if hang else []

    @property
    def signal_text(self) -> str | None:
        """"SIGSEGV (SEGV_MAPERR)", "signal 11", or None."""
        core = self.report.core
        if core is None:
            return None
        sig = core.signal
        name = sig.name or (f"signal {sig.number}" if sig.number is not None else None)
        if name is None:
            return None
        if sig.code_name:
            return one_line(f"{name} ({sig.code_name})", 200)
        if sig.code is not None:
            return one_line(f"{name} (code {sig.code})", 200)
        return one_line(name, 200)

    @property
    def fault_address(self) -> str | None:
        core = self.report.core
        return None if core is None else hex_addr(core.signal.address)

    @property
    def sender_pid(self) -> int | None:
        """Who sent the signal, when it came from another process (abort() sends it to itself)."""
        core = self.report.core
        if core is None or core.signal.sender_pid == core.pid:
            return None
        return core.signal.sender_pid

    @property
    def reraised_text(self) -> str | None:
        """"re-raised by faulthandler": the handler that caught the signal and raised it again."""
        core = self.report.core
        if core is None or not core.signal.reraised_by:
            return None
        return one_line(f"re-raised by {core.signal.reraised_by}", 200)

    @property
    def culprit_text(self) -> str | None:
        c = self.classification.culprit
        if not c.function and not c.module:
            return None
        text = c.function or "??"
        if c.module:
            text += f" in {basename(c.module)}"
        return one_line(text, MAX_FUNCTION)

    @property
    def suspect_text(self) -> str | None:
        s = self.classification.suspect
        if s is None or (not s.function and not s.module):
            return None
        text = s.function or "??"
        if s.module:
            text += f" in {basename(s.module)}"
        return one_line(text, MAX_FUNCTION)

    @property
    def headline(self) -> str:
        """One line naming what happened: "null-deref in store_result (kernel-compute)"."""
        cls = self.classification
        text = cls.fault_kind or "unknown"
        c = cls.culprit
        if c.function:
            text += f" in {one_line(c.function, 120)}"
        elif c.module:
            text += f" in {basename(c.module)}"
        return one_line(f"{text} ({cls.category or 'unknown'})", 300)

    @property
    def title(self) -> str:
        core = self.report.core
        subject = basename(core.path) if core is not None and core.path else None
        if self.report.source == "triage":
            subject = subject or "pasted backtrace"
        text = "coreanalyze"
        if subject:
            text += f": {one_line(subject, 200)}"
        return f"{text} — {self.headline}"

    @property
    def core_to_attach_text(self) -> str | None:
        """How to attach this core to a ticket (coreanalyze.shrink), or what was shrunk away."""
        core = self.report.core
        if core is None or not core.path or self.report.source == "triage" or core.arch == "cuda":
            return None
        shrunk = core.shrunk
        if shrunk is not None:
            was = f" of {shrunk.original_size / (1 << 20):.1f} MiB" if shrunk.original_size else ""
            dropped = f"; redacted: {', '.join(shrunk.redacted)}" if shrunk.redacted else ""
            return one_line(f"this core is a shrunk copy{was} (coreanalyze shrink){dropped}", 400)
        name = basename(core.path)
        return one_line(f"coreanalyze shrink {name} -o {name}.small.zst --compress", 400)

    @property
    def other_module_counts(self) -> dict[str, int]:
        return _module_counts(self.other_modules)

    @property
    def module_problems_text(self) -> str:
        return modules_differ_text(len(self.module_problems))

    @property
    def crashed_title(self) -> str:
        if self.crashed is None:
            return "Crashing thread"
        return f"Crashing thread {self.crashed.tid}" + (f' "{self.crashed.name}"' if self.crashed.name else "")

    @property
    def no_crashed_thread_text(self) -> str:
        core = self.report.core
        if core is not None and core.arch == "cuda":
            return "A GPU core holds no host threads: analyze the CPU core written with it (the GPU core beside it is read too)."
        return "The crashing thread could not be determined."

    @property
    def gpu_facts(self) -> list[tuple[str, str]]:
        """What the GPU did (classification.gpu) as (label, value) rows, each value one line."""
        from coreanalyze.gpu.view import gpu_facts

        return [(label, one_line(value, 400)) for label, value in gpu_facts(self.classification.gpu)]

    @property
    def caught_text(self) -> str | None:
        """How a crash that left no core of its own was caught (report.capture)."""
        capture = self.report.capture
        if capture is None:
            return None
        how = {"run": "coreanalyze run", "guard": "the crash guard", "pytest": "pytest --coreanalyze", "notebook": "the notebook extension"}
        text = f"by {how.get(capture.by, capture.by)}"
        if capture.test:
            text += f" in test {capture.test}"
        facts = [f"pid {capture.pid}"] if capture.pid is not None else []
        if capture.died:
            facts.append(f"died of {capture.died}" if capture.died.startswith("SIG") else f"ended with {capture.died}")
        if capture.handler_ran:
            facts.append("its own signal handler ran first")
        if capture.problem:
            facts.append(capture.problem)
        return one_line(text + (f" ({'; '.join(facts)})" if facts else ""))

    @property
    def launched_from_text(self) -> str | None:
        lf = self.report.launched_from
        if lf is None:
            return None
        where = lf.file or UNKNOWN
        if lf.line is not None:
            where += f":{lf.line}"
        text = where
        if lf.function:
            text += f" in {lf.function}"
        # The Python line whose call is waiting on the work that crashed on another thread.
        return one_line(f"{text} (thread {lf.tid}, waiting on this work)")

    def register_lines(self, per_line: int = 3) -> list[str]:
        """Registers as aligned plain-text columns."""
        cells = [f"{name:<8} {value}" for name, value in self.registers]
        width = max((len(c) for c in cells), default=0)
        return [
            "  ".join(c.ljust(width) for c in cells[i : i + per_line]).rstrip()
            for i in range(0, len(cells), per_line)
        ]

    def fault_block(self) -> str:
        """The faulting instruction and the registers, as plain text."""
        parts = []
        if self.report.fault_instruction:
            parts.append(clean(self.report.fault_instruction).rstrip("\n"))
        if self.registers:
            parts.append("\n".join(self.register_lines()))
        return "\n\n".join(parts)

    @property
    def core_facts(self) -> list[tuple[str, str]]:
        """Label/value pairs for the core info block; missing values are left out."""
        core = self.report.core
        if core is None:
            return []
        sig = core.signal
        facts: list[tuple[str, Any]] = [
            ("core", core.path),
            ("pid", core.pid),
            ("executable", core.executable),
            ("analyzed with", core.executable_used if core.executable_used != core.executable else None),
            ("command line", core.cmdline),
            ("signal", self.signal_text),
            ("signal number", sig.number),
            ("si_code", sig.code),
            ("fault address", self.fault_address),
            ("sent by pid", sig.sender_pid),
            ("sender uid", sig.sender_uid),
            ("re-raised by", sig.reraised_by),
            ("errno", sig.errno),
            ("uid", core.uid),
            ("gid", core.gid),
            ("parent pid", core.ppid),
            ("architecture", core.arch),
            ("core size", f"{core.size:,} bytes" if core.size is not None else None),
        ]
        return [(label, one_line(value)) for label, value in facts if value is not None and value != ""]


def module_statuses(report: Report) -> dict[str, ModuleStatus]:
    """Module path -> status, to flag frames whose names come from the wrong file."""
    return {m.path: m.status for m in report.modules if m.path}


def modules_differ_text(count: int) -> str:
    return f"{count} module{'s differ' if count != 1 else ' differs'} from the local files"


def _split_modules(report: Report, modules: list[Module]) -> tuple[list[Module], list[Module]]:
    if len(modules) <= MODULES_SHOWN_IN_FULL:
        return modules, []
    crashed = report.crashed_thread
    in_crash = {f.module for f in crashed.frames if f.module} if crashed is not None else set()
    executable = report.core.executable if report.core is not None else None
    key, rest = [], []
    for m in modules:
        wanted = m.status.unreliable or m.path in in_crash or (executable and m.path == executable)
        (key if wanted else rest).append(m)
    return key, rest


def _module_counts(modules: list[Module]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in modules:
        counts[m.status] = counts.get(m.status, 0) + 1
    return counts


def build_view(report: Report, limits: ViewLimits | None = None) -> ReportView:
    limits = limits or ViewLimits()
    cls = report.classification
    module_status = module_statuses(report)
    gil_disabled = report.environment.get("python_gil") == "disabled"
    crashed_thread = report.crashed_thread
    crashed = None
    if crashed_thread is not None:
        crashed = ThreadView(
            crashed_thread,
            frame_rows(
                crashed_thread,
                head=limits.crashed_head,
                tail=limits.crashed_tail,
                culprit=cls.culprit,
                suspect=cls.suspect,
                module_status=module_status,
            ),
            gil_disabled,
        )
    other_threads = [t for t in report.threads if t is not crashed_thread]
    others = [
        ThreadView(t, frame_rows(t, head=limits.other_head, tail=limits.other_tail, module_status=module_status), gil_disabled)
        for t in other_threads[: limits.max_other_threads]
    ]
    registers: list[tuple[str, str]] = []
    if crashed_thread is not None:
        for name in sorted(crashed_thread.registers, key=_register_key):
            value = crashed_thread.registers[name]
            shown = hex_addr(value, 16) if isinstance(value, int) else one_line(value, 64)
            registers.append((one_line(name, 32), shown or UNKNOWN))
    modules = sorted(
        report.modules, key=lambda m: (m.status.rank, m.path or "")
    )
    key_modules, other_modules = _split_modules(report, modules)
    return ReportView(
        report=report,
        crashed=crashed,
        others=others,
        others_omitted=max(0, len(other_threads) - limits.max_other_threads),
        registers=registers,
        modules=modules,
        module_problems=[m for m in modules if m.status.unreliable],
        module_counts=_module_counts(report.modules),
        environment=[
            (str(k), one_line(pretty_value(v), limits.value_chars))
            for k, v in (report.environment or {}).items()
            if k != "packages"  # a table of its own
        ],
        packages=_package_rows((report.environment or {}).get("packages"), limits),
        evidence=[str(e) for e in cls.evidence or []],
        advice=[str(a) for a in cls.advice or []],
        warnings=[str(w) for w in report.warnings or []],
        key_modules=key_modules,
        other_modules=other_modules,
        limits=limits,
    )
