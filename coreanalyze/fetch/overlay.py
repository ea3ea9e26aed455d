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

The same overlay serves a --sysroot whose files gdb would miss by joining its root and a name:
one without the merged-/usr links (`lib -> usr/lib`), or with links that point from the
machine's root (rootpaths.py finds those files as the machine's loader did).
"""

from __future__ import annotations

import os

from coreanalyze.base import model
from coreanalyze.base.rootpaths import file_in_root
from coreanalyze.corefile.modules import DELETED_SUFFIX
from coreanalyze.process.process import Process
from coreanalyze.symbols.paths import under


def _targets(process: Process, modules: list[model.Module], fetched: dict[str, str]) -> dict[str, str]:
    """Every name of the core (mapped path, loader's name) -> the file here that stands for it."""
    targets: dict[str, str] = {}
    by_start: dict[int, str] = {}
    for module in modules:
        target = fetched.get(module.path) or module.local_path
        if target is not None:
            targets[module.path] = os.path.abspath(target)
            if module.start is not None:
                by_start[module.start] = targets[module.path]
    for library in process.loaded_libraries:
        # l_addr is the load bias: the start of the library's first mapping for a shared object.
        target = by_start.get(library.base)
        if target is not None:
            targets.setdefault(library.name, target)
    return targets


def build_overlay(
    root: str, process: Process, modules: list[model.Module], fetched: dict[str, str], sysroot: str | None = None
) -> None:
    """sysroot: the user's --sysroot directory, whose other mapped files (a memory-mapped model,
    a vocabulary: no modules) are linked too, so that what reads them finds them in the overlay."""
    targets = _targets(process, modules, fetched)
    if sysroot:
        for mapping in process.mappings:
            if mapping.path.startswith("/") and not mapping.path.endswith(DELETED_SUFFIX) and mapping.path not in targets:
                found = file_in_root(sysroot, mapping.path)
                if found is not None:
                    targets[mapping.path] = os.path.abspath(found)
    for path, target in targets.items():
        link = under(root, path)
        if link is None or os.path.lexists(link):
            continue
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)


def gdb_would_miss(root: str, process: Process, modules: list[model.Module]) -> bool:
    """True when gdb, which only joins its sysroot and a name, would not find under `root` the
    file that stands for one of the core's names: a loader's name that is a link on the machine
    (`libz.so.1`, `/lib64/ld-linux-x86-64.so.2`) and not in the copy, merged-/usr links the copy
    lacks, links from the machine's root (the module table finds those files: rootpaths.py)."""
    for name, target in _targets(process, modules, {}).items():
        plain = under(root, name)
        if plain is None or not _same_file(plain, target):
            return True
    return False


def _same_file(a: str, b: str) -> bool:
    """Whether both paths reach one file (compared by the kernel's stat, not by resolving each
    link in Python: a TensorFlow core has 150 names to check)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
