"""What the dead process had imported: its top-level modules, their files and versions.

The walker reads sys.modules from the core (each top-level module's `__file__` and
`__version__`). A module without `__version__` gets the version of the distribution that owns
it when the process's memory names that distribution's `.dist-info` directory (importlib's
directory listings and importlib.metadata leave `numpy-2.1.3.dist-info` strings in the heap).
Only modules loaded from a site-packages tree are packages; the standard library is summed up
by the Python version.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import cache, lru_cache
from typing import Any, Iterator

from coreanalyze import rulesdata
from coreanalyze.corefile.memory import CoreMemory, Segment, searching
from coreanalyze.process.packages import site_packages_of
from coreanalyze.rulesdata.kinds import DISTRIBUTIONS, DISTRIBUTIONS_FILE

DIST_INFO = b".dist-info"
# name-version.dist-info, with the directory it is in when the string is a path.
DIST_INFO_NAME = re.compile(rb"(?:(/[\x21-\x7e]{1,400})/)?([A-Za-z0-9][A-Za-z0-9_.]{0,100})-([0-9][A-Za-z0-9_.+!]{0,60})$")
LOOK_BEHIND = 512  # bytes before ".dist-info" searched for the name
MAX_SCANNED = 4 << 30  # bytes of writable memory searched, at most
MAX_DISTRIBUTIONS = 20_000


@dataclass(frozen=True)
class InMemoryDistribution:
    name: str  # as written in the directory name (underscores for dashes)
    version: str
    directory: str | None  # the site-packages directory, when the string was a path


@dataclass
class ImportedPackage:
    name: str  # the distribution when known, else the import name
    version: str | None
    path: str  # the module's __file__
    module: str  # the import name
    version_from: str | None  # "__version__" | "dist-info"


@lru_cache(maxsize=8192)  # asked of every distribution in memory for each imported module
def normalize(name: str) -> str:
    """PEP 503 normalisation, with "_" for the separator as wheel and dist-info names use."""
    return re.sub(r"[-_.]+", "_", name).lower()


@cache
def import_name_distributions() -> dict[str, tuple[str, ...]]:
    """Top-level import name -> distributions that may own it, most likely first (data)."""
    data = rulesdata.shipped(DISTRIBUTIONS_FILE, DISTRIBUTIONS)
    return {name: tuple(dists) for name, dists in data["import_names"].items()}


def candidate_distributions(module: str) -> tuple[str, ...]:
    return import_name_distributions().get(module, (module,))


def dist_info_at(memory: CoreMemory) -> Iterator[tuple[Segment, int]]:
    """(segment, address) of every ".dist-info" in the core's writable memory, MAX_SCANNED bytes
    searched at most: what distributions_in_memory reads, and what a shrunk core keeps."""
    scanned = 0
    for segment in memory.segments:
        if not segment.writable or scanned >= MAX_SCANNED:
            continue
        for at in memory.find(DIST_INFO, segment, MAX_SCANNED - scanned):
            yield segment, at
        scanned += max(0, segment.present_end - segment.start)


@searching()  # a shrunk core keeps the names it found (shrink/scans.py), not all it read
def distributions_in_memory(memory: CoreMemory) -> list[InMemoryDistribution]:
    """Every `name-version.dist-info` named in the core's writable memory, once each."""
    found: dict[InMemoryDistribution, None] = {}
    for segment, at in dist_info_at(memory):
        start = max(segment.start, at - LOOK_BEHIND)
        window = memory.read(start, at - start)
        if window is not None:
            add_named(window, found)
        if len(found) >= MAX_DISTRIBUTIONS:
            break
    return list(found)


def scan_bytes(data: bytes, found: dict[InMemoryDistribution, None]) -> None:
    """Add the distributions `data` names (as `name-version.dist-info`, or a path to one)."""
    at = data.find(DIST_INFO)
    while at >= 0:
        add_named(data[max(0, at - LOOK_BEHIND) : at], found)
        at = data.find(DIST_INFO, at + len(DIST_INFO))


def add_named(before: bytes, found: dict[InMemoryDistribution, None]) -> None:
    """The distribution named by the bytes just before a ".dist-info", if they name one."""
    match = DIST_INFO_NAME.search(before)
    if match:
        directory, name, version = (g.decode("ascii") if g else None for g in match.groups())
        found.setdefault(InMemoryDistribution(name, version, directory), None)


@lru_cache(maxsize=1024)
def name_pattern(template: str) -> re.Pattern[str]:
    """A distributions.toml name as a pattern of normalized names: `cupy-cuda{cuda}x` matches
    `cupy_cuda13x` (an accelerator's major in the name)."""
    return re.compile(re.sub(r"\\\{\w+\\\}", r"\\d+", re.escape(normalize(template))))


def _owner(module: str, site: str, distributions: list[InMemoryDistribution]) -> InMemoryDistribution | None:
    """The one distribution (and version) in memory that installs this module in this site dir."""
    for candidate in map(name_pattern, candidate_distributions(module)):
        named = [d for d in distributions if candidate.fullmatch(normalize(d.name))]
        here = [d for d in named if d.directory == site] or [d for d in named if d.directory is None] or named
        if len({d.version for d in here}) == 1:
            return here[0]
    return None


def imported_packages(imports: list[dict[str, Any]], distributions: list[InMemoryDistribution]) -> list[ImportedPackage]:
    """Third-party top-level modules of the walk (those in a site-packages tree), with versions."""
    out = []
    for entry in imports:
        module, path, version = entry.get("name"), entry.get("file"), entry.get("version")
        if not isinstance(module, str) or not isinstance(path, str):
            continue
        site = site_packages_of(path)
        if site is None:
            continue
        owner = _owner(module, str(site), distributions)
        name = owner.name.replace("_", "-") if owner else module
        version_from = "__version__" if version else None
        if not version and owner is not None:
            version, version_from = owner.version, "dist-info"
        out.append(ImportedPackage(name, version, path, module, version_from))
    return sorted(out, key=lambda p: p.name.lower())


def as_dicts(packages: list[ImportedPackage]) -> list[dict[str, Any]]:
    return [asdict(p) for p in packages]
