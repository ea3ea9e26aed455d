"""The crashing thread's frames as the classifier sees them: normalized names, library classes
and skip roles, computed once."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Sequence

from coreanalyze.base.model import Frame, Module
from coreanalyze.base.vocabulary import FrameKind
from coreanalyze.classify.names import basename, normalize_function
from coreanalyze.classify.rules import RuleSet
from coreanalyze.symbols.entrypoints import entry_points

# Frames beyond this depth are never looked at: a runaway recursion has a hundred thousand,
# and the interesting ones are at the top.
MAX_FRAMES = 1024


@dataclass(frozen=True)
class FrameView:
    position: int  # place in the thread's frame list (0 = innermost)
    frame: Frame
    name: str  # normalized and folded function name, "" when unknown
    module_path: str | None  # the frame's library (resolved by pc when the frame lacks it)
    module_base: str  # its basename, "" when unknown
    module_class: str | None  # tensorflow | python | system | extension | foreign | None
    role: str | None  # skip list the name is on, if any
    python: bool
    # An unnamed frame of a stripped library: the normalized exported function it runs for
    # (Frame.entry_point), "" otherwise.
    entry_point: str = ""

    @property
    def index(self) -> int:
        return self.frame.index

    @property
    def label(self) -> str:
        """The frame as a person reads it: its function, else its library, else ??."""
        if self.name:
            return self.name
        if self.python:
            return "<python>"
        if self.entry_point:
            return f"?? under {self.entry_point}"
        if not self.module_base and self.frame.file:
            # A stack of file:line only: the source location is all there is to name.
            return f"{self.file_base}:{self.frame.line}" if self.frame.line is not None else self.file_base
        return self.module_base or "??"

    @property
    def file_base(self) -> str:
        return basename(self.frame.file)

    @property
    def anchor(self) -> str:
        """What names the frame's place: its function, else the entry point it runs for."""
        return self.name or self.entry_point


def same_run(a: FrameView, b: FrameView) -> bool:
    """Two native frames of one stripped library that tell nothing apart: unnamed frames under
    the same entry point (or under none), or the entry point and a frame it called."""
    if a.python or b.python or (a.name and b.name) or not a.module_path or a.module_path != b.module_path:
        return False
    return a.anchor == b.anchor


class ModuleIndex:
    """Library lookup by address, for frames whose library the backtrace did not name."""

    def __init__(self, modules: Sequence[Module]):
        ranged = sorted((m for m in modules if m.start is not None and m.end is not None and m.end > m.start), key=lambda m: m.start)
        self._modules = ranged
        self._starts = [m.start for m in ranged]

    def path_at(self, pc: int | None) -> str | None:
        if pc is None or not self._modules:
            return None
        i = bisect.bisect_right(self._starts, pc) - 1
        if i >= 0 and self._modules[i].start <= pc < self._modules[i].end:
            return self._modules[i].path
        return None


def build_views(frames: Sequence[Frame], modules: Sequence[Module], rules: RuleSet) -> list[FrameView]:
    ordered = sorted(frames[:MAX_FRAMES], key=lambda f: f.index)
    index = ModuleIndex(modules)
    # A pasted trace's frames were not marked by the symbols stage: the same rule, read here.
    entries = entry_points(ordered)
    views = []
    # Deep recursions repeat a handful of frames thousands of times: look each one up once.
    memo: dict[tuple[str | None, str | None, bool], tuple[str, str | None, str | None]] = {}
    for position, frame in enumerate(ordered):
        python = frame.kind == FrameKind.PYTHON
        raw = frame.function or (frame.raw_function if not python else None)
        module_path = None if python else (frame.module or index.path_at(frame.pc))
        key = (raw, module_path, python)
        if key not in memo:
            if python:
                name = (frame.function or "").strip()
            else:
                name = normalize_function(raw)
                name = rules.fold(name) if name else name
            module_class = rules.module_class(module_path)
            role = None if python else rules.skip_role(name)
            runtimes = rules.fault.runtime_libraries
            if role is None and not python and not name and module_path and runtimes is not None and runtimes.search(module_path):
                # An unnamed frame in libc / libstdc++ / libgcc (the unwinder, terminate's
                # helpers): the system's plumbing, never the culprit.
                role = "libc"
            memo[key] = (name, module_class, role)
        name, module_class, role = memo[key]
        std_files = rules.fault.std_library_files
        if role is None and not python and "::" not in name and frame.file and std_files is not None and std_files.search(frame.file):
            # Inlined standard-library code shows as a bare member name (size, operator->) at a
            # line of a C++ header; a qualified name there is the caller's own inlined call.
            role = "runtime"
        views.append(
            FrameView(
                position=position,
                frame=frame,
                name=name,
                module_path=module_path,
                module_base=basename(module_path),
                module_class=module_class,
                role=role,
                python=python,
                entry_point=normalize_function(frame.entry_point or entries[position] or "") if not name and not python else "",
            )
        )
    return views
