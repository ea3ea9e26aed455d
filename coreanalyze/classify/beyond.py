"""The op of a crash whose faulting frames are not the op's, read from the crashing thread's
stack memory (coreanalyze.process.stackscan) where the unwound frames stop short of any kernel:

- an exception a kernel threw and a handler caught, which then crashed (pybind11's translation
  calling into the interpreter without the GIL): the thrower's frames were unwound by the
  exception, but their return addresses still lie below the stack pointer, down to __cxa_throw;
  the exception object itself is the thread's caught exception (coreanalyze.classify.abortmsg);
- a stack overflow tens of thousands of frames deep: the op that started the recursion is at
  the far end of the stack, read there without unwinding the rest;
- code compiled at run time (coreanalyze.process.jitcode): no unwinder has its tables, so the frames of
  the runtime that ran it, and of the op, are read above it.

The data (scan sizes, the handlers that catch, the runtimes of JIT code) is beyond.toml; the ops
themselves are the [[op]] rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from coreanalyze import rulesdata
from coreanalyze.arch import stack_pointer
from coreanalyze.base.model import Frame, Report
from coreanalyze.base.vocabulary import FaultKind
from coreanalyze.classify.names import basename, normalize_function, short_name
from coreanalyze.classify.rules import RuleSet
from coreanalyze.process.process import Process
from coreanalyze.process.stackscan import StackWord, return_addresses, stack_end, stack_start
from coreanalyze.rulesdata.kinds import BEYOND_RULES

RULES_FILE = Path(__file__).resolve().parent / "beyond.toml"
CATCHER_DEPTH = 64  # frames from the top searched for an exception handler
NULL_PAGE_LIMIT = 64 * 1024
OUTERMOST_WINDOW = 32 * 1024  # bytes of an overflowed stack's far end read at a time
# CPython's C API by its names (PyErr_Occurred, _PyErr_SetObject, PyGILState_Ensure).
_CPYTHON_API = re.compile(r"^_?Py[A-Z][A-Za-z]*_?\w*$")


@dataclass(frozen=True)
class Catcher:
    function: re.Pattern[str]
    label: str
    interpreter: bool


@dataclass(frozen=True)
class JitRuntime:
    function: re.Pattern[str]
    label: str
    category: str


@dataclass(frozen=True)
class BeyondRules:
    dead_bytes: int
    outermost_bytes: int
    live_bytes: int
    catchers: tuple[Catcher, ...]
    throw_function: re.Pattern[str]
    machinery: re.Pattern[str]
    machinery_modules: re.Pattern[str]
    jit_runtimes: tuple[JitRuntime, ...]
    op_category: dict[str, str]
    generic: frozenset[str]


@lru_cache(maxsize=1)
def beyond_rules() -> BeyondRules:
    data = rulesdata.shipped(RULES_FILE, BEYOND_RULES)
    scan, throw, cats = data["scan"], data["throw"], dict(data["op_category"])
    generic = frozenset(cats.pop("generic", ()))
    return BeyondRules(
        dead_bytes=int(scan["dead_bytes"]),
        outermost_bytes=int(scan["outermost_bytes"]),
        live_bytes=int(scan["live_bytes"]),
        catchers=tuple(Catcher(re.compile(c["function"]), c["label"], bool(c.get("interpreter"))) for c in data.get("catcher", [])),
        throw_function=re.compile(throw["throw_function"]),
        machinery=re.compile(throw["machinery"]),
        machinery_modules=re.compile(throw["machinery_modules"]),
        jit_runtimes=tuple(JitRuntime(re.compile(j["function"]), j["label"], j["category"]) for j in data.get("jit_runtime", [])),
        op_category={str(k): str(v) for k, v in cats.items()},
        generic=generic,
    )


@dataclass
class OpBeyond:
    op: str
    kind: str  # the [[op]] rule's kind
    kernel: StackWord  # the op's frame, read from the stack
    sentence: str  # for the summary
    evidence: list[str] = field(default_factory=list)
    category: str | None = None  # the crash's category, where the op decides it
    detail: str | None = None  # the exception's type, for a caught exception
    words: list[StackWord] = field(default_factory=list)  # the scan the op was found in

    def kernel_frame(self) -> Frame:
        """The op's frame as the op-instance reader takes one."""
        w = self.kernel
        return Frame(index=-1, kind="native", pc=w.pc, function=w.function, raw_function=w.raw_function, module=w.module, offset=w.offset)


def _name(word: StackWord, rules: RuleSet) -> str:
    return rules.fold(normalize_function(word.function)) if word.function else ""


def _op_of(word: StackWord, rules: RuleSet) -> tuple[str, str] | None:
    name = _name(word, rules)
    if not name:
        return None
    for pattern in rules.ops:
        if pattern.kind == "custom":
            continue  # a custom op's library is named from the report's frames (classify.customop)
        op = pattern.op_of(name)
        if op:
            return op, pattern.kind
    return None


def _first_op(words: Iterable[StackWord], rules: RuleSet) -> tuple[StackWord, str, str] | None:
    for word in words:
        found = _op_of(word, rules)
        if found is not None:
            return word, found[0], found[1]
    return None


def _where(word: StackWord, rules: RuleSet) -> str:
    name = short_name(_name(word, rules)) or f"0x{word.pc:x}"
    return f"{name} ({basename(word.module)})" if word.module else name


def _category(kind: str, current: str, beyond: BeyondRules) -> str | None:
    wanted = beyond.op_category.get(kind)
    return wanted if wanted and current in beyond.generic else None


# --------------------------------------------------------------------------- a caught exception


def _catcher(report: Report, beyond: BeyondRules, rules: RuleSet) -> tuple[Catcher, Frame] | None:
    """The handler's frame where the exception was caught: the outermost of the first run of
    handler frames (pybind11's dispatcher, under its translators)."""
    thread = report.crashed_thread
    found: tuple[Catcher, Frame] | None = None
    for frame in thread.frames[:CATCHER_DEPTH] if thread else ():
        if frame.kind != "native":
            continue
        name = rules.fold(normalize_function(frame.function or frame.raw_function or ""))
        catcher = next((c for c in beyond.catchers if name and c.function.search(name)), None)
        if catcher is not None:
            found = catcher, frame
        elif found is not None:
            break
    return found


def _thrower_chain(words: list[StackWord], beyond: BeyondRules, rules: RuleSet) -> list[StackWord] | None:
    """The frames between the throw and the stack pointer, innermost first: those above the
    __cxa_throw nearest the stack pointer (the latest throw; deeper ones are older)."""
    throws = [i for i, w in enumerate(words) if beyond.throw_function.search(_name(w, rules))]
    if not throws:
        return None
    return words[throws[-1] + 1 :]


def _is_machinery(word: StackWord, beyond: BeyondRules, rules: RuleSet) -> bool:
    name = _name(word, rules)
    return (not name) or bool(beyond.machinery.search(name)) or bool(word.module and beyond.machinery_modules.search(word.module))


def _caught(report: Report, process: Process, names, rules: RuleSet, beyond: BeyondRules) -> OpBeyond | None:
    from coreanalyze.classify.abortmsg import find_handled_exception

    found = _catcher(report, beyond, rules)
    thread = report.crashed_thread
    sp = stack_pointer(thread.registers) if thread else None
    if found is None or sp is None:
        return None
    catcher, frame = found
    words = return_addresses(process, names, sp - beyond.dead_bytes, sp)
    chain = _thrower_chain(words, beyond, rules)
    if not chain:
        return None
    op = _first_op(chain, rules)
    if op is None:
        return None
    kernel, op_name, kind = op
    # The thrower called the last piece of throw machinery before the op (a throw helper, or
    # __cxa_throw itself); words between are stale ones of earlier calls.
    upto = chain.index(kernel)
    machinery = [i for i in range(upto) if _is_machinery(chain[i], beyond, rules)]
    thrower = next((w for w in chain[(machinery[-1] + 1 if machinery else 0) : upto]), kernel)
    thrown = find_handled_exception(process, process.thread_pointer(), process.read_mapped_file)
    what = f"a C++ exception {thrown.type or 'of unknown type'}" if thrown else "a C++ exception"
    if thrown and thrown.what:
        what += f' ("{thrown.what}")'
    by = f"by {_where(thrower, rules)} " if thrower is not kernel else ""
    frame_name = short_name(rules.fold(normalize_function(frame.function or frame.raw_function or "")))
    caught_at = f"{catcher.label} ({frame_name}" + (f" in {basename(frame.module)})" if frame.module else ")")
    sentence = f"It was handling {what} thrown {by}in op {op_name} ({_where(kernel, rules)}) and caught by {caught_at}"
    address = report.core.signal.address if report.core else None
    classification = report.classification
    # The fault is in the interpreter's own C API (PyErr_Occurred, _PyErr_SetObject, ...), called
    # by a catcher that enters the interpreter: whichever subsystem the frames were given.
    in_interpreter = bool(_CPYTHON_API.match(classification.culprit.function or ""))
    if catcher.interpreter and in_interpreter and address is not None and address < NULL_PAGE_LIMIT:
        sentence += f", which called into the interpreter without holding the GIL: the thread's interpreter state was NULL (fault at 0x{address:x})"
    evidence = [
        f"caught exception: {what}" + (f", the thread's caught exception at 0x{thrown.address:x}" if thrown else ""),
        f"caught by: frame #{frame.index} {frame_name} ({catcher.label})",
        f"thrown by: {_where(thrower, rules)}, return address 0x{thrower.pc:x} at 0x{thrower.at:x}, {sp - thrower.at} bytes below the stack pointer (frames the exception unwound)",
        f"op: {op_name} from {_where(kernel, rules)}, return address at 0x{kernel.at:x} below the stack pointer",
    ]
    return OpBeyond(op_name, kind, kernel, sentence + ".", evidence, _category(kind, classification.category, beyond),
                    thrown.type if thrown and thrown.type else None, chain)


# --------------------------------------------------------------------------- a stack overflow


def _outermost(report: Report, process: Process, names, rules: RuleSet, beyond: BeyondRules) -> OpBeyond | None:
    thread = report.crashed_thread
    start = stack_start(process, stack_pointer(thread.registers)) if thread else None
    end = stack_end(process, start) if start is not None else None
    if start is None or end is None:
        return None
    # From the far end inwards, a window at a time: the first op met is the one that started
    # it all (a kernel that ran others through a function call is further out than they are).
    low = max(start, end - beyond.outermost_bytes)
    op, words, top = None, [], end
    while op is None and top > low:
        bottom = max(low, top - OUTERMOST_WINDOW)
        window = return_addresses(process, names, bottom, top)
        words = window + words
        op = _first_op(reversed(window), rules)
        top = bottom
    if op is None:
        return None
    kernel, op_name, kind = op
    depth = end - start
    unwound = sum(1 for f in thread.frames if f.kind == "native")
    sentence = (f"The recursion started in op {op_name} ({_where(kernel, rules)}), at the far end of the "
                f"{depth // 1024} KiB stack, past the {unwound} frames unwound")
    evidence = [f"op at the bottom of the stack: {op_name} from {_where(kernel, rules)}, return address at 0x{kernel.at:x}, "
                f"{end - kernel.at} bytes from the stack's end (the stack holds {depth} bytes in use)"]
    return OpBeyond(op_name, kind, kernel, sentence + ".", evidence, _category(kind, report.classification.category, beyond), None, words)


# --------------------------------------------------------------------------- code compiled at run time


def _jit(report: Report, process: Process, names, rules: RuleSet, beyond: BeyondRules, jit) -> OpBeyond | None:
    thread = report.crashed_thread
    sp = stack_pointer(thread.registers) if thread else None
    if sp is None:
        return None
    words = return_addresses(process, names, sp, sp + beyond.live_bytes)
    frames = [rules.fold(normalize_function(f.function or "")) for f in thread.frames if f.kind == "native"]
    runtime = next((r for r in beyond.jit_runtimes for n in [*frames, *(_name(w, rules) for w in words)] if n and r.function.search(n)), None)
    op = _first_op(words, rules)
    if op is None:
        return None
    kernel, op_name, kind = op
    label = runtime.label if runtime else "a JIT compiler"
    function = jit.name or "an unnamed function"
    module = f" of module {jit.module}" if jit.module else ""
    registered = "registered with the debugger JIT interface" if jit.registered else "not registered with the debugger JIT interface"
    sentence = f"The faulting code was compiled at run time by {label}: {function}{module} ({registered}), run by op {op_name} ({_where(kernel, rules)})"
    evidence = [
        f"JIT code: pc in anonymous executable memory, function {function}{module}, in the ELF object at 0x{jit.object_address:x}"
        f" ({jit.object_size} bytes)" + (f", jit_code_entry at 0x{jit.entry:x}" if jit.entry is not None else ""),
        f"op: {op_name} from {_where(kernel, rules)}, return address at 0x{kernel.at:x} above the stack pointer",
    ]
    category = runtime.category if runtime else None
    return OpBeyond(op_name, kind, kernel, sentence + ".", evidence, category, None, words)


def may_find(report: Report, rules: RuleSet, jit=None) -> bool:
    """Whether the stack is worth reading: a crash of one of the shapes, and no op yet."""
    if report.crashed_thread is None or report.classification.op:
        return False
    return jit is not None or report.classification.fault_kind == FaultKind.STACK_OVERFLOW or _catcher(report, beyond_rules(), rules) is not None


def find_op_beyond(report: Report, process: Process, names, rules: RuleSet, jit=None) -> OpBeyond | None:
    """The op, when the report's frames name none and the thread's memory does. jit: the
    coreanalyze.process.jitcode.JitFunction the crashing pc lies in, if any."""
    classification = report.classification
    if report.crashed_thread is None or classification.op:
        return None
    beyond = beyond_rules()
    if jit is not None:
        return _jit(report, process, names, rules, beyond, jit)
    found = _caught(report, process, names, rules, beyond)
    if found is None and classification.fault_kind == FaultKind.STACK_OVERFLOW:
        found = _outermost(report, process, names, rules, beyond)
    return found


def apply(report: Report, found: OpBeyond) -> None:
    """The finding into the report's classification."""
    c = report.classification
    c.op = found.op
    if found.category:
        c.category = found.category
    if found.detail and not c.detail:
        c.detail = found.detail
    c.summary = f"{c.summary.rstrip()} {found.sentence}".strip()
    c.evidence.extend(found.evidence)
