"""Symbols for frames gdb could not name or could not trust.

locate: separate debug files, found by build-id (sysroot, --debug-dir, /usr/lib/debug,
        .gnu_debuglink, the debuginfod client cache) and checked against the crashed build;
symbolizer: address -> function+offset, file:line, from per-build-id indexes cached on disk;
frames: the pass that names report frames and drops names taken from another build.
"""

from __future__ import annotations

from coreanalyze.symbols.frames import debug_dirs_for_gdb, gdb_debug_files, improve_frames
from coreanalyze.symbols.locate import find_debug_file
from coreanalyze.symbols.symbolizer import SymbolInfo, Symbolizer

__all__ = ["SymbolInfo", "Symbolizer", "debug_dirs_for_gdb", "find_debug_file", "gdb_debug_files", "improve_frames"]
