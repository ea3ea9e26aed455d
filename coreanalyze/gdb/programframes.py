"""The program's frames named from what gdb said of them before, so that gdb need not read the
program's separate debug file again.

Debian's CPython 3.14 and 3.15 are built with LTO. Their -dbg packages' DWARF holds ~330
compilation units that point into each other (a link-time unit's functions refer to their
declarations in the source files' units), and gdb expands every unit a unit it needs points
to: naming one pc of the interpreter expands about a hundred. With the debug file, a small
crash's gdb spends ~0.3 s reading its index (even from gdb's index cache) and 0.6-1 s per
thread listing frames; without it, 0.2 s in all. What the debug file gives the report is, per
pc: the function, file and line of the frame and of the inlined calls gdb lists as frames of
their own. Those depend on nothing but the file and the pc.

So when the program (the interpreter) has a separate debug file, gdb first opens the core
without it (its unwind tables are in the program itself) and each of the program's frames gets
what gdb said of that pc with the debug file, kept per build-id in the user cache. A pc not kept
yet (a first analysis, a new crash site) has gdb open the core again the plain way, debug file
and all, and what it then says of the program's pcs is kept: the report is always the one the
plain way gives (tests/integration/test_newer_pythons.py compares them).

A frame gdb names by its pc alone is the innermost one, or one a signal interrupted; the others
are named by pc-1 (a return address), so the two are kept apart. What gdb lists for a frame is
kept with the frame next to it (its place in the program, or its library and function): between
two frames gdb may list frames of tail calls it derives from the debug info's call sites, and
where it did, nothing is kept. Frames of one pc following each other (recursion through one
call) are never taken from the cache: which of them are one frame's inlined calls is not known
without the debug file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from coreanalyze.base.atomicfile import write_atomically
from coreanalyze.base.cachedir import cache_dir
from coreanalyze.gdb.debugger import GdbDebugger
from coreanalyze.unwind.debugger import DebuggerFrame, Instruction

CACHE_PART = "program-frames-v1"
SIGNAL_TRAMPOLINE = "<signal handler called>"
MAX_ENTRIES = 20_000  # per build-id: one per distinct pc ever unwound, far more than enough


@dataclass
class KnownFrames:
    """What gdb said, with the program's debug file, of the program's pcs (one build-id)."""

    build_id: str
    # ProgramFrames.frame_key -> [[function, file, line, library], ...] ([]: a library's frame)
    frames: dict[str, list[list[Any]]] = field(default_factory=dict)
    instructions: dict[str, list[Any]] = field(default_factory=dict)  # "start:pc:length" -> [text, function, offset]
    changed: bool = False

    @classmethod
    def load(cls, build_id: str) -> KnownFrames:
        known = cls(build_id)
        try:
            data = json.loads(_path(build_id).read_text())
            known.frames = {k: v for k, v in data["frames"].items() if _is_group(v)}
            known.instructions = {k: v for k, v in data["instructions"].items() if _is_instruction(v)}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # none kept yet, or unreadable: the plain way fills it
        return known

    def save(self) -> None:
        if not self.changed:
            return
        try:
            path = _path(self.build_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, json.dumps({"frames": self.frames, "instructions": self.instructions}))
        except OSError:
            pass  # a cache that cannot be written costs the next analysis the plain way
        # Two analyses saving at once: the file is one of theirs, whole; the other's new pcs
        # cost a later analysis the plain way once more.

    def add(self, table: dict, key: str, value: list) -> None:
        if key not in table and len(table) < MAX_ENTRIES:
            table[key] = value
            self.changed = True


def _is_group(value: Any) -> bool:
    """[[function, file, line, library], ...] as kept (a cache file may have been damaged)."""
    return isinstance(value, list) and all(
        isinstance(e, list) and len(e) == 4 and all(x is None or isinstance(x, str) for x in (e[0], e[1], e[3]))
        and (e[2] is None or isinstance(e[2], int))
        for e in value
    )  # fmt: skip


def _is_instruction(value: Any) -> bool:
    """[text, function, offset] as kept ([None, None, None]: gdb could not disassemble there)."""
    return (
        isinstance(value, list) and len(value) == 3
        and all(x is None or isinstance(x, str) for x in value[:2]) and (value[2] is None or isinstance(value[2], int))
    )  # fmt: skip


def _path(build_id: str):
    return cache_dir() / CACHE_PART / f"{build_id}.json"


@dataclass
class ProgramFrames:
    """One analysis's use of the kept frames: the program's code [start, end) in the core."""

    start: int
    end: int
    known: KnownFrames
    physical: dict[str, list[DebuggerFrame]] = field(default_factory=dict)  # thread -> frames without the debug file
    missed: bool = False

    def holds(self, pc: int | None) -> bool:
        return pc is not None and self.start <= pc < self.end

    def frame_key(self, frames: list[DebuggerFrame], i: int) -> str | None:
        """The key of frame i of a listing without the program's debug file: a frame of the
        program, or one next to such a frame (a boundary, whose key says that gdb lists no frame
        between them). None where nothing can be kept: the next frame has the same pc
        (recursion through one call, see the module's notes)."""
        pc = frames[i].pc
        if self.holds(pc) and i + 1 < len(frames) and frames[i + 1].pc == pc:
            return None
        exact = i == 0 or frames[i - 1].function == SIGNAL_TRAMPOLINE
        inner = self.identity(frames[i - 1]) if i > 0 else "-"
        return f"{inner}>{self.identity(frames[i])}:{int(exact)}"

    def identity(self, frame: DebuggerFrame) -> str:
        """A frame's place: its offset in the program, else its library and function."""
        if self.holds(frame.pc):
            return f"+{frame.pc - self.start:x}"
        return f"{os.path.basename(frame.library or '?')}:{frame.function or '?'}"

    def involved(self, frames: list[DebuggerFrame], i: int) -> bool:
        """Frame i is the program's or follows one: what gdb lists there may depend on the
        program's debug info (its inlined calls; the frames of tail calls gdb derives from call
        sites between two frames)."""
        return self.holds(frames[i].pc) or (i > 0 and self.holds(frames[i - 1].pc))

    def instruction_key(self, pc: int, length: int) -> str:
        # Absolute: the text names the addresses of branch targets.
        return f"{self.start:x}:{pc:x}:{length}"


class KnownFramesSession(GdbDebugger):
    """A gdb that did not read the program's debug file, whose frames in the program are those
    kept; `missed` when one was not (the analysis then opens the core the plain way). Also
    what the stages after the opening use of a session: mi, console, source."""

    def __init__(self, session: Any, use: ProgramFrames) -> None:
        super().__init__(session)
        self.use = use

    def frames(self, thread: str, low: int, high: int) -> list[DebuggerFrame]:
        physical = super().frames(thread, low, high)
        if low != 0:  # frame by frame after an error: only the plain way knows
            self.use.missed = True
            return physical
        self.use.physical[thread] = physical
        out: list[DebuggerFrame] = []
        for i, frame in enumerate(physical):
            if not self.use.involved(physical, i):
                out.append(frame)
                continue
            key = self.use.frame_key(physical, i)
            group = self.use.known.frames.get(key) if key is not None else None
            if group is None or (self.use.holds(frame.pc) and not group):
                self.use.missed = True
                return physical
            if self.use.holds(frame.pc):
                out += [DebuggerFrame(frame.pc, *entry) for entry in group]
            else:
                out.append(frame)  # a library's frame next to one of the program: kept as []
        return out[: high - low + 1]

    def instruction_at(self, thread: str | None, pc: int, length: int) -> Instruction | None:
        if not self.use.holds(pc):
            return super().instruction_at(thread, pc, length)
        kept = self.use.known.instructions.get(self.use.instruction_key(pc, length))
        if kept is None:
            self.use.missed = True
            return super().instruction_at(thread, pc, length)
        return Instruction(*kept) if kept[0] is not None else None

    def mi(self, command: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self.session.mi(command, *args, **kwargs)

    def console(self, command: str, *args: Any, **kwargs: Any) -> str:
        return self.session.console(command, *args, **kwargs)

    def source(self, script_path: Any) -> str:
        return self.session.source(script_path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


class RecordingSession(KnownFramesSession):
    """The plain way's gdb (debug file read): its answers for the program's pcs are kept, each
    frame of the physical listing matched with the frames gdb lists for its pc."""

    def frames(self, thread: str, low: int, high: int) -> list[DebuggerFrame]:
        listed = GdbDebugger.frames(self, thread, low, high)
        physical = self.use.physical.get(thread)
        if low == 0 and physical:
            self._keep(physical, listed, truncated=len(listed) > high)
        return listed

    def _keep(self, physical: list[DebuggerFrame], listed: list[DebuggerFrame], truncated: bool) -> None:
        """Match each frame of the listing without the debug file with what gdb lists for it
        with it; stop at the first frame listed in between (a tail call's), or any doubt."""
        j = 0
        for i, frame in enumerate(physical):
            if j >= len(listed) or listed[j].pc != frame.pc:
                return  # the listings part here: nothing further is kept
            run = j + 1
            if self.use.holds(frame.pc):
                while run < len(listed) and listed[run].pc == frame.pc:
                    run += 1
                if run == len(listed) and truncated:
                    return  # the run may go on past the listing's end
            if self.use.involved(physical, i):
                key = self.use.frame_key(physical, i)
                if key is None:
                    return
                group = [[f.function, f.file, f.line, f.library] for f in listed[j:run]] if self.use.holds(frame.pc) else []
                self.use.known.add(self.use.known.frames, key, group)
            j = run

    def instruction_at(self, thread: str | None, pc: int, length: int) -> Instruction | None:
        found = GdbDebugger.instruction_at(self, thread, pc, length)
        if self.use.holds(pc):
            kept = [found.text, found.function, found.offset] if found is not None else [None, None, None]
            self.use.known.add(self.use.known.instructions, self.use.instruction_key(pc, length), kept)
        return found


class WithoutProgramDebugFile:
    """An OwnGdb whose cores open without the program's separate debug file (GdbSession.load's
    program_debug_file), its sessions KnownFramesSession."""

    def __init__(self, gdb: Any, use: ProgramFrames) -> None:
        self._gdb = gdb
        self.use = use

    def open_core(self, core: str, **kwargs: Any):
        return KnownFramesSession(self._gdb.open_core(core, program_debug_file=False, **kwargs), self.use)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gdb, name)


class Recording:
    """An OwnGdb opening cores the plain way, its sessions RecordingSession."""

    def __init__(self, gdb: Any, use: ProgramFrames) -> None:
        self._gdb = gdb
        self.use = use

    def open_core(self, core: str, **kwargs: Any):
        return RecordingSession(self._gdb.open_core(core, **kwargs), self.use)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gdb, name)
