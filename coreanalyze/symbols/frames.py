"""Better native frames: names for what gdb left unnamed, no names from the wrong build.

After gdb has unwound the threads:

- a frame in a module whose file here is another build (status mismatch) loses gdb's name,
  which came from the wrong file, and is marked unreliable; it is named again only from a
  debug file of the crashed build (found by build-id);
- a frame in a module that is not here (status missing) is unreliable and named only from
  such a debug file;
- a frame gdb could not name gets the function (and file:line) from the module's symbol
  tables and debug file;
- a named frame without file:line gets it when a separate debug file was found;
- an unnamed frame of a stripped library gets the exported function it runs for
  (coreanalyze.symbols.entrypoints).

Also: the directories to give gdb as `debug-file-directory`, so that gdb itself reads every
debug file found here (it then unwinds and names inlined frames with them too).
"""

from __future__ import annotations

import bisect
import os
import zlib
from collections import Counter
from typing import Collection, Iterator, Sequence

from coreanalyze.base import model
from coreanalyze.base.vocabulary import ModuleStatus
from coreanalyze.corefile import PARSE_ERRORS, CoreNotes
from coreanalyze.symbols.bias import load_bias
from coreanalyze.symbols.entrypoints import mark_entry_points
from coreanalyze.symbols.paths import SYSTEM_DEBUG_DIR, build_id_relpath, valid_build_id
from coreanalyze.symbols.symbolizer import Symbolizer

UNNAMED = (None, "", "??")
# gdb's names for frames that are not functions of a file: keep them whatever the module.
GDB_SPECIAL_FRAMES = ("<signal handler called>", "<function called from gdb>")
# What reading a damaged file here can raise; one module's bad file must not stop the report.
READ_ERRORS = (*PARSE_ERRORS, zlib.error)
LINKS_DIR = "debug-links"


class _Modules:
    """Frame -> module row: by the frame's path, else by the address range holding its pc."""

    def __init__(self, modules: Sequence[model.Module]):
        self.by_path = {m.path: m for m in modules}
        ranged = sorted((m for m in modules if m.start is not None and m.end is not None), key=lambda m: m.start)
        self.ranged = ranged
        self.starts = [m.start for m in ranged]

    def find(self, frame: model.Frame) -> model.Module | None:
        if frame.module and frame.module in self.by_path:
            return self.by_path[frame.module]
        if frame.pc is None:
            return None
        i = bisect.bisect_right(self.starts, frame.pc) - 1
        if i >= 0 and self.ranged[i].start <= frame.pc < self.ranged[i].end:
            return self.ranged[i]
        return None


def improve_frames(
    report: model.Report,
    *,
    debug_dirs: Sequence[str] = (),
    sysroot: str | None = None,
    symbolizer: Symbolizer | None = None,
    notes: CoreNotes | None = None,
    lines_known: Collection[str] = (),
) -> list[str]:
    """Fill and correct the native frames of every thread in place; return warnings.

    notes: the core's notes, to read each module's program headers from the core (exact even
    when the file here is another build); without them the files here are used.
    lines_known: modules whose debug file the debugger read: a named frame it gave no line has
    none there (`_start`, assembly), and looking again would index the whole file's lines.
    """
    own = symbolizer is None
    if symbolizer is None:
        symbolizer = Symbolizer(debug_dirs, sysroot)
    modules = _Modules(report.modules)
    biases: dict[str, int | None] = {}
    dropped: Counter[str] = Counter()  # gdb names removed: they came from another build
    named_from_debug: Counter[str] = Counter()
    left_unnamed: Counter[str] = Counter()
    by_path = {m.path: m for m in report.modules}
    failed: set[str] = set()
    try:
        for thread in report.threads:
            previous: model.Frame | None = None
            for frame in thread.frames:
                module = modules.find(frame) if frame.kind == "native" and frame.pc is not None else None
                if module is not None and module.path not in failed:
                    exact = frame.index == 0 or (previous is not None and previous.function == "<signal handler called>")
                    try:
                        lines = module.path not in lines_known
                        _improve(frame, module, exact, lines, symbolizer, notes, biases, dropped, named_from_debug, left_unnamed)
                    except READ_ERRORS as e:
                        failed.add(module.path)
                        symbolizer.warn(f"symbols of {module.path} could not be read ({type(e).__name__}: {e})")
                previous = frame
            mark_entry_points(thread.frames)
        warnings = _summaries(by_path, dropped, named_from_debug, left_unnamed, symbolizer)
        # Including what was met earlier with this symbolizer (finding debug files for gdb).
        warnings.extend(symbolizer.take_warnings())
        return warnings
    finally:
        if own:
            symbolizer.close()


def _improve(
    frame: model.Frame,
    module: model.Module,
    exact: bool,
    lines: bool,
    symbolizer: Symbolizer,
    notes: CoreNotes | None,
    biases: dict[str, int | None],
    dropped: Counter[str],
    named_from_debug: Counter[str],
    left_unnamed: Counter[str],
) -> None:
    special = frame.function in GDB_SPECIAL_FRAMES
    if module.status.unreliable:
        frame.reliable = False
        if special:
            return
        if frame.function not in UNNAMED and module.status == ModuleStatus.MISMATCH:
            dropped[module.path] += 1
        # Whatever gdb found came from a file that is not the crashed build (or from nowhere).
        frame.function = frame.raw_function = frame.file = frame.line = frame.offset = frame.source = None
        need_name = need_line = True
    elif frame.function in UNNAMED:
        need_name = need_line = True
    elif lines and frame.line is None and not special and symbolizer.debug_file_for(module) is not None:
        need_name, need_line = False, True
    else:
        return

    if module.path not in biases:
        debug_file = symbolizer.debug_file_for(module)
        image = module.local_path if module.status.trusted_image else None
        biases[module.path] = load_bias(module, notes, files=(image, debug_file))
    bias = biases[module.path]
    info = None
    if bias is not None:
        address = frame.pc - bias
        # A caller's pc is the return address, just past its call: the call's line is at pc-1.
        info = symbolizer.symbolize_module(module, address if exact else address - 1)
    if info is None or (need_name and info.name is None):
        if module.status.unreliable:
            left_unnamed[module.path] += 1
        if info is None:
            return
    if need_name and info.name is not None:
        frame.function, frame.raw_function = info.name, info.raw_name
        frame.offset = frame.pc - bias - info.start
        if module.status.unreliable:
            named_from_debug[module.path] += 1
    if need_line and info.line is not None:
        frame.file, frame.line = info.file, info.line


def _summaries(by_path, dropped, named_from_debug, left_unnamed, symbolizer: Symbolizer) -> list[str]:
    out = []
    for path in dict.fromkeys([*dropped, *named_from_debug, *left_unnamed]):
        module = by_path.get(path)
        if module is not None and module.status == ModuleStatus.MISMATCH:
            what = (
                f"{path} here is not the build that crashed (build-id {module.local_build_id or 'none'} here, "
                f"{module.build_id or 'unknown'} in the core)"
            )
        else:
            what = f"{path} is not on this machine"
        parts = []
        if named_from_debug[path]:
            debug_file = symbolizer.debug_file_for(module) if module is not None else None
            source = f"its debug file {debug_file}" if debug_file else "the crashed build's debug file"
            parts.append(f"{named_from_debug[path]} frame(s) in it named from {source}")
        if left_unnamed[path]:
            parts.append(f"{left_unnamed[path]} frame(s) in it left unnamed rather than named from another build")
        if dropped[path] and not parts:
            parts.append(f"gdb's names for {dropped[path]} frame(s) in it were dropped")
        out.append(f"{what}: {'; '.join(parts)}" if parts else what)
    return out


def gdb_debug_files(modules: Sequence[model.Module], debug_file_for) -> Iterator[tuple[model.Module, str, str]]:
    """(module, build-id, separate debug file) of each module whose debug file gdb may read;
    debug_file_for(module) -> that file or None (Symbolizer.debug_file_for)."""
    for module in modules:
        build_id = valid_build_id(module.build_id)
        # gdb reads debug files only for the files it loaded: those must be the crashed build.
        if build_id is None or module.status != ModuleStatus.OK:
            continue
        debug_file = debug_file_for(module)
        if debug_file is not None:
            yield module, build_id, debug_file


def debug_dirs_for_gdb(
    report: model.Report,
    debug_dirs: Sequence[str] = (),
    *,
    sysroot: str | None = None,
    symbolizer: Symbolizer | None = None,
) -> list[str]:
    """Directories for gdb's `set debug-file-directory`, so gdb reads every debug file found here.

    The user's directories come first, then (when needed) a directory of `.build-id` links to
    debug files gdb would not look for where they were found (a debuginfod cache, a sysroot,
    a debuglink under a --debug-dir), then the system's /usr/lib/debug (gdb's own default,
    which setting the list would otherwise drop).
    """
    own = symbolizer is None
    if symbolizer is None:
        symbolizer = Symbolizer(debug_dirs, sysroot)
    try:
        dirs = [os.path.abspath(d) for d in debug_dirs if os.path.isdir(d)]
        searched = [*dirs, SYSTEM_DEBUG_DIR]
        links_root = symbolizer.cache_root / LINKS_DIR
        linked = False
        for _module, build_id, debug_file in gdb_debug_files(report.modules, symbolizer.debug_file_for):
            rel = build_id_relpath(build_id)
            if any(os.path.realpath(os.path.join(d, rel)) == os.path.realpath(debug_file) for d in searched):
                continue  # gdb finds it by build-id by itself
            if _link(links_root / rel, os.path.realpath(debug_file)):
                linked = True
        if linked:
            dirs.append(str(links_root))
        if os.path.isdir(SYSTEM_DEBUG_DIR):
            dirs.append(SYSTEM_DEBUG_DIR)
        return list(dict.fromkeys(dirs))
    finally:
        if own:
            symbolizer.close()


def _link(link, target: str) -> bool:
    """Make link point at target (atomically); False when the cache cannot hold links."""
    try:
        if os.path.islink(link) and os.readlink(link) == target:
            return True
        os.makedirs(os.path.dirname(link), mode=0o700, exist_ok=True)
        tmp = f"{link}.tmp{os.getpid()}"
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        os.symlink(target, tmp)
        os.replace(tmp, link)
        return True
    except OSError:
        return False
