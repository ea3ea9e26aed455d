"""Which libraries to fetch, from which wheels, and what came of each attempt."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coreanalyze.base import model
from coreanalyze.base.atomicfile import write_atomically
from coreanalyze.base.cachedir import cache_dir
from coreanalyze.base.vocabulary import ModuleStatus
from coreanalyze.fetch.resolve import Candidate, Resolution, resolve
from coreanalyze.fetch.target import ProcessTarget, process_target
from coreanalyze.fetch.verify import identity, mismatch
from coreanalyze.fetch.wheels import WheelError, download, extract
from coreanalyze.process.imported import InMemoryDistribution
from coreanalyze.process.packages import site_packages_of
from coreanalyze.process.process import Process

WANTED = (ModuleStatus.MISSING, ModuleStatus.MISMATCH)


@dataclass
class FetchAttempt:
    distribution: str
    version: str | None
    wheel: str | None  # the wheel's file name, when pip provided one
    outcome: str  # "used for N libraries" | "refused: ..." | "not available: ..."
    downloaded: bool = False  # pip downloaded it for this analysis (else: from the cache)
    # Why a wheel was not used: no-distribution | no-version | no-wheel | network | build-id |
    # not-in-wheel | unknown-version | failed; None when it was used.
    reason: str | None = None
    evidence: str | None = None  # what named this distribution and version (resolve.py)


@dataclass
class FetchResult:
    files: dict[str, str] = field(default_factory=dict)  # path in the core -> verified file
    wheels: dict[str, str] = field(default_factory=dict)  # path in the core -> wheel's file name
    attempts: list[FetchAttempt] = field(default_factory=list)
    # Libraries wanted but not found -> why, in a few words for the module table.
    unfetched: dict[str, str] = field(default_factory=dict)
    target: str | None = None  # the process the wheels were chosen for (target.py)


def fetch_cache() -> Path:
    """Verified libraries by identity (fetched/<build-id or page digest>/<name>) and the
    downloaded wheels (wheels/)."""
    return cache_dir() / "fetch"


@dataclass
class _Wanted:
    path: str  # in the core
    member: str  # relative to site-packages, as the wheel's RECORD names it
    identity: str


# The reason that explains a library best when several candidates failed differently: a wheel
# whose build-id did not match says more than a name the index does not have.
REASON_ORDER = ("build-id", "not-in-wheel", "network", "no-wheel", "no-version", "no-distribution", "unknown-version", "failed")


def fetch_missing(
    process: Process,
    modules: list[model.Module],
    packages: list[dict[str, Any]],
    *,
    python_version: str,
    arch: str,
    cache: Path | None = None,
    distributions: list[InMemoryDistribution] | None = None,
) -> FetchResult:
    """distributions: the `.dist-info` names in the process's memory (imported.py), which
    settle which build of a package ran; None: only `packages` tells."""
    cache = cache or fetch_cache()
    result = FetchResult()
    target = process_target(python_version, arch, modules)
    result.target = target.describe()
    memory = distributions or []
    loaded = [m.path for m in modules]
    groups: dict[tuple, tuple[Resolution, list[_Wanted]]] = {}
    for module in modules:
        site = site_packages_of(module.path)
        if module.status not in WANTED or site is None:
            continue
        key = identity(process, module.path)
        member = os.path.relpath(module.path, site)
        if key is None or member.startswith(".."):
            result.unfetched[module.path] = "the core has neither its build-id nor its first page to check a wheel against"
            continue
        cached = cache / "fetched" / key / os.path.basename(module.path)
        if cached.is_file() and mismatch(process, module.path, str(cached)) is None:
            result.files[module.path] = str(cached)
            result.wheels[module.path] = _cached_wheel_name(cached)
            continue
        resolution = resolve(member, packages, memory, target, loaded, str(site))
        groups.setdefault(resolution.key, (resolution, []))[1].append(_Wanted(module.path, member, key))
    for resolution, wanted in groups.values():
        if resolution.unknown is not None:
            label = _label(wanted[0].member)
            result.attempts.append(FetchAttempt(label, None, None, f"not available: {resolution.unknown}", reason="unknown-version"))
            result.unfetched.update((w.path, resolution.unknown) for w in wanted)
            continue
        reasons: list[tuple[str, str]] = []
        for candidate in resolution.candidates:
            if not wanted:
                break
            wanted = _try_wheel(process, candidate, wanted, target, cache, result, reasons)
        result.unfetched.update((w.path, _reason(reasons, w.path, resolution)) for w in wanted)
    return result


def _label(member: str) -> str:
    return member.split("/", 1)[0].removesuffix(".libs")


def _reason(reasons: list[tuple[str, str]], path: str, resolution: Resolution) -> str:
    """One line for the module table: the most telling failure, with the names tried."""
    tried = ", ".join(f"{c.distribution} {c.version}" for c in resolution.candidates[:6])
    per_file = ("build-id", "not-in-wheel")
    mine = [(kind, text) for kind, text in reasons if kind not in per_file or os.path.basename(path) in text]
    if not mine:
        return f"no candidate wheel was tried ({tried})"
    kind, text = min(mine, key=lambda r: REASON_ORDER.index(r[0]) if r[0] in REASON_ORDER else len(REASON_ORDER))
    if kind == "build-id":
        return f"its build-id is in no candidate wheel (tried {tried})"
    if kind == "not-in-wheel":
        return f"no candidate wheel holds it (tried {tried})"
    return f"{text} (tried {tried})"


def _try_wheel(
    process: Process, candidate: Candidate, wanted: list[_Wanted], target: ProcessTarget, cache: Path,
    result: FetchResult, reasons: list[tuple[str, str]],
) -> list[_Wanted]:  # fmt: skip
    """Take what matches from one wheel; returns what is still wanted."""
    name, version = candidate.distribution, candidate.version
    try:
        wheel, downloaded = download(name, version, target, cache / "wheels")
    except WheelError as e:
        result.attempts.append(FetchAttempt(name, version, None, f"not available: {e}", reason=e.kind, evidence=candidate.evidence))
        reasons.append((e.kind, str(e)))
        return wanted
    left, used, refusals = [], 0, []

    def use(w: _Wanted, kept: Path) -> None:
        nonlocal used
        result.files[w.path] = str(kept)
        result.wheels[w.path] = wheel.name
        used += 1

    for w in wanted:
        kept = cache / "fetched" / w.identity / os.path.basename(w.path)
        if kept.is_file() and mismatch(process, w.path, str(kept)) is None:
            use(w, kept)  # another worker of the batch took it out of the same wheel meanwhile
            continue
        # Per process: workers of a batch may take the same file out of the same wheel at once.
        staging = kept.with_name(f"{kept.name}.{os.getpid()}.unverified")
        try:
            extract(wheel, w.member, staging)
        except WheelError as e:
            refusals.append(f"{os.path.basename(w.path)}: {e}")
            reasons.append(("not-in-wheel", refusals[-1]))
            left.append(w)
            continue
        why = mismatch(process, w.path, str(staging))
        if why is not None:
            staging.unlink(missing_ok=True)  # a wheel that does not match is never used
            refusals.append(f"{os.path.basename(w.path)}: {why}")
            reasons.append(("build-id", refusals[-1]))
            left.append(w)
            continue
        os.replace(staging, kept)
        write_atomically(kept.parent / "wheel", wheel.name)
        use(w, kept)
    outcome = f"used for {used} libraries" if used else "refused"
    if refusals:
        outcome += f"{'; refused' if used else ''}: " + "; ".join(refusals[:5])
        if len(refusals) > 5:
            outcome += f"; … ({len(refusals) - 5} more)"
    result.attempts.append(
        FetchAttempt(name, version, wheel.name, outcome, downloaded, None if used else "build-id", candidate.evidence)
    )
    return left


def _cached_wheel_name(cached: Path) -> str:
    try:
        return (cached.parent / "wheel").read_text(encoding="utf-8").strip()[:300] or "cache"
    except OSError:
        return "cache"
