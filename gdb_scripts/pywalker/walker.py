"""The walk itself: the interpreters of a runtime, their thread states, the GIL that governs them,
and each thread's frames (with their lines, and the locals of the innermost ones).

Every loop has a limit and a cycle check: a broken structure ends that thread's walk with the
frames read so far and a problem the caller turns into a warning.
"""

from __future__ import annotations

import struct

from .layout import Layout
from .linetable import line_from_locations, line_from_pep626
from .localvars import Locals
from .memory import BudgetExceeded, Memory
from .objects import Objects
from .target import ReadError

# Limits: a corrupt core may make any count or length absurd.
MAX_INTERPRETERS = 64
MAX_THREADS = 4096
MAX_FRAMES = 1024

# _PyInterpreterFrame.owner: from this value up, a frame is the interpreter's own and runs no
# code object (3.12-3.13: FRAME_OWNED_BY_CSTACK = 3, the shim of an evaluation-loop activation;
# 3.14+: FRAME_OWNED_BY_INTERPRETER = 3, the shim and the thread's base frame, and
# FRAME_OWNED_BY_CSTACK = 4).
FIRST_SHIM_OWNER = 3

# Stands in for the code object of a frame whose code object cannot be read.
UNREADABLE_CODE = {"name": "???", "qualname": "???", "filename": None, "firstlineno": None, "linetable": None}


class Walker:
    def __init__(self, mem: Memory, layout: Layout, runtime: int) -> None:
        self.mem = mem
        self.L = layout
        self.runtime = runtime
        self.obj = Objects(mem, layout)
        self.locals = Locals(mem, layout, self.obj)
        self.warnings: list[str] = []
        self._problems: list[str] = []  # what went wrong in the thread being walked

    # ---------------------------------------------------------------- interpreters/threads

    def interpreters(self) -> list[int]:
        out: list[int] = []
        seen: set[int] = set()
        interp = self.mem.ptr(self.runtime + self.L["runtime.interpreters_head"])
        while interp and interp not in seen:
            if len(out) >= MAX_INTERPRETERS:
                self.warnings.append(f"more than {MAX_INTERPRETERS} interpreters; the rest were skipped")
                break
            seen.add(interp)
            out.append(interp)
            interp = self._pointer(interp + self.L["interp.next"], f"interpreter list broken after 0x{interp:x}")
        return out

    def thread_states(self, interp: int) -> list[int]:
        out: list[int] = []
        seen: set[int] = set()
        broken = f"thread list of interpreter 0x{interp:x} broken"
        try:
            ts = self.mem.ptr(interp + self.L["interp.threads_head"])
        except ReadError as e:
            self.warnings.append(f"cannot read the thread list of interpreter 0x{interp:x}: {e}")
            return out
        while ts and ts not in seen:
            if len(out) >= MAX_THREADS:
                self.warnings.append(f"more than {MAX_THREADS} Python threads; the rest were skipped")
                break
            seen.add(ts)
            owner = self._pointer(ts + self.L["tstate.interp"], broken)
            if owner is None:
                break
            if owner != interp:
                self.warnings.append(f"thread state 0x{ts:x} does not belong to its interpreter; list ends there")
                break
            out.append(ts)
            ts = self._pointer(ts + self.L["tstate.next"], broken)
        return out

    def _pointer(self, address: int, broken: str) -> int | None:
        """The pointer at address; None, and a warning that `broken` (a list) ends here, when it
        cannot be read: the list read so far is kept."""
        try:
            return self.mem.ptr(address)
        except ReadError as e:
            self.warnings.append(f"{broken}: {e}")
            return None

    def gil_range(self, interp: int) -> tuple[int, int] | None:
        """Where the GIL that governs this interpreter lies (3.12+: it hangs off the interpreter),
        so that a thread waiting on a lock inside it is known to wait for the GIL."""
        L = self.L
        if L.shape["gil"] != "interp" or not L.has("gil.size"):
            return None
        try:
            gil = self.mem.ptr(interp + L["interp.gil_ptr"])
        except ReadError:
            return None
        return (gil, gil + L["gil.size"]) if gil else None

    def gil_enabled(self, interp: int) -> bool | None:
        """Whether a GIL governs this interpreter: always in a default build; in a free-threaded
        one only while something turned it on (PYTHON_GIL=1, an extension module that does not
        declare itself free-threading safe). None when that cannot be read."""
        L = self.L
        if not L.free_threaded:
            return True
        if not L.has("gil.enabled"):
            return None
        try:
            gil = self.mem.ptr(interp + L["interp.gil_ptr"])
            # A count of the requests that enabled it (INT_MAX: for good); 0 when disabled.
            return self.mem.i32(gil + L["gil.enabled"]) != 0 if gil else None
        except ReadError:
            return None

    def gil(self, interp: int) -> tuple[bool | None, int | None]:
        """(locked, last holder) of the GIL that governs this interpreter; (None, None) where
        unknown, or where no GIL governs it (a free-threaded build running without one: no
        thread holds it, and its locked/last holder words are stale)."""
        L = self.L
        try:
            if L.shape["gil"] == "runtime":
                locked = self.mem.i32(self.runtime + L["runtime.gil_locked"])
                holder = self.mem.ptr(self.runtime + L["runtime.gil_holder"])
            else:
                if self.gil_enabled(interp) is not True:
                    return None, None
                gil = self.mem.ptr(interp + L["interp.gil_ptr"])
                locked = self.mem.i32(gil + L["gil.locked"])
                holder = self.mem.ptr(gil + L["gil.holder"])
        except (ReadError, KeyError):
            return None, None
        return bool(locked), holder

    # ---------------------------------------------------------------- frames

    def frames(self, tstate: int, locals_frames: int) -> tuple[list[dict], str | None]:
        """Frames of one thread, innermost first; a warning when the chain broke."""
        out: list[dict] = []
        self._problems: list[str] = []
        try:
            if self.L.shape["frames"] == "pyframe":
                self._pyframes(tstate, out, locals_frames)
            else:
                self._iframes(tstate, out, locals_frames)
        except BudgetExceeded:
            raise
        except (ReadError, KeyError, ValueError, struct.error, OverflowError, IndexError) as e:
            self._problems.append(f"frames end early: {e}")
        if len(out) >= MAX_FRAMES:
            self._problems.append(f"stopped after {MAX_FRAMES} frames")
        return out, "; ".join(self._problems) or None

    def _code_info(self, frame: int, code: int) -> dict | None:
        """The code object's names and line table; None (and a note) when it is unreadable.

        The chain itself may still be sound, so the walk goes on to the caller's frame.
        """
        try:
            return self.obj.code(code)
        except ReadError as e:
            self._problems.append(f"frame 0x{frame:x} has an unreadable code object ({e})")
            return None

    def _current_frame(self, tstate: int) -> int:
        L = self.L
        how = L.shape["current"]
        if how == "frame":
            return self.mem.ptr(tstate + L["tstate.frame"])
        if how == "cframe":
            cframe = self.mem.ptr(tstate + L["tstate.cframe"])
            return self.mem.ptr(cframe + L["cframe.current_frame"]) if cframe else 0
        return self.mem.ptr(tstate + L["tstate.current_frame"])

    def _pyframes(self, tstate: int, out: list[dict], locals_frames: int) -> None:
        L = self.L
        frame = self._current_frame(tstate)
        seen: set[int] = set()
        while frame and len(out) < MAX_FRAMES:
            if frame in seen:
                raise ValueError(f"frame chain loops at 0x{frame:x}")
            seen.add(frame)
            code = self.mem.ptr(frame + L["pyframe.code"])
            info = self._code_info(frame, code)
            if info is None:
                out.append(self._frame_dict(UNREADABLE_CODE, frame, None, group=len(out), entry=True))
                frame = self.mem.ptr(frame + L["pyframe.back"])
                continue
            lasti = self.mem.i32(frame + L["pyframe.lasti"])
            line = None
            if info["linetable"] is not None:
                line = line_from_pep626(info["linetable"], info["firstlineno"], lasti * 2)
            entry = self._frame_dict(info, frame, line, group=len(out), entry=True)
            if len(out) < locals_frames:
                entry["locals"] = self.locals.of_310(frame, code)
            out.append(entry)
            frame = self.mem.ptr(frame + L["pyframe.back"])

    def _iframes(self, tstate: int, out: list[dict], locals_frames: int) -> None:
        L = self.L
        frame = self._current_frame(tstate)
        seen: set[int] = set()
        group = 0
        entry_kind = L.shape["entry"]
        while frame and len(out) < MAX_FRAMES:
            if frame in seen:
                raise ValueError(f"frame chain loops at 0x{frame:x}")
            seen.add(frame)
            previous = self.mem.ptr(frame + L["iframe.previous"])
            owner = self.mem.u8(frame + L["iframe.owner"])
            if entry_kind == "cstack" and owner >= FIRST_SHIM_OWNER:
                # The shim frame an activation of _PyEval_EvalFrameDefault pushes first: the
                # frames after it belong to the next activation out.
                if out and out[-1]["group"] == group:
                    out[-1]["entry"] = True
                    group += 1
                frame = previous
                continue
            code = self.L.reference(self.mem.ptr(frame + L["iframe.code"]))
            is_entry = False
            if entry_kind == "is_entry":
                is_entry = bool(self.mem.u8(frame + L["iframe.is_entry"]))
            info = self._code_info(frame, code)
            if info is None:
                out.append(self._frame_dict(UNREADABLE_CODE, frame, None, group=group, entry=is_entry))
                group += is_entry
                frame = previous
                continue
            instr = self.mem.ptr(frame + L["iframe.instr"])
            unit = (instr - self._bytecode(frame, code)) // 2
            line = None
            if info["linetable"] is not None and -1 <= unit < 1 << 24:
                line = line_from_locations(info["linetable"], info["firstlineno"], unit)
            entry = self._frame_dict(info, frame, line, group=group, entry=is_entry)
            if len(out) < locals_frames:
                entry["locals"] = self.locals.of_311(frame, code)
            out.append(entry)
            if is_entry:
                group += 1
            frame = previous

    def _bytecode(self, frame: int, code: int) -> int:
        """Where the bytecode the frame runs starts: the code object's own, or in a
        free-threaded 3.14+ build the thread's copy of it (co_tlbc->entries[tlbc_index])."""
        L = self.L
        if L.has("code.tlbc") and L.has("iframe.tlbc_index"):
            index = self.mem.i32(frame + L["iframe.tlbc_index"])
            if index > 0:
                copies = self.mem.ptr(code + L["code.tlbc"])
                if not 0 < index < self.mem.i64(copies):
                    raise ReadError(f"frame 0x{frame:x}: bytecode copy {index} of a code object that has fewer")
                return self.mem.ptr(copies + 8 + 8 * index)
        return code + L["code.code_adaptive"]

    def _frame_dict(self, info: dict, frame: int, line: int | None, group: int, entry: bool) -> dict:
        return {
            "function": info["qualname"],
            "name": info["name"],
            "file": info["filename"],
            "line": line,
            "firstlineno": info["firstlineno"],
            "frame": frame,
            "group": group,
            "entry": entry,
        }
