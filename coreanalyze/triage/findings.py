"""What one parser found in the text, before the findings of all parsers are merged.

A parser knows only its own format: the threads and frames it read (with whatever thread
identity that format gives: kernel tid, pthread_t, the tool's own thread number), the
signal it names and how sure that is, the abort messages it saw, and warnings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from coreanalyze.base import model
from coreanalyze.base.demangle import demangle as demangle_name
from coreanalyze.triage import limits
from coreanalyze.triage.signals import number_of

# How sure a finding is of the signal, highest wins when findings are merged.
SIGNAL_WITH_ADDRESS = 4  # the tool read siginfo (pystack, sanitizer SEGV reports)
SIGNAL_NAMED = 3  # the tool that caught the signal named it (gdb, faulthandler, absl)
SIGNAL_FROM_SHELL = 2  # "Segmentation fault (core dumped)", "exit code 139"
SIGNAL_IMPLIED = 1  # a fatal log line or an allocator message means abort() -> SIGABRT

# How telling an abort message is, highest wins.
MESSAGE_CHECK_FAILURE = 5  # CHECK / LOG(FATAL) / protobuf FATAL
MESSAGE_ALLOCATOR = 4  # glibc malloc/free diagnostics, fortify, sanitizer errors
MESSAGE_TERMINATE = 3  # uncaught C++ exception, assert()
MESSAGE_FATAL_PYTHON = 2  # Py_FatalError
MESSAGE_FROM_FRAME_ARGS = 1  # recovered from malloc_printerr(str=...) in a gdb frame

SIGNAL_HANDLER_FRAME = "<signal handler called>"
# A fatal line's Windows source path at the start of a message (the rules read paths with '/').
_WINDOWS_SOURCE = re.compile(r"((?:[A-Za-z]:)?[\w.\\/-]{1,400}\.(?:cc|cpp|h|hpp|cu|c)):\d{1,9}\]")


@dataclass
class TextThread:
    """One thread's stack as one format printed it; frames innermost first."""

    frames: list[model.Frame] = field(default_factory=list)
    tid: int | None = None  # kernel thread id (gdb LWP, glog thread id, pystack tid)
    pthread: int | None = None  # pthread_t (faulthandler, gdb "Thread 0x...")
    number: int | None = None  # the tool's own thread number (gdb "Thread 3", ASan "T3")
    name: str | None = None
    crashed: bool = False
    holds_gil: bool | None = None
    dropped_frames: int = 0

    def add(self, frame: model.Frame) -> None:
        """Append a frame unless the thread already holds the most it may keep."""
        if len(self.frames) >= limits.MAX_FRAMES_PER_THREAD:
            self.dropped_frames += 1
            return
        frame.index = len(self.frames)
        self.frames.append(frame)

    @property
    def kinds(self) -> set[str]:
        return {f.kind for f in self.frames}


@dataclass
class Finding:
    format: str
    line: int  # index of the first line of the block, to keep the text's order
    threads: list[TextThread] = field(default_factory=list)
    signal: model.SignalInfo | None = None
    signal_strength: int = 0
    messages: list[tuple[int, str]] = field(default_factory=list)  # (MESSAGE_*, text)
    pid: int | None = None
    cmdline: str | None = None
    executable: str | None = None
    # pthread_t -> kernel tid, from gdb's "Thread 0x7f.. (LWP 123)"
    pthread_tids: dict[int, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # False for findings that only support others (a shell's "Segmentation fault" line).
    substantive: bool = True
    dropped_threads: int = 0
    # The report's own verdict, finer than a fault kind: a sanitizer's class and access
    # ("heap-buffer-overflow READ of size 4"), an uncaught exception's type.
    detail: str | None = None
    # What gdb printed besides the backtrace (p $_siginfo..si_addr, p $sp, info frame).
    fault_address: int | None = None
    stack_pointer: int | None = None
    # What a GPU text says the device did, or which allocation failed (gpu_*.py parsers).
    gpu: model.GpuFault | None = None
    oom: model.OomInfo | None = None
    # The signal a raise()/pthread_kill() frame shows in its arguments ("raise (sig=11)").
    raised_signal: str | None = None
    # Frameless evidence rules that matched (evidence.py's Hit), for the classification.
    evidence: list = field(default_factory=list)
    # Where the process ran, where the text's format says (a microcontroller's fault dump:
    # device_rules.py); None: a process of an operating system, as most texts are.
    platform: str | None = None

    def set_signal(self, name: str | None, strength: int, **fields) -> None:
        if name is None or strength < self.signal_strength:
            return
        self.signal = model.SignalInfo(number=number_of(name), name=name, **fields)
        self.signal_strength = strength

    def add_message(self, weight: int, text: str) -> None:
        text = " ".join(text.split())
        if "\\" in text[:400] and (m := _WINDOWS_SOURCE.match(text)) is not None:
            # "c:\tf_jenkins\...\cuda_driver.cc:94] ...": the rules read source paths with '/'.
            text = m.group(1).replace("\\", "/") + text[m.end(1) :]
        if text:
            self.messages.append((weight, text[: limits.MAX_MESSAGE_CHARS]))

    def add_thread(self, thread: TextThread) -> bool:
        if len(self.threads) >= limits.MAX_THREADS:
            self.dropped_threads += 1
            return False
        self.threads.append(thread)
        return True

    def crashed_thread(self) -> TextThread | None:
        return next((t for t in self.threads if t.crashed), None)


# --------------------------------------------------------------------------- frame helpers

_HEX = re.compile(r"0[xX][0-9a-fA-F]{1,16}\Z")


def hex_int(text: str | None) -> int | None:
    """'0x7f..' -> int; None for anything that is not a 64-bit hex number."""
    if not text or not _HEX.match(text):
        return None
    return int(text, 16)


def demangle(name: str | None) -> str | None:
    """People-readable C++ name; other names (and absurdly long ones) come back as they are."""
    return demangle_name(name, limits.MAX_DEMANGLE_CHARS)


def native_frame(
    function: str | None,
    *,
    pc: int | None = None,
    module: str | None = None,
    file: str | None = None,
    line: int | None = None,
    offset: int | None = None,
    inlined: bool = False,
) -> model.Frame:
    """A native frame; the name is demangled when it is mangled, '??' means no name."""
    function = function.strip() if function else None
    if function in ("??", "", "(unknown)", "???", "n/a", "<unknown>"):
        function = None
    shown = demangle(function)
    return model.Frame(
        index=0,
        kind="native",
        pc=pc,
        function=shown,
        raw_function=function if shown != function else None,
        module=module or None,
        file=file or None,
        line=line if line else None,
        offset=offset,
        inlined=inlined,
    )


def argument_list_start(function: str) -> int | None:
    """Where a name's trailing argument list starts ('f<a>(int, g(x))' -> 4), nested parentheses
    and '(anonymous namespace)' inside the name included; None when it has none."""
    if not function.endswith(")"):
        return None
    depth = 0
    for k in range(len(function) - 1, -1, -1):
        if function[k] == ")":
            depth += 1
        elif function[k] == "(":
            depth -= 1
            if depth == 0:
                return k
    return None


def python_frame(function: str | None, file: str | None, line: int | None) -> model.Frame:
    if file in ("???", ""):
        file = None
    return model.Frame(index=0, kind="python", function=function or None, file=file, line=line or None)


def signal_handler_frame() -> model.Frame:
    return model.Frame(index=0, kind="native", function=SIGNAL_HANDLER_FRAME)


# --------------------------------------------------------------------------- crashing thread

# Innermost functions of a thread that is waiting, not crashing (rules as data).
WAITING_FUNCTIONS = (
    "futex", "nanosleep", "clock_nanosleep", "pthread_cond_wait", "pthread_cond_timedwait",
    "pthread_cond_clockwait", "__pthread_clockjoin_ex", "pthread_join", "sem_wait",
    "sem_timedwait", "lll_lock_wait", "epoll_wait", "poll", "select", "pselect", "ppoll",
    "accept", "recv", "read", "__GI___libc_read", "syscall", "sleep", "usleep", "pause",
    "sigtimedwait", "sigwait", "nsync::", "WaitForWork", "EigenEnvironment::", "condition_variable",
)  # fmt: skip
WAITING_PYTHON_FUNCTIONS = ("wait", "sleep", "select", "poll", "_wait_for_tstate_lock", "get", "acquire")
ABORT_FUNCTIONS = frozenset(
    {"raise", "abort", "gsignal", "pthread_kill", "pthread_kill_implementation", "pthread_kill_internal"}
)


def base_name(function: str) -> str:
    """'__GI_raise' -> 'raise', 'ns::f(int)' -> 'f': for matching libc entry points."""
    name = function.split("(", 1)[0].rsplit("::", 1)[-1].lstrip("_")
    return name[3:].lstrip("_") if name.startswith("GI_") else name


def calls_abort(thread: TextThread, depth: int = 6) -> bool:
    return any(f.function and base_name(f.function) in ABORT_FUNCTIONS for f in thread.frames[:depth])


def reraised(thread: TextThread, depth: int = 8) -> bool:
    """raise()/pthread_kill() above a `<signal handler called>` frame: a handler (Python's
    faulthandler, absl's, a crash reporter) caught a signal and raised it again; the fault is
    below the handler frame, and the signal is the one it caught, not necessarily SIGABRT."""
    top = thread.frames[:depth]
    handler = next((k for k, f in enumerate(top) if f.function == SIGNAL_HANDLER_FRAME), None)
    return handler is not None and any(f.function and base_name(f.function) in ABORT_FUNCTIONS for f in top[:handler])


def _innermost_named(thread: TextThread, kind: str | None = None) -> str | None:
    for f in thread.frames:
        if f.function and (kind is None or f.kind == kind):
            return f.function
    return None


def _is_waiting(thread: TextThread) -> bool:
    native = _innermost_named(thread, "native")
    if native is not None:
        return any(w in native for w in WAITING_FUNCTIONS)
    python = _innermost_named(thread, "python")
    return python is not None and python in WAITING_PYTHON_FUNCTIONS


def guess_crashed(threads: list[TextThread]) -> tuple[TextThread | None, str]:
    """The thread that most likely crashed when the text does not say; with the reason."""
    if not threads:
        return None, ""
    if len(threads) == 1:
        return threads[0], "the only thread"
    for t in threads:
        if any(f.function == SIGNAL_HANDLER_FRAME for f in t.frames):
            return t, "it is inside a signal handler"
    for t in threads:
        if calls_abort(t):
            return t, "it called abort()"
    running = [t for t in threads if t.frames and not _is_waiting(t)]
    gil = [t for t in running if t.holds_gil]
    if len(gil) == 1:
        return gil[0], "it holds the GIL and is not waiting"
    if len(running) == 1:
        return running[0], "the only thread that is not waiting"
    gil = [t for t in threads if t.holds_gil]
    if len(gil) == 1:
        return gil[0], "it holds the GIL"
    first = running[0] if running else threads[0]
    return first, "the first thread that is not waiting" if running else "the first thread"


def lay_out_handler_frames(
    frames: list[model.Frame], handler_markers: tuple[str, ...], pc_frame: model.Frame | None = None
) -> list[model.Frame]:
    """A stack printed by an in-process crash handler, laid out as gdb shows it.

    The handler's own frames come first, then the signal trampoline (a frame without a
    name), then the interrupted code. gdb writes the trampoline as `<signal handler
    called>`; doing the same lets every later stage skip handler frames the same way.
    pc_frame: the faulting pc the handler printed apart from the stack (absl's 'PC:').
    """
    last_handler = -1
    for k, f in enumerate(frames):
        if f.function and any(h in f.function for h in handler_markers):
            last_handler = k
    out: list[model.Frame] = []
    rest = frames
    if last_handler >= 0:
        out = frames[: last_handler + 1]
        rest = frames[last_handler + 1 :]
        if rest and rest[0].function is None:  # the trampoline (__restore_rt)
            rest = rest[1:]
        out.append(signal_handler_frame())
    if pc_frame is not None and not (rest and rest[0].pc == pc_frame.pc):
        out.append(pc_frame)
    return out + rest
