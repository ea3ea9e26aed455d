"""Which libraries to fetch, from which wheels, and what came of each attempt."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coreanalyze import model
from coreanalyze.atomicfile import write_atomically
from coreanalyze.corefile import CoreNotes
from coreanalyze.fetch.verify import identity, mismatch
from coreanalyze.fetch.wheels import WheelError, download, extract
from coreanalyze.imported import candidate_distributions, normalize
from coreanalyze.packages import site_packages_of
from coreanalyze.symbols.paths import cache_dir
from coreanalyze.vocabulary import ModuleStatus

WANTED = (ModuleStatus.MISSING, ModuleStatus.MISMATCH)


@dataclass
class FetchAttempt:
    distribution: str
    version: str | None
    wheel: str | None  # the wheel's file name, when pip provided one
    outcome: str  # "used for N libraries" | "refused: ..." | "not available: ..."
    downloaded: bool = False  # pip downloaded it for this analysis (else: from the cache)


@dataclass
class FetchResult:
    files: dict[str, str] = field(default_factory=dict)  # path in the core -> verified file
    wheels: dict[str, str] = field(default_factory=dict)  # path in the core -> wheel's file name
    attempts: list[FetchAttempt] = field(default_factory=list)
    unfetched: list[str] = field(default_factory=list)  # libraries wanted but not found


def fetch_cache() -> Path:
    """Verified libraries by identity (fetched/<build-id or page digest>/<name>) and the
    downloaded wheels (wheels/)."""
    return cache_dir() / "fetch"


@dataclass
class _Wanted:
    path: str  # in the core
    member: str  # relative to site-packages, as the wheel's RECORD names it
    identity: str


def _top_level(member: str) -> str:
    """numpy for numpy.libs/libgfortran.so: auditwheel's vendored-library folder."""
    top = member.split("/", 1)[0]
    return top.removesuffix(".libs")


def _distributions(top: str, packages: list[dict[str, Any]]) -> tuple[list[str], str | None]:
    """Distributions to try for a top-level folder, in order, and the process's version."""
    for p in packages:
        # google.protobuf is what a namespace package's folder (google/) was installed by.
        if (p.get("module") or "").split(".", 1)[0] == top or normalize(p.get("name", "")) == normalize(top):
            names = [p["name"]] if p.get("version_from") == "dist-info" or p["name"] != top else []
            names += [d for d in candidate_distributions(p.get("module") or top) if d not in names]
            return names, p.get("version")
    return list(candidate_distributions(top)), None


def fetch_missing(
    notes: CoreNotes,
    modules: list[model.Module],
    packages: list[dict[str, Any]],
    *,
    python_version: str,
    arch: str,
    cache: Path | None = None,
) -> FetchResult:
    cache = cache or fetch_cache()
    result = FetchResult()
    groups: dict[str, list[_Wanted]] = {}
    for module in modules:
        site = site_packages_of(module.path)
        if module.status not in WANTED or site is None:
            continue
        key = identity(notes, module.path)
        member = os.path.relpath(module.path, site)
        if key is None or member.startswith(".."):
            result.unfetched.append(module.path)
            continue
        cached = cache / "fetched" / key / os.path.basename(module.path)
        if cached.is_file() and mismatch(notes, module.path, str(cached)) is None:
            result.files[module.path] = str(cached)
            result.wheels[module.path] = _cached_wheel_name(cached)
            continue
        groups.setdefault(_top_level(member), []).append(_Wanted(module.path, member, key))
    for top, wanted in sorted(groups.items()):
        names, version = _distributions(top, packages)
        if version is None:
            result.attempts.append(FetchAttempt(top, None, None, "not available: the process's version is unknown"))
            result.unfetched.extend(w.path for w in wanted)
            continue
        for name in names:
            if not wanted:
                break
            wanted = _try_wheel(notes, name, version, wanted, python_version, arch, cache, result)
        result.unfetched.extend(w.path for w in wanted)
    return result


def _try_wheel(
    notes: CoreNotes, name: str, version: str, wanted: list[_Wanted], python_version: str, arch: str, cache: Path,
    result: FetchResult,
) -> list[_Wanted]:
    """Take what matches from one wheel; returns what is still wanted."""
    try:
        wheel, downloaded = download(name, version, python_version, arch, cache / "wheels")
    except WheelError as e:
        result.attempts.append(FetchAttempt(name, version, None, f"not available: {e}"))
        return wanted
    left, used, refusals = [], 0, []

    def use(w: _Wanted, target: Path) -> None:
        nonlocal used
        result.files[w.path] = str(target)
        result.wheels[w.path] = wheel.name
        used += 1

    for w in wanted:
        target = cache / "fetched" / w.identity / os.path.basename(w.path)
        if target.is_file() and mismatch(notes, w.path, str(target)) is None:
            use(w, target)  # another worker of the batch took it out of the same wheel meanwhile
            continue
        # Per process: workers of a batch may take the same file out of the same wheel at once.
        staging = target.with_name(f"{target.name}.{os.getpid()}.unverified")
        try:
            extract(wheel, w.member, staging)
        except WheelError as e:
            refusals.append(str(e))
            left.append(w)
            continue
        why = mismatch(notes, w.path, str(staging))
        if why is not None:
            staging.unlink(missing_ok=True)  # a wheel that does not match is never used
            refusals.append(f"{os.path.basename(w.path)}: {why}")
            left.append(w)
            continue
        os.replace(staging, target)
        write_atomically(target.parent / "wheel", wheel.name)
        use(w, target)
    outcome = f"used for {used} libraries" if used else "refused"
    if refusals:
        outcome += f"{'; refused' if used else ''}: " + "; ".join(refusals[:5])
        if len(refusals) > 5:
            outcome += f"; … ({len(refusals) - 5} more)"
    result.attempts.append(FetchAttempt(name, version, wheel.name, outcome, downloaded))
    return left


def _cached_wheel_name(cached: Path) -> str:
    try:
        return (cached.parent / "wheel").read_text(encoding="utf-8").strip()[:300] or "cache"
    except OSError:
        return "cache"
