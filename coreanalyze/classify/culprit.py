"""Which frame to blame: skip the noise the way crash-signature systems do.

Above the culprit sit frames that say how the process died, not why: a signal handler that
re-raised the signal, raise/abort, logging, libc's string primitives, C++ terminate machinery.
Allocator internals are skipped too, but remembered: they are the evidence of a damaged heap.
The skip lists are the skip_*.txt files next to this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from coreanalyze.classify.frames import FrameView
from coreanalyze.classify.rules import NOISE_ROLES, RuleSet

NULL_PAGE_LIMIT = 64 * 1024


def is_bad_jump(v: FrameView) -> bool:
    """An unnamed top frame outside every library, or in the null page: there is no code there."""
    pc = v.frame.pc
    if v.python or pc is None or (v.name and v.name != "??"):
        return False
    return pc < NULL_PAGE_LIMIT or not (v.frame.module or v.module_path)


# A signal handler's frames sit above the trampoline; a handler deeper than this is not one we
# skip (it would be the crash itself, not a re-raise).
MAX_HANDLER_DEPTH = 40


@dataclass
class CulpritPick:
    view: FrameView | None = None
    start: int = 0  # position of the first frame after a re-raising signal handler
    handler_frames: list[FrameView] = field(default_factory=list)
    skipped: list[FrameView] = field(default_factory=list)  # noise and evidence above the culprit
    allocator_frames: list[FrameView] = field(default_factory=list)  # evidence above the culprit
    fallback: bool = False  # every frame was noise; the culprit is the least noisy one
    below: list[FrameView] = field(default_factory=list)  # significant native frames under it
    # The top frame when the thread jumped to an address outside all code (its pc is the
    # fault): a call through a null or corrupt function pointer. The caller is the culprit.
    bad_jump: FrameView | None = None

    @property
    def native(self) -> bool:
        return self.view is not None and not self.view.python


def _handler_end(views: Sequence[FrameView]) -> tuple[int, list[FrameView]]:
    """Position after the signal trampolines over which only handler noise sits: the topmost,
    and the next ones when a handler re-raised into another (a chain of handlers)."""
    end = 0
    for v in views[:MAX_HANDLER_DEPTH]:
        if v.python:
            break
        if v.role == "trampoline":
            above = views[end : v.position]
            # A handler that re-raised (faulthandler, TF's stack-trace handler) shows only
            # abort-path and logging frames; a crash handler (KCrash, a *FatalSignalHandler*)
            # may run anything (waitpid for a debugger) but names itself on the abort list.
            # Other code above with no crash-handling frame means the handler itself crashed.
            handler = all(a.role is not None for a in above) or any(a.role in ("abort", "logging") for a in above)
            if not handler or (end and not any(a.role == "abort" for a in above)):
                break  # deeper handlers count only when they raised the signal again
            end = v.position + 1
    return end, list(views[:end])


def pick_culprit(views: Sequence[FrameView], rules: RuleSet, window: int | None = None) -> CulpritPick:
    window = window or rules.settings.window
    pick = CulpritPick()
    if not views:
        return pick
    start, handler = _handler_end(views)
    pick.start, pick.handler_frames = start, handler
    native = [v for v in views[start:] if not v.python]
    # Outside every library tells only where the stack maps code to libraries (a firmware's
    # backtrace of bare addresses names none); the null page tells always.
    mapped = any(v.frame.module or v.module_path for v in native)
    if len(native) > 1 and is_bad_jump(native[0]) and (mapped or native[0].frame.pc < NULL_PAGE_LIMIT):
        pick.bad_jump = native[0]
        pick.skipped.append(native[0])
        native = native[1:]
    for pos, v in enumerate(native):
        if v.role in NOISE_ROLES:
            pick.skipped.append(v)
        elif not v.name and _above_abort_path(native, pos):
            # An unnamed frame over raise/abort or a signal trampoline is the dying machinery
            # (a handler printing the stack, a runtime's terminate hook), not the caller.
            pick.skipped.append(v)
        elif v.role in NOISE_ROLES:
            pick.skipped.append(v)
        elif v.role == "allocator":
            pick.skipped.append(v)
            pick.allocator_frames.append(v)
        elif v.role == "checked" and any(s.role == "logging" for s in pick.skipped):
            # The CHECK fired in a helper on its caller's bad argument: blame the caller.
            pick.skipped.append(v)
        else:
            pick.view = v
            break
    if pick.view is None and native:
        pick.fallback = True
        pick.skipped, pick.allocator_frames = [], []
        pick.view = _least_noisy(native)
        for v in native:
            if v is pick.view:
                break
            pick.skipped.append(v)
            if v.role == "allocator":
                pick.allocator_frames.append(v)
        if pick.view.role == "allocator":
            # Nothing but the allocator under raise/abort (a core's bt cut at _int_free): the
            # allocator stopped the process, as when it sits above a named caller.
            pick.allocator_frames.append(pick.view)
    if pick.view is None:
        python = [v for v in views if v.python]
        pick.view = python[0] if python else None
        return pick
    after = [v for v in native if v.position > pick.view.position and v.role not in NOISE_ROLES]
    pick.below = after[:window]
    return pick


ABORT_PATH_LOOKAHEAD = 8


def _above_abort_path(native: Sequence[FrameView], pos: int) -> bool:
    return any(w.role in ("abort", "trampoline") for w in native[pos + 1 : pos + 1 + ABORT_PATH_LOOKAHEAD])


def _least_noisy(native: Sequence[FrameView]) -> FrameView:
    # Roles in NOISE_ROLES are ordered from surely-irrelevant to plumbing; "runtime" frames
    # (the eval loop, main) and allocator frames are better culprits than raise() or memcpy.
    for tolerated in (("runtime",), ("allocator",), ("libc", "logging")):
        for v in native:
            if v.role in tolerated:
                return v
    return native[0]
