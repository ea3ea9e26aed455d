"""Known crashes: a database (TOML, crashes.toml here plus a user's own files) of crashes
recognized by their signature, abort message, frames or GPU exception, each with a title, an
upstream URL, the release that fixed it and advice.

A match needs every pattern its entry gives. The facts matched are those a batch keeps per core
(CrashFacts), so a batch's summary can match again with another database without the cores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from coreanalyze import rulesdata
from coreanalyze.base.errors import BadInput
from coreanalyze.rulesdata.kinds import KNOWN_CRASHES

SHIPPED = Path(__file__).resolve().parent / "crashes.toml"
MAX_FILE_BYTES = 4 << 20
MAX_ENTRIES = 10_000
_TEXT_FIELDS = ("signature", "abort_message", "summary", "gpu_exception")
_VERSION_PART = re.compile(r"\d+")


@dataclass(frozen=True)
class CrashFacts:
    """What a known-crash pattern can look at: one core's classification and versions."""

    signature: str | None = None
    abort_message: str | None = None
    summary: str | None = None
    gpu_exception: str | None = None
    fault_kind: str | None = None
    frames: tuple[str, ...] = ()  # functions of the crashing thread, innermost first
    versions: dict[str, str] = field(default_factory=dict)  # package (normalized) -> version


@dataclass(frozen=True)
class KnownCrash:
    id: str
    title: str
    origin: str  # the file it came from
    url: str | None = None
    advice: str | None = None
    fixed_in: dict[str, str] = field(default_factory=dict)
    texts: dict[str, re.Pattern] = field(default_factory=dict)
    frames: tuple[re.Pattern, ...] = ()
    fault_kinds: frozenset[str] = frozenset()

    def matches(self, facts: CrashFacts) -> bool:
        if self.fault_kinds and facts.fault_kind not in self.fault_kinds:
            return False
        for name, pattern in self.texts.items():
            value = getattr(facts, name)
            if not value or not pattern.search(value):
                return False
        return all(any(p.search(f) for f in facts.frames if f) for p in self.frames)

    def verdict(self, facts: CrashFacts) -> dict[str, Any]:
        """classification.known: the entry, and what this core's versions say about its fix."""
        fixed = [fixed_note(package, version, facts.versions.get(normalize_package(package))) for package, version in self.fixed_in.items()]
        return {
            "id": self.id,
            "title": self.title,
            "url": self.url,
            "fixed_in": dict(self.fixed_in),
            "ran": {p: facts.versions.get(normalize_package(p)) for p in self.fixed_in},
            "note": "; ".join(fixed) or None,
            "advice": self.advice,
            "origin": self.origin,
        }


def normalize_package(name: str) -> str:
    """PEP 503 names: TensorFlow_CPU, tensorflow-cpu and tensorflow.cpu are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(version: str) -> tuple[int, ...] | None:
    """(2, 17, 0) for "2.17.0rc1"; None when the text has no leading number."""
    head = re.match(r"\s*v?(\d+(?:\.\d+)*)", version or "")
    return tuple(int(p) for p in _VERSION_PART.findall(head.group(1))) if head else None


def fixed_note(package: str, fixed: str, ran: str | None) -> str:
    if ran is None:
        return f"fixed in {package} {fixed}; this core's {package} version is unknown"
    have, want = version_key(ran), version_key(fixed)
    if have is None or want is None:
        return f"fixed in {package} {fixed}, this core ran {ran}"
    if have < want:
        return f"fixed in {package} {fixed}, this core ran {ran}: upgrading fixes it"
    return f"fixed in {package} {fixed}, yet this core ran {ran}: a regression, or another cause with the same signs"


class KnownProblem(ValueError):
    """An entry of a known-crash file whose values cannot be used (a pattern that does not
    compile, an empty title): raised as BadInput naming the file and the entry."""


class KnownCrashes:
    """The entries in force, in the order they are tried: a user's files first (in the order
    given, each in file order), then the shipped entries that no user entry replaced by id."""

    def __init__(self, entries: Iterable[KnownCrash] = (), shipped: Iterable[KnownCrash] = ()):
        by_id: dict[str, KnownCrash] = {}
        for entry in entries:
            by_id.setdefault(entry.id, entry)  # the first of an id wins, as the first match does
        self.entries = [*by_id.values(), *(e for e in shipped if e.id not in by_id)]

    def match(self, facts: CrashFacts) -> KnownCrash | None:
        for entry in self.entries:
            if entry.matches(facts):
                return entry
        return None

    def __len__(self) -> int:
        return len(self.entries)


def load_known(files: Iterable[str | Path] = ()) -> KnownCrashes:
    """`files` and the shipped database (see KnownCrashes for which wins). A user's file that
    cannot be used - unreadable, not TOML, a key or type its format does not have, a pattern
    that does not compile - is BadInput naming the file and the entry: one line, exit 2, before
    a batch starts, rather than a fleet's known crash silently going unrecognized."""
    entries: list[KnownCrash] = []
    for path in files:
        entries.extend(parse_file(Path(path)))
    return KnownCrashes(entries, parse_file(SHIPPED, origin="shipped"))


def parse_file(path: Path, origin: str | None = None) -> list[KnownCrash]:
    label = f"--known {path}"
    if origin == "shipped":
        data = rulesdata.shipped(path, KNOWN_CRASHES)
    else:
        data = rulesdata.load(path, KNOWN_CRASHES, label=label, max_bytes=MAX_FILE_BYTES)
    entries = []
    for i, table in enumerate(data.get("crash", [])[:MAX_ENTRIES]):
        try:
            entries.append(_entry(table, origin or str(path)))
        except KnownProblem as e:
            raise BadInput(f"{label}: crash[{i + 1}]: {e}") from None
    return entries


def _text(table: dict, name: str, required: bool = False) -> str | None:
    value = table.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise KnownProblem(f"{name} must be a non-empty string")
    return value.strip()


def _regex(value: Any, name: str) -> re.Pattern:
    if not isinstance(value, str) or not value:
        raise KnownProblem(f"match.{name} must be a non-empty regex string")
    try:
        return re.compile(value)
    except re.error as e:
        raise KnownProblem(f"match.{name}: bad regex: {e}") from None


def _entry(table: dict[str, Any], origin: str) -> KnownCrash:
    """One [[crash]] table, its keys and types already checked (rulesdata.kinds.KNOWN_CRASHES)."""
    match = table["match"]
    if not match:
        raise KnownProblem("needs a [crash.match] table with at least one pattern")
    frames = match.get("frames", [])
    frames = [frames] if isinstance(frames, str) else frames
    kinds = match.get("fault_kind", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    fixed_in = table.get("fixed_in", {})
    if not all(fixed_in.values()):
        raise KnownProblem('fixed_in must be a table of package = "version"')
    return KnownCrash(
        id=_text(table, "id", required=True),
        title=_text(table, "title", required=True),
        origin=origin,
        url=_text(table, "url"),
        advice=_text(table, "advice"),
        fixed_in=dict(fixed_in),
        texts={name: _regex(match[name], name) for name in _TEXT_FIELDS if name in match},
        frames=tuple(_regex(f, "frames") for f in frames),
        fault_kinds=frozenset(kinds),
    )
