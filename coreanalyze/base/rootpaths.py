"""A path of the crashed machine, looked up in a copy of its files (--sysroot) as its loader found it.

The names a core gives are the machine's: the kernel's paths of the mappings and the loader's
names (`/lib/x86_64-linux-gnu/libc.so.6`, `/lib64/ld-linux-x86-64.so.2`). Inside a copy of that
machine's files they resolve as on the machine:

- links are followed inside the copy, an absolute link from the copy's root (a link to
  `/lib/x86_64-linux-gnu/...` must not reach this machine's own file);
- merged /usr: on every current distribution `/lib`, `/lib64`, `/bin`, `/sbin` are links to
  their `/usr` twins; a copy made by hand or from a package list often lacks those links, so a
  top-level directory that is not there is taken as its `/usr` twin; and a copy of an older,
  unmerged machine answers a `/usr/lib/...` name from `/lib/...`.

Everything is bounded (links followed, components) and nothing leaves the root.
"""

from __future__ import annotations

import os
import stat

MERGED_USR = frozenset({"bin", "sbin", "lib", "lib32", "lib64", "libx32"})
MAX_LINKS = 40
MAX_COMPONENTS = 256


def resolve_in_root(root: str, path: str) -> str | None:
    """The regular file that `path` names on the machine whose files are under `root`; None
    when there is none there."""
    if not path.startswith("/"):
        return None
    base = os.path.abspath(root)
    for name in _aliases(path):
        found = _follow(base, name)
        if found is not None:
            return found
    return None


def _aliases(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p]
    names = [path]
    if len(parts) > 2 and parts[0] == "usr" and parts[1] in MERGED_USR:
        names.append("/" + "/".join(parts[1:]))  # an unmerged machine's copy
    return names


def _follow(root: str, path: str) -> str | None:
    pending = [p for p in path.split("/") if p][:MAX_COMPONENTS]
    resolved: list[str] = []
    links = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        here = os.path.join(root, *resolved, part)
        try:
            mode = os.lstat(here).st_mode
        except OSError:
            if not resolved and part in MERGED_USR and os.path.isdir(os.path.join(root, "usr", part)):
                resolved = ["usr", part]  # the merged-/usr link the copy lacks
                continue
            return None
        if stat.S_ISLNK(mode):
            links += 1
            if links > MAX_LINKS:
                return None
            try:
                target = os.readlink(here)
            except OSError:
                return None
            if target.startswith("/"):
                resolved = []  # from the machine's root: the copy's root
            pending = [p for p in target.split("/") if p][:MAX_COMPONENTS] + pending
            if len(pending) > MAX_COMPONENTS:
                return None
            continue
        resolved.append(part)
        if pending and not stat.S_ISDIR(mode):
            return None
    found = os.path.join(root, *resolved)
    return found if resolved and os.path.isfile(found) and not os.path.islink(found) else None


def file_in_root(root: str, path: str) -> str | None:
    """The file under `root` for the machine's `path`: root + path itself when that is the
    file (the name as given is kept), else where the loader's way of resolving it leads. A
    directory of links to files elsewhere (the --fetch overlay) still answers through them."""
    plain = os.path.normpath(os.path.join(os.path.abspath(root), path.lstrip("/")))
    if os.path.commonpath([os.path.abspath(root), plain]) != os.path.abspath(root):
        return None  # ".." climbing out of the root
    found = resolve_in_root(root, path)
    if found is None:
        return plain if os.path.isfile(plain) else None
    return plain if os.path.realpath(plain) == os.path.realpath(found) else found
