"""A sysroot made of links: every mapped file at its own path, fetched ones in their place.

gdb and the module table take one sysroot; with fetched libraries the analysis points both at
a temporary directory where each path of the core links to the file that stands for it here
(the user's own --sysroot file, the local one, or the verified fetched copy). gdb looks
libraries up by the loader's names (link_map's l_name: `/lib/x86_64-linux-gnu/libc.so.6` for
`/usr/lib/...`, `/lib64/ld-linux-x86-64.so.2`), so those names link to the same files.
"""

from __future__ import annotations

import os

from coreanalyze import model
from coreanalyze.corefile import CoreNotes
from coreanalyze.gdb.linkmap import read_link_map
from coreanalyze.symbols.paths import under


def build_overlay(root: str, notes: CoreNotes, modules: list[model.Module], fetched: dict[str, str]) -> None:
    targets: dict[str, str] = {}
    by_start: dict[int, str] = {}
    for module in modules:
        target = fetched.get(module.path) or module.local_path
        if target is not None:
            targets[module.path] = os.path.abspath(target)
            if module.start is not None:
                by_start[module.start] = targets[module.path]
    for library in read_link_map(notes):
        # l_addr is the load bias: the start of the library's first mapping for a shared object.
        target = by_start.get(library.base)
        if target is not None:
            targets.setdefault(library.name, target)
    for path, target in targets.items():
        link = under(root, path)
        if link is None or os.path.lexists(link):
            continue
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)
