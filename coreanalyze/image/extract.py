"""Copying the few files a core needs out of an image's layers into the cache.

Only the files the core mapped (under every name the process used for them) and their
separate debug files are written, each at its path under the cache's rootfs/, one pass per
layer that holds any. Nothing but regular files and directories is created there, so nothing
the image says can make a later read or write leave the cache.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict

from coreanalyze.image.index import Found, ImageIndex
from coreanalyze.image.layers import open_layer
from coreanalyze.symbols.paths import under

MAX_FILE_BYTES = 4 << 30
CHUNK = 1 << 20


def extract(store, index: ImageIndex, paths: list[str], rootfs: str) -> list[str]:
    """Make rootfs/<path> hold the image's file for each path the image has; returns the paths
    that are there now (extracted before or now)."""
    wanted: dict[int, dict[int, tuple[Found, list[str]]]] = defaultdict(dict)
    present = []
    for path in dict.fromkeys(paths):
        destination = under(rootfs, path)
        if destination is None:
            continue
        if os.path.isfile(destination):
            present.append(path)
            continue
        found = index.resolve(path)
        if found is None or found.size > MAX_FILE_BYTES:
            continue
        canonical = under(rootfs, found.path)
        entry = wanted[found.layer].setdefault(found.loc, (found, [canonical] if canonical else []))
        if destination not in entry[1]:
            entry[1].append(destination)
        present.append(path)
    for layer, files in sorted(wanted.items()):
        _from_layer(store, index, layer, files)
    return [p for p in present if os.path.isfile(under(rootfs, p) or "")]


def _from_layer(store, index: ImageIndex, layer: int, files: dict[int, tuple[Found, list[str]]]) -> None:
    with open_layer(store, index.manifest.layers[layer]) as (tar, plain):
        if plain:
            for loc in sorted(files):
                found, destinations = files[loc]
                tar.fileobj.seek(loc)
                _write(tar.fileobj, found.size, destinations)
            return
        for position, member in enumerate(tar):
            if position in files:
                source = tar.extractfile(member)
                if source is not None:
                    _write(source, files[position][0].size, files[position][1])


def _write(source, size: int, destinations: list[str]) -> None:
    first = None
    for destination in destinations:
        try:
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            if first is None:
                partial = f"{destination}.{os.getpid()}.partial"
                with open(partial, "xb") as out:
                    left = size
                    while left > 0:
                        chunk = source.read(min(CHUNK, left))
                        if not chunk:
                            break
                        out.write(chunk)
                        left -= len(chunk)
                os.replace(partial, destination)
                first = destination
            elif not os.path.lexists(destination):
                try:
                    os.link(first, destination)  # another name the process used for the same file
                except OSError:
                    shutil.copyfile(first, destination)
        except OSError:
            continue  # a name whose parent is a file here: the other names still serve
