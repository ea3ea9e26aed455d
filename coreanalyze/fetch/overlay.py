"""A sysroot made of links: every mapped file at its own path, fetched ones in their place.

gdb and the module table take one sysroot; with fetched libraries the analysis points both at
a temporary directory where each path of the core links to the file that stands for it here
(the user's own --sysroot file, the local one, or the verified fetched copy). gdb looks
libraries up by the loader's names (link_map's l_name: `/lib/x86_64-linux-gnu/libc.so.6` for
`/usr/lib/...`, `/lib64/ld-linux-x86-64.so.2`), so those names link to the same files.

The same overlay serves a sysroot that holds the mapped files but not the loader's names for
them: a copy of what the core maps has `libcuda.so.580.159.04` but not the `libcuda.so.1` link
the program opened, and gdb, finding no file under that name, would load nothing for the
library (no unwind tables, no exported names: every frame in it `??` and the stack ending there).
"""

from __future__ import annotations

import os

from coreanalyze import model
from coreanalyze.corefile import CoreNotes
from coreanalyze.gdb.linkmap import read_link_map
from coreanalyze.symbols.paths import under


def _targets(notes: CoreNotes, modules: list[model.Module], fetched: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """(path in the core's terms -> file here, the loader's names missing here whose library is)."""
    targets: dict[str, str] = {}
    by_start: dict[int, str] = {}
    for module in modules:
        target = fetched.get(module.path) or module.local_path
        if target is not None:
            targets[module.path] = os.path.abspath(target)
            if module.start is not None:
                by_start[module.start] = targets[module.path]
    named: list[str] = []
    for library in read_link_map(notes):
        # l_addr is the load bias: the start of the library's first mapping for a shared object.
        target = by_start.get(library.base)
        if target is not None and library.name not in targets:
            targets[library.name] = target
            named.append(library.name)
    return targets, named


def build_overlay(root: str, notes: CoreNotes, modules: list[model.Module], fetched: dict[str, str]) -> None:
    targets, _ = _targets(notes, modules, fetched)
    for path, target in targets.items():
        link = under(root, path)
        if link is None or os.path.lexists(link):
            continue
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)


def loader_names_missing(notes: CoreNotes, modules: list[model.Module], sysroot: str | None) -> list[str]:
    """The loader's names under which gdb would find no file (under sysroot, else here), though
    the library they name is here under the path the core maps: gdb needs the overlay."""
    _, named = _targets(notes, modules, {})
    missing = []
    for name in named:
        local = under(sysroot, name) if sysroot else name
        if local is not None and not os.path.isfile(local):
            missing.append(name)
    return missing
