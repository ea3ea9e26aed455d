"""Where each module's file came from, and for one without a file, where it was looked for.

A report read far from the crashed machine is only as good as the files it was read with; a
ticket should say which ones: the analyst's own (local), a --sysroot directory, a container
image (which layer of which image), a wheel --fetch downloaded, and for the separate debug
file a --debug-dir, the sysroot or image, the system's debug tree or debuginfod's cache.
"""

from __future__ import annotations

import os

from coreanalyze.base import model
from coreanalyze.corefile.modules import DELETED_SUFFIX
from coreanalyze.symbols.paths import SYSTEM_DEBUG_DIR, debuginfod_cache_dirs


def mark_sources(
    modules: list[model.Module],
    *,
    python: str | None,
    sysroot: str | None,
    image=None,
    wheels: dict[str, str] | None = None,
    unfetched=(),
) -> None:
    """sysroot: the user's --sysroot directory (None for an image); image: an ImageSysroot;
    wheels: path in the core -> the wheel --fetch took its file from; unfetched: what --fetch
    wanted but no wheel provided (path -> why, or just the paths)."""
    wheels = wheels or {}
    realpath = _realpaths()
    unfetched = unfetched if isinstance(unfetched, dict) else dict.fromkeys(unfetched, "found no wheel file that matches the core")
    for m in modules:
        m.not_found = None
        if m.path in wheels and m.local_path is not None:
            m.source, m.origin = wheels[m.path], {"kind": "wheel", "wheel": wheels[m.path]}
        elif m.local_path is None:
            m.source, m.origin = None, None
            m.not_found = _where_looked(m, sysroot, image)
            if m.path in unfetched:
                m.not_found += f"; --fetch: {unfetched[m.path]}"
        elif python and m.local_path == python:
            m.source, m.origin = "local", {"kind": "local", "path": python}
        elif image is not None and (found := image.origin(m.path)) is not None:
            m.source, m.origin = image.describe(m.path), found
        elif sysroot:
            m.source, m.origin = "sysroot", {"kind": "sysroot", "root": os.path.abspath(sysroot)}
        else:
            m.source, m.origin = "local", {"kind": "local", "path": realpath(m.local_path)}


def _realpaths():
    """os.path.realpath, resolving each directory once: a process's ~150 libraries lie in a
    handful of directories, and realpath looks at every component of every path."""
    directories: dict[str, str] = {}

    def realpath(path: str) -> str:
        head, tail = os.path.split(path)
        if not head or tail in ("", ".", "..") or os.path.islink(path):
            return os.path.realpath(path)
        if head not in directories:
            directories[head] = os.path.realpath(head)
        return os.path.join(directories[head], tail)

    return realpath


def _where_looked(m: model.Module, sysroot: str | None, image) -> str:
    if m.path.endswith(DELETED_SUFFIX):
        return "the file was deleted or replaced after the process mapped it"
    if not m.path.startswith("/"):
        return "the core does not name the file"
    if image is not None:
        return f"not in the image {image.manifest.label}"
    if sysroot:
        return f"not under --sysroot {sysroot}"
    return "not on this machine at this path"


def mark_debug_files(modules: list[model.Module], debug_file_for, *, debug_dirs: list[str], sysroot: str | None, image=None) -> None:
    """debug_file_for(module) -> the separate debug file used for it, or None."""
    for m in modules:
        found = debug_file_for(m)
        if not found:
            continue
        m.debug_file = found
        m.debug_source = _debug_source(found, m, debug_dirs, sysroot, image)


def _inside(path: str, root: str | os.PathLike[str]) -> bool:
    root = os.path.abspath(root)
    return os.path.commonpath([root, os.path.abspath(path)]) == root


def _debug_source(found: str, m: model.Module, debug_dirs: list[str], sysroot: str | None, image) -> str:
    """sysroot: the user's --sysroot directory; found may also be reached through a sysroot of
    links --fetch made, or the debug directory it adds for the given sysroot."""
    real = os.path.realpath(found)
    if image is not None and _inside(real, os.path.realpath(image.root)):
        return image.describe("/" + os.path.relpath(real, os.path.realpath(image.root))) or "image"
    if sysroot and _inside(real, os.path.realpath(sysroot)):
        return "sysroot"
    if any(_inside(found, d) for d in debug_dirs):
        return "debug-dir"
    if any(_inside(found, d) for d in debuginfod_cache_dirs()):
        return "debuginfod"
    if _inside(found, SYSTEM_DEBUG_DIR):
        return "system"
    return "beside the file"
