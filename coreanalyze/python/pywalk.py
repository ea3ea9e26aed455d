"""What the CPython walker (gdb_scripts/pywalker/) is asked (WalkOptions) and what it reports,
typed: each Python thread's frames, the interpreter's version, the imported top-level modules.
The walker runs in-process on the Process (coreanalyze.python.coretarget.InProcessWalker) or, through
its gdb command, inside gdb (coreanalyze.gdb.debugger.GdbDebugger); either answer is checked here
and handed on as these dataclasses, never as the debugger's JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

RESULT_FORMAT = "coreanalyze-pystacks/1"
LOCALS_FRAMES = 5  # innermost Python frames whose locals are read with with_locals


@dataclass(frozen=True)
class WalkOptions:
    """What the walker is asked for."""

    imports: bool = False  # also the top-level modules of sys.modules (WalkResult.imports)
    with_locals: bool = False  # the locals of the innermost frames (read, never evaluated)
    locals_frames: int = LOCALS_FRAMES  # how many innermost frames, with with_locals
    locals_tid: int | None = None  # only this thread's, with with_locals (None: every thread's)
    # Where _PyRuntime was located in the core (coreanalyze.python.pyruntime), for a walker without
    # the interpreter's symbols, and the (major, minor) version found there.
    runtime: int | None = None
    version_hint: tuple[int, int] | None = None
    show_layout: bool = False  # the layout's offsets instead of the threads (a tool's question)


class PythonWalker(Protocol):
    """Anything that walks a core's Python threads: in-process, or gdb's command."""

    def python_stacks(self, options: WalkOptions) -> WalkResult:
        """The walker's answer for this core, typed."""


@dataclass
class PythonFrame:
    function: str
    file: str | None
    line: int | None
    group: int  # index of the _PyEval_EvalFrameDefault activation running it, innermost = 0
    name: str | None = None  # co_name (function is co_qualname where the version has it)
    locals: dict[str, str] | None = None


@dataclass
class PythonThread:
    tid: int | None
    holds_gil: bool | None
    frames: list[PythonFrame] = field(default_factory=list)


@dataclass
class WalkResult:
    """What the CPython walker reported, checked and typed."""

    python_version: str | None = None
    layout: str | None = None  # "debug-offsets" | "dwarf" | "table"
    pid: int | None = None
    threads: list[PythonThread] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Top-level modules of sys.modules: {"name", "file", "version"} (asked for with imports=True)
    imports: list[dict[str, str | None]] = field(default_factory=list)
    # [start, end) of the main interpreter's GIL structure (3.12+), when the walker read it
    gil_range: tuple[int, int] | None = None
    free_threaded: bool = False  # a free-threaded ("t", Py_GIL_DISABLED) build
    # Whether a GIL governed the main interpreter: a default build's always does, a free-threaded
    # build's only when something turned it on; None when unread
    gil_enabled: bool | None = None

    @property
    def gil_known(self) -> bool:
        return any(t.holds_gil is not None for t in self.threads)

    def build_environment(self) -> dict[str, str]:
        """environment.python_build and .python_gil of a free-threaded build: said outright, since
        its threads then hold no GIL (holds_gil null) and a reader must not take that for unknown.
        A default build says nothing: its GIL is always on."""
        if not self.free_threaded:
            return {}
        out = {"python_build": "free-threaded"}
        if self.gil_enabled is not None:
            out["python_gil"] = "enabled" if self.gil_enabled else "disabled"
        return out


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value: Any, limit: int = 4096) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def parse_walk_result(payload: dict[str, Any]) -> WalkResult:
    """The walker's MI payload (its gdb command's answer) -> WalkResult; anything malformed is
    dropped with a warning."""
    if payload.get("format") != RESULT_FORMAT or not isinstance(payload.get("json"), str):
        return WalkResult(warnings=["the Python frame walker answered in an unknown format"])
    try:
        doc = json.loads(payload["json"])
    except ValueError as e:
        return WalkResult(warnings=[f"the Python frame walker's answer is not JSON: {e}"])
    return parse_walk_document(doc)


def parse_walk_document(doc: Any) -> WalkResult:
    """The walker's document (pywalker.walk) -> WalkResult, checked and typed."""
    if not isinstance(doc, dict):
        return WalkResult(warnings=["the Python frame walker's answer is not an object"])
    result = WalkResult(
        python_version=_str_or_none(doc.get("python_version"), 32),
        layout=_str_or_none(doc.get("layout"), 32),
        pid=_int_or_none(doc.get("pid")),
        warnings=[w[:1000] for w in doc.get("warnings") or [] if isinstance(w, str)],
        free_threaded=doc.get("free_threaded") is True,
        gil_enabled=doc.get("gil_enabled") if isinstance(doc.get("gil_enabled"), bool) else None,
    )
    gil = doc.get("gil")
    if isinstance(gil, dict):
        address, size = _int_or_none(gil.get("address")), _int_or_none(gil.get("size"))
        if address and size and 0 < size <= 4096:
            result.gil_range = (address, address + size)
    for raw in doc.get("imports") or []:
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            result.imports.append(
                {"name": raw["name"][:200], "file": _str_or_none(raw.get("file")), "version": _str_or_none(raw.get("version"), 64)}
            )
    for raw in doc.get("threads") or []:
        if not isinstance(raw, dict):
            continue
        holds = raw.get("holds_gil")
        thread = PythonThread(tid=_int_or_none(raw.get("tid")), holds_gil=holds if isinstance(holds, bool) else None)
        for f in raw.get("frames") or []:
            if not isinstance(f, dict):
                continue
            group = _int_or_none(f.get("group"))
            locals_ = f.get("locals")
            if isinstance(locals_, dict):
                locals_ = {str(k)[:200]: str(v)[:400] for k, v in locals_.items()}
            else:
                locals_ = None
            thread.frames.append(
                PythonFrame(
                    function=_str_or_none(f.get("function"), 1024) or "???",
                    file=_str_or_none(f.get("file")),
                    line=_int_or_none(f.get("line")),
                    group=group if group is not None and group >= 0 else 0,
                    name=_str_or_none(f.get("name"), 1024),
                    locals=locals_,
                )
            )
        result.threads.append(thread)
    return result
