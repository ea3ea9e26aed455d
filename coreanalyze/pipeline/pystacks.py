"""Python frames in every thread: run the CPython walker and place its frames among the native ones.

The walker (gdb_scripts/pywalker/, in-process or through gdb: a PythonWalker) reads the interpreter's state and
returns each Python thread's frames innermost first, each tagged with the index of the
`_PyEval_EvalFrameDefault` activation that runs it (0 = the innermost activation). Here every
native `_PyEval_EvalFrameDefault` frame, innermost first, takes the Python frames of one
activation, which appear just inside it — the interleaving `pystack --native` shows. When the
native stack names no evaluation loop (stripped interpreter, broken unwinding) the Python
frames still appear, at the top of the thread.

This module also labels threads (main thread, TensorFlow pools, tf.data, BLAS workers: rules as
data, the [[thread_role]] tables of classify/rules.toml), marks the GIL holder and, when the crashing thread ran no Python at all (a
TensorFlow worker), names the Python call site that was waiting on it ("launched from").
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coreanalyze.base import model
from coreanalyze.base.pyfiles import is_library_file
from coreanalyze.classify.rules import RuleSet, default_rules
from coreanalyze.python.pywalk import LOCALS_FRAMES, PythonThread, PythonWalker, WalkOptions, WalkResult

if TYPE_CHECKING:
    from coreanalyze.python.pyruntime import FoundRuntime

# Frames of the C function that runs one activation of the bytecode loop; `.cold` is the part
# of the same function the compiler moved away (the same activation, not a call).
EVAL_FRAME = re.compile(r"^_PyEval_EvalFrameDefault(?:\.cold(?:\.\d+)?)?$")

# Names of the interpreter's own files, where a stack enters Python.
INTERPRETER_FILES = ("python", "libpython")
MAX_SOURCE_BYTES = 16 << 20  # source files bigger than this are not read for one line
MAX_SOURCE_LINE = 300


# --------------------------------------------------------------------------- reading


@dataclass
class PythonStacks:
    python_version: str | None = None
    warnings: list[str] = field(default_factory=list)
    launched_from: model.LaunchedFrom | None = None
    walk: WalkResult | None = None


def walk_options(
    *,
    locals_tid: int | None = None,
    with_locals: bool = False,
    locals_frames: int = LOCALS_FRAMES,
    imports: bool = False,
    runtime: FoundRuntime | None = None,
) -> WalkOptions:
    """What the walker is asked: with imports, the top-level modules of sys.modules too;
    runtime: where _PyRuntime was located in the core, for a walker without the interpreter's
    symbols. Without locals, locals_tid and locals_frames are left out: the options of the walk
    started early and of the one asked for are then equal whichever thread crashed."""
    if not with_locals:
        locals_tid, locals_frames = None, LOCALS_FRAMES
    return WalkOptions(
        imports=imports, with_locals=with_locals, locals_frames=locals_frames, locals_tid=locals_tid,
        runtime=runtime.address if runtime is not None else None,
        version_hint=tuple(runtime.version[:2]) if runtime is not None else None,  # type: ignore[arg-type]
    )  # fmt: skip


# --------------------------------------------------------------------------- placing frames


def is_eval_frame(frame: model.Frame) -> bool:
    name = frame.raw_function or frame.function or ""
    return frame.kind == "native" and bool(EVAL_FRAME.match(name))


def interleave(native: list[model.Frame], python: list[model.Frame], groups: list[int]) -> list[model.Frame]:
    """Native frames with the Python frames (innermost first, groups[i] = activation of
    python[i]) placed just inside the evaluation-loop frame that runs them; indexes renumbered.

    Activations beyond the native evaluation frames (a truncated native stack) go to the
    end; with no evaluation frame at all (the interpreter's symbols are not here), the Python
    frames go where the stack enters the interpreter's code, or else below the last frame in a
    known file: a stack that never reaches the interpreter was cut short (a library not here
    to unwind through), and all of it ran under the Python frames.
    """
    by_group: dict[int, list[model.Frame]] = {}
    for frame, group in zip(python, groups):
        by_group.setdefault(group, []).append(frame)
    order = sorted(by_group)
    eval_count = sum(1 for f in native if is_eval_frame(f))
    out: list[model.Frame] = []
    if eval_count == 0:
        entry = next((i for i, f in enumerate(native) if _in_interpreter(f)), None)
        if entry is None:
            entry = next((i + 1 for i in range(len(native) - 1, -1, -1) if native[i].module), 0)
        out.extend(native[:entry])
        out.extend(python)
        out.extend(native[entry:])
    else:
        next_group = 0
        for frame in native:
            if is_eval_frame(frame) and next_group < len(order):
                out.extend(by_group[order[next_group]])
                next_group += 1
            out.append(frame)
        for g in order[next_group:]:
            out.extend(by_group[g])
    for i, frame in enumerate(out):
        frame.index = i
    return out


def _in_interpreter(frame: model.Frame) -> bool:
    """A native frame in the interpreter's own files (python3.X, libpython3.X)."""
    name = os.path.basename(frame.module or "")
    return frame.kind == "native" and name.startswith(INTERPRETER_FILES)


class SourceLines:
    """Lines of source files readable on this machine, for frames the core names.

    The path comes from the core, so only regular files are read (never a FIFO or device that
    could block or never end), and only up to a size limit.
    """

    def __init__(self) -> None:
        self._files: dict[str, list[str] | None] = {}

    def line(self, path: str | None, number: int | None) -> str | None:
        if not path or not number or number < 1 or not os.path.isabs(path) or "\0" in path:
            return None
        if path not in self._files:
            self._files[path] = self._read(path)
        lines = self._files[path]
        if lines is None or number > len(lines):
            return None
        text = lines[number - 1].strip()
        return text[:MAX_SOURCE_LINE] or None

    @staticmethod
    def _read(path: str) -> list[str] | None:
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
                return None
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except (OSError, ValueError):
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    return None  # swapped for something else after the check
                data = f.read(MAX_SOURCE_BYTES + 1)
        except OSError:
            return None
        return data.decode("utf-8", errors="replace").splitlines()


def _model_frames(thread: PythonThread, sources: SourceLines) -> list[model.Frame]:
    return [
        model.Frame(
            index=0,
            kind="python",
            function=f.function,
            file=f.file,
            line=f.line,
            source=sources.line(f.file, f.line),
            locals=f.locals,
        )
        for f in thread.frames
    ]


# --------------------------------------------------------------------------- thread roles


def _frame_names(thread: model.Thread) -> list[str]:
    out = []
    for f in thread.frames:
        if f.kind != "native":
            continue
        for name in (f.function, f.raw_function):
            if name:
                out.append(name)
    return out


def thread_role(thread: model.Thread, pid: int | None, has_python: bool, rules: RuleSet | None = None) -> str | None:
    """The thread's role by the rules' [[thread_role]] tables (first match wins)."""
    if pid is not None and thread.tid == pid:
        return "main"
    names = _frame_names(thread)
    for rule in (rules or default_rules()).thread_roles:
        if thread.name and any(p.search(thread.name) for p in rule.names):
            return rule.role
        if any(token in name for token in rule.frames for name in names):
            return rule.role
    return "python" if has_python else None


# --------------------------------------------------------------------------- launched from

# Python files of frameworks and of the standard library: the call site worth naming is the
# innermost frame outside them (the user's `model.fit(...)`, not TensorFlow's execute.py).
def _innermost_python_index(thread: model.Thread) -> int | None:
    return next((i for i, f in enumerate(thread.frames) if f.kind == "python"), None)


def _call_site(thread: model.Thread) -> model.Frame:
    """The innermost Python frame outside the frameworks, else the innermost Python frame."""
    python = [f for f in thread.frames if f.kind == "python"]
    return next((f for f in python if not is_library_file(f.file)), python[0])


def find_launched_from(threads: list[model.Thread], rules: RuleSet | None = None) -> model.LaunchedFrom | None:
    """The Python call site behind a crash in a thread that ran no Python.

    Among the threads with Python frames, the best candidate executes TensorFlow ops (its
    native frames below the Python ones are op execution), or else has released the GIL to
    wait for other threads; the main thread wins ties. Its call site is its innermost frame
    outside TensorFlow/Keras and the standard library. None when the crashing thread has
    Python frames of its own (its own stack is the answer) or when no thread qualifies.
    """
    crashed = next((t for t in threads if t.crashed), None)
    if crashed is None or any(f.kind == "python" for f in crashed.frames):
        return None
    rules = rules or default_rules()
    best: tuple[int, model.Thread, model.Frame] | None = None
    for thread in threads:
        if thread is crashed:
            continue
        first = _innermost_python_index(thread)
        if first is None:
            continue
        inner_native = [
            name for f in thread.frames[:first] if f.kind == "native" for name in (f.function, f.raw_function) if name
        ]
        # Only what the thread is doing below its innermost Python frame counts: a thread
        # running a Python callback for an op has op frames too, but outside its Python.
        score = 0
        if any(m in name for m in rules.op_execution_markers for name in inner_native):
            score += 4
        if thread.holds_gil is not True and any(m in name for m in rules.wait_markers for name in inner_native):
            score += 2
        if score and thread.role == "main":
            score += 1
        if score and (best is None or score > best[0]):
            best = (score, thread, _call_site(thread))
    if best is None:
        return None
    _, thread, frame = best
    return model.LaunchedFrom(tid=thread.tid, file=frame.file, line=frame.line, function=frame.function)


# --------------------------------------------------------------------------- entry point


def add_python_frames(
    walker: PythonWalker,
    threads: list[model.Thread],
    *,
    with_locals: bool = False,
    rules: RuleSet | None = None,
    imports: bool = False,
    runtime: FoundRuntime | None = None,
) -> PythonStacks:
    """Insert Python frames into `threads` (in place), set roles and GIL holders.

    walker: the in-process walker on the core, or gdb's (GdbDebugger). With with_locals, the innermost
    Python frames of the crashing thread carry their locals (read, never evaluated). rules: the
    rules in force (a user's --rules may add thread roles); the built-in ones by default.
    runtime: _PyRuntime as located in the core (coreanalyze.python.pyruntime) when the interpreter's
    files are not here.
    """
    crashed = next((t for t in threads if t.crashed), None)
    walk = walker.python_stacks(
        walk_options(
            with_locals=with_locals,
            locals_tid=crashed.tid if crashed is not None else None,
            imports=imports,
            runtime=runtime,
        )
    )
    stacks = PythonStacks(python_version=walk.python_version, warnings=list(walk.warnings), walk=walk)
    apply_walk(walk, threads, stacks.warnings, rules)
    stacks.launched_from = find_launched_from(threads, rules)
    return stacks


def apply_walk(walk: WalkResult, threads: list[model.Thread], warnings: list[str], rules: RuleSet | None = None) -> None:
    """Place a walk's frames into the threads; set holds_gil and role."""
    by_tid = {t.tid: t for t in threads}
    sources = SourceLines()
    python_tids: set[int] = set()
    for pythread in walk.threads:
        if pythread.tid is None:
            continue
        thread = by_tid.get(pythread.tid)
        if thread is None:
            if pythread.frames:
                warnings.append(
                    f"Python thread {pythread.tid} is not among the core's threads; its frames are not shown"
                )
            continue
        python_tids.add(pythread.tid)
        thread.holds_gil = pythread.holds_gil
        if not pythread.frames:
            continue
        # A second walk over the same threads must not duplicate frames.
        native = [f for f in thread.frames if f.kind != "python"]
        python = _model_frames(pythread, sources)
        thread.frames = interleave(native, python, [f.group for f in pythread.frames])
    for thread in threads:
        if thread.tid not in python_tids and walk.gil_known and thread.holds_gil is None:
            thread.holds_gil = False  # a thread without a thread state cannot hold the GIL
        if thread.role is None:
            thread.role = thread_role(thread, walk.pid, thread.tid in python_tids, rules)
