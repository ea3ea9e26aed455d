"""Sysroots the tests make of this machine's own files."""

from __future__ import annotations

import os
from pathlib import Path

# The machine's library directories; a sysroot that links them has this machine's OS files.
OS_DIRECTORIES = ("lib", "lib64", "usr/lib", "usr/lib64")


def link_os_directories(sysroot: Path) -> None:
    """Link the library directories into the sysroot, merged-/usr links kept as links (the
    loader's list names /lib/..., the core's file list /usr/lib/...)."""
    for name in OS_DIRECTORIES:
        host = Path("/", name)
        if not host.exists():
            continue
        link = sysroot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.readlink(host) if host.is_symlink() else str(host))


def under_os_directory(path: str) -> bool:
    return any(path.startswith(f"/{name}/") for name in OS_DIRECTORIES)
