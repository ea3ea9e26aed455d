"""Which installed distribution owns a file: read from the wheels' own RECORD files.

A distribution's name says little about what it installs (google-pasta installs `pasta`,
protobuf installs `google/_upb`, h5py vendors libraries next to numpy's), so ownership comes
from the list of files each wheel recorded when it was installed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import threading
from pathlib import Path

from coreanalyze.base.atomicfile import write_atomically

MAX_RECORD_BYTES = 16 << 20
MAX_METADATA_BYTES = 1 << 20
MAX_DISTRIBUTIONS = 4096

# (site-packages dir, its mtime) -> {relative path: (name, version)}
_index: dict[tuple[str, int], dict[str, tuple[str, str]]] = {}
_lock = threading.Lock()
# Each site-packages directory's index is also kept on disk (reading ~100 wheels' METADATA and
# RECORD takes a core's analysis 40 ms), under the cache directory, by path and mtime: installing
# or removing a distribution changes the directory and so the key.
INDEX_CACHE = "site-index-v1"


def _name_version(dist: Path) -> tuple[str, str] | None:
    try:
        with open(dist / "METADATA", encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_METADATA_BYTES)
    except OSError:
        return None
    headers = metadata_headers(text, ("name", "version"))
    name, version = headers.get("name"), headers.get("version")
    return (name, version) if name and version else None


def metadata_headers(text: str, wanted: tuple[str, ...]) -> dict[str, str]:
    """The first value of each wanted header (lower-case names) of a METADATA/PKG-INFO text:
    RFC 822 header lines up to the first empty line. A line-by-line read, for what the email
    package's parser (~0.6 ms a file, and its import) would give for these one-line fields."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the end of the headers: the description follows
        if line[0] in " \t" or ":" not in line:
            continue  # a folded continuation, or not a header
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in wanted and key not in found:
            found[key] = value.strip()
            if len(found) == len(wanted):
                break
    return found


def _site_index(site: Path) -> dict[str, tuple[str, str]]:
    try:
        key = (str(site), os.stat(site).st_mtime_ns)
    except OSError:
        return {}
    with _lock:
        if key in _index:
            return _index[key]
    files = _cached_index(key)
    if files is None:
        files = _read_index(site)
        _keep_index(key, files)
    with _lock:
        _index[key] = files
    return files


def _read_index(site: Path) -> dict[str, tuple[str, str]]:
    files: dict[str, tuple[str, str]] = {}
    try:
        dists = sorted(site.glob("*.dist-info"))[:MAX_DISTRIBUTIONS]
    except OSError:
        dists = []
    for dist in dists:
        owner = _name_version(dist)
        if owner is None:
            continue
        try:
            with open(dist / "RECORD", "rb") as f:
                text = f.read(MAX_RECORD_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        for row in csv.reader(io.StringIO(text)):
            if row and (row[0].endswith((".so", ".dylib")) or ".so." in row[0]):
                files[os.path.normpath(row[0])] = owner
    return files


def _index_file(key: tuple[str, int]) -> Path:
    from coreanalyze.base.cachedir import cache_dir

    return cache_dir() / INDEX_CACHE / (hashlib.sha256(key[0].encode("utf-8", "surrogateescape")).hexdigest() + ".json")


def _cached_index(key: tuple[str, int]) -> dict[str, tuple[str, str]] | None:
    try:
        with open(_index_file(key), encoding="utf-8") as f:
            data = json.load(f)
        if data["site"] != key[0] or data["mtime_ns"] != key[1]:
            return None
        return {path: (owner[0], owner[1]) for path, owner in data["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None  # none yet, or not ours: read the directory


def _keep_index(key: tuple[str, int], files: dict[str, tuple[str, str]]) -> None:
    path = _index_file(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, json.dumps({"site": key[0], "mtime_ns": key[1], "files": files}))
    except OSError:
        pass  # a read-only cache: the index is read again next time


def site_packages_of(path: str) -> Path | None:
    parts = Path(path).parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return Path(*parts[: i + 1])
    return None


def owner_of(path: str) -> tuple[str, str] | None:
    """(distribution name, version) that installed this shared library, if a wheel did."""
    site = site_packages_of(path)
    if site is None:
        return None
    rel = os.path.normpath(os.path.relpath(os.path.normpath(path), site))
    return _site_index(site).get(rel)
