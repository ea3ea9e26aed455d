"""A core small enough to attach to a bug ticket: `coreanalyze shrink CORE -o SMALL`.

The shrunk core is a valid ELF core with the same program headers (split where only part of a
segment is kept) that holds all the notes, each thread's stack, every object's ELF header page,
the dynamic linker's link map, and the pages the analysis itself read (heard by the recorder
the shrink installs on the core's Process); `coreanalyze SMALL` gives the report of the full
core and `gdb PROGRAM SMALL` its backtraces.

    recorder.py  records the pages an analysis reads      keep.py    what gdb needs besides
    elfcore.py   the core's ELF header and notes           writer.py  writes the shrunk core
    marker.py    the note that says a core was shrunk      run.py     the whole command
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coreanalyze.shrink.run import ShrinkResult, shrink_core

__all__ = ["ShrinkResult", "shrink_core"]


def __getattr__(name: str) -> Any:
    # Imported on first use: every analysis imports shrink.marker; the shrinking itself is needed
    # only by `coreanalyze shrink` and --shrink.
    if name in __all__:
        import importlib

        return getattr(importlib.import_module("coreanalyze.shrink.run"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
