"""The walker's one entry point: walk() reads every Python thread's frames through a Target and
answers one JSON-able document (version, layout, threads, warnings; sys.modules when asked)."""

from __future__ import annotations

from .imports import Imports
from .layout import choose_layout
from .lwps import assign_lwps
from .memory import BudgetExceeded, Memory
from .tables import TABLES
from .target import ReadError, Target
from .version import dotted
from .walker import Walker

FORMAT = "coreanalyze-pystacks/1"
DEFAULT_LOCALS_FRAMES = 5


def walk(target: Target, options: dict) -> dict:
    """The walker's document: version, layout, every Python thread's frames, warnings."""
    result: dict = {"format": FORMAT, "python_version": None, "layout": None, "warnings": [], "threads": []}
    warnings: list[str] = result["warnings"]
    result["pid"] = target.pid() or None
    mem = Memory(target)
    # A runtime found by the host (coreanalyze.python.pyruntime scans the core when the interpreter's
    # files are not here) wins over the symbol: a symbol then comes from some other build.
    runtime = options.get("runtime") or target.symbol_address("_PyRuntime")
    if runtime is None:
        warnings.append("no _PyRuntime symbol: not a CPython 3.10+ process, or its libpython is missing")
        return result
    try:
        layout = choose_layout(
            target, mem, runtime, options.get("version_hint"), warnings, prefer_hint=bool(options.get("runtime"))
        )
    except ReadError as e:
        warnings.append(f"cannot read the interpreter's runtime state: {e}")
        return result
    if layout is None:
        return result
    result["python_version"] = dotted(layout.version)
    result["layout"] = layout.source
    result["free_threaded"] = layout.free_threaded
    if options.get("show_layout"):
        result["offsets"] = layout.off
        result["table"] = TABLES.get(layout.minor, {})
        result["dwarf"] = layout.dwarf
        result["debug_offsets"] = layout.debug_offsets
        return result
    walker = Walker(mem, layout, runtime)
    lwps = target.thread_lwps()
    locals_tid = options.get("locals_tid")
    locals_frames = options.get("locals_frames", DEFAULT_LOCALS_FRAMES) if options.get("locals") else 0
    threads: list[dict] = []
    interpreters: list[int] = []
    try:
        interpreters = walker.interpreters()
        if not interpreters:
            warnings.append("the interpreter list is empty (the process had not started Python or had finalized it)")
        gil_range = walker.gil_range(interpreters[0]) if interpreters else None
        if gil_range is not None:
            result["gil"] = {"address": gil_range[0], "size": gil_range[1] - gil_range[0]}
        if interpreters:
            result["gil_enabled"] = walker.gil_enabled(interpreters[0])
        for interp in interpreters:
            locked, holder = walker.gil(interp)
            try:
                interp_id = walker.mem.i64(interp + layout["interp.id"])
            except (ReadError, KeyError):
                interp_id = None
            for ts in walker.thread_states(interp):
                thread = {"tstate": ts, "interpreter": interp_id, "tid": None, "thread_id": None, "frames": []}
                try:
                    thread["thread_id"] = walker.mem.u64(ts + layout["tstate.thread_id"])
                    if layout.has("tstate.native_thread_id"):
                        thread["tid"] = walker.mem.u64(ts + layout["tstate.native_thread_id"]) or None
                except ReadError as e:
                    warnings.append(f"thread state 0x{ts:x}: {e}")
                thread["holds_gil"] = None if locked is None else bool(locked and holder == ts)
                threads.append(thread)
        assign_lwps(mem, threads, set(lwps), warnings)
        for thread in threads:
            wants_locals = locals_frames and (locals_tid is None or thread["tid"] == locals_tid)
            frames, problem = walker.frames(thread["tstate"], locals_frames if wants_locals else 0)
            thread["frames"] = frames
            if problem:
                warnings.append(f"thread {thread['tid'] or '?'}: {problem}")
    except BudgetExceeded as e:
        warnings.append(str(e))
    except ReadError as e:
        warnings.append(f"interpreter state unreadable: {e}")
    result["threads"] = threads
    if options.get("imports") and interpreters:
        # After the frames: what the process had imported must never cost it its stacks.
        try:
            result["imports"] = Imports(walker).top_level(interpreters[0])
        except (ReadError, BudgetExceeded) as e:
            warnings.append(f"sys.modules unreadable: {e}")
    warnings.extend(walker.warnings)
    gil_holders = [t["tid"] for t in threads if t.get("holds_gil")]
    result["gil_holder"] = gil_holders[0] if gil_holders else None
    return result
