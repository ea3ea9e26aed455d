"""Names and places: the user cache directory, build-id spellings, paths that stay inside a root.

Build-ids and paths come from a core (untrusted) and from files on disk; none of them may pick
a file outside the directory it is looked up in.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

# Where a distribution installs separate debug files (.build-id/xx/yyyy.debug, and by path).
SYSTEM_DEBUG_DIR = "/usr/lib/debug"
# A GNU build-id is a hash (SHA-1 by default: 40 hex digits); anything else is not used in a path.
_BUILD_ID = re.compile(r"^[0-9a-f]{4,128}$")


def valid_build_id(build_id: str | None) -> str | None:
    """The build-id in lower case when it is safe to use in a file name, else None."""
    if not build_id:
        return None
    build_id = build_id.lower()
    return build_id if _BUILD_ID.match(build_id) else None


def build_id_relpath(build_id: str, suffix: str = ".debug") -> str:
    """`.build-id/ab/cdef....debug`: the layout gdb, elfutils and distributions share."""
    return os.path.join(".build-id", build_id[:2], build_id[2:] + suffix)


def under(root: str | os.PathLike[str], path: str) -> str | None:
    """root/path with path's leading "/" dropped; None when ".." would climb out of root."""
    base = os.path.abspath(root)
    candidate = os.path.normpath(os.path.join(base, path.lstrip("/")))
    if os.path.commonpath([base, candidate]) != base:
        return None
    return candidate




def debuginfod_cache_dirs() -> list[Path]:
    """The debuginfod client's cache, where `<build-id>/debuginfo` files are kept."""
    # Asked for every module of every core: worked out once per value of the variables.
    names = ("DEBUGINFOD_CACHE_PATH", "XDG_CACHE_HOME", "HOME")
    return list(_debuginfod_cache_dirs(*(os.environ.get(n) for n in names)))


@functools.lru_cache(maxsize=8)
def _debuginfod_cache_dirs(explicit: str | None, xdg: str | None, _home: str | None) -> tuple[Path, ...]:
    if explicit:
        return (Path(explicit).expanduser(),)
    dirs = []
    if xdg:
        dirs.append(Path(xdg).expanduser() / "debuginfod_client")
    dirs.append(Path.home() / ".cache" / "debuginfod_client")
    return tuple(dirs)


