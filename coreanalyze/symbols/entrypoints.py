"""Unnamed frames of stripped libraries, placed under the exported function they run for.

Vendor libraries ship without a symbol table: libcuda, libcudnn, libcublas and ROCm's libraries
name only their exported entry points (.dynsym). A thread inside one shows a run of unnamed
frames under the one named frame where the call entered the library:

    #0 ?? (libcuda.so.1)  #1 ?? (libcuda.so.1)  ...  #5 cuCtxSynchronize_v2 (libcuda.so.1)

Each unnamed frame of such a run gets that entry point as Frame.entry_point; its function stays
unnamed (the code is not the entry point's own). A run with no named frame further out in the
same library (a thread the library started itself) gets none. Which libraries name only their
exports is data (gpu/host_calls.toml, [libraries]): in any other library an unnamed frame is a
gap in the symbols, not code run for the next named one.
"""

from __future__ import annotations

from typing import Sequence

from coreanalyze.base import model
from coreanalyze.symbols.exportsonly import exports_only

UNNAMED = (None, "", "??")
# Names gdb gives frames that are not functions of a library.
NOT_FUNCTIONS = ("<signal handler called>", "<function called from gdb>")


def _name(frame: model.Frame) -> str | None:
    name = frame.function or frame.raw_function
    return None if name in UNNAMED else name


def entry_points(frames: Sequence[model.Frame]) -> list[str | None]:
    """For each frame (innermost first), the entry point an unnamed native frame runs for."""
    out: list[str | None] = [None] * len(frames)
    entry: str | None = None
    module: str | None = None
    # Outermost first: the entry point is met before the frames it called.
    for position in range(len(frames) - 1, -1, -1):
        frame = frames[position]
        name = _name(frame)
        if frame.kind != "native" or not exports_only(frame.module) or name in NOT_FUNCTIONS:
            # Python code, an unknown place, or a signal frame: the frames above were not
            # called by the ones below it.
            entry = module = None
            continue
        if frame.module != module:
            entry, module = None, frame.module
        if name is not None:
            entry = name
        else:
            out[position] = entry
    return out


def mark_entry_points(frames: Sequence[model.Frame]) -> None:
    """Set entry_point on the unnamed native frames of a thread's runs, in place."""
    for frame, entry in zip(frames, entry_points(frames)):
        if entry is not None:
            frame.entry_point = entry
