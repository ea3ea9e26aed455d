"""Known crashes: a database (TOML, crashes.toml here plus a user's own files) of crashes
recognized by their signature, abort message, frames, ops or GPU exception, each with a title, an
upstream URL, the release that fixed it and advice. tfsa.toml beside it is generated from
TensorFlow's security advisories (known/tfsagen.py): an op that crashes the way an advisory says,
in a process that ran a TensorFlow older than the fix for its release line.

A match needs every pattern its entry gives. The facts matched are those a batch keeps per core
(CrashFacts), so a batch's summary can match again with another database without the cores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

from coreanalyze import rulesdata
from coreanalyze.base.errors import BadInput
from coreanalyze.rulesdata.kinds import KNOWN_CRASHES

SHIPPED = Path(__file__).resolve().parent / "crashes.toml"
# Generated from TensorFlow's security advisories (python -m coreanalyze.known.tfsagen).
ADVISORIES = Path(__file__).resolve().parent / "tfsa.toml"
MAX_FILE_BYTES = 4 << 20
MAX_ENTRIES = 10_000
_TEXT_FIELDS = ("signature", "abort_message", "summary", "gpu_exception")
_VERSION_PART = re.compile(r"\d+")
# An op kernel's method in a frame, templates removed: tensorflow::TensorListResize::Compute(...)
_KERNEL_METHOD = re.compile(r"(\w+)::Compute(?:Async)?\b")
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
# A kernel class's name beyond its op's: DynamicStitchOpCPU is op DynamicStitch.
_KERNEL_SUFFIX = re.compile(r"op(cpu|gpu|impl|base|v\d)?$")


@dataclass(frozen=True)
class CrashFacts:
    """What a known-crash pattern can look at: one core's classification and versions."""

    signature: str | None = None
    abort_message: str | None = None
    summary: str | None = None
    gpu_exception: str | None = None
    fault_kind: str | None = None
    frames: tuple[str, ...] = ()  # functions of the crashing thread, innermost first
    # ops its Python called through TensorFlow's generated wrappers (gen_*_ops.py: dynamic_stitch)
    op_wrappers: tuple[str, ...] = ()
    versions: dict[str, str] = field(default_factory=dict)  # package (normalized) -> version

    @cached_property
    def ops(self) -> frozenset[str]:
        """The ops the crashing thread ran, as op_key()s: an op kernel's Compute in a native frame
        (its class's name), TensorFlow's generated Python wrapper of an op (dynamic_stitch)."""
        found = {op_key(name) for name in self.op_wrappers}
        for function in self.frames:
            text = function
            for _ in range(8):
                stripped = _TEMPLATE_ARGS.sub("", text)
                if stripped == text:
                    break
                text = stripped
            for name in _KERNEL_METHOD.findall(text):
                found.add(_KERNEL_SUFFIX.sub("", op_key(name)) or op_key(name))
        return frozenset(found)


def op_key(name: str) -> str:
    """An op's name as both its kernel class and its Python wrapper spell it: DynamicStitch,
    dynamic_stitch -> dynamicstitch."""
    return name.replace("_", "").lower()


@dataclass(frozen=True)
class KnownCrash:
    id: str
    title: str
    origin: str  # the file it came from
    url: str | None = None
    advice: str | None = None
    fixed_in: dict[str, tuple[str, ...]] = field(default_factory=dict)  # package -> releases with the fix
    texts: dict[str, re.Pattern] = field(default_factory=dict)
    frames: tuple[re.Pattern, ...] = ()
    fault_kinds: frozenset[str] = frozenset()
    ops: frozenset[str] = frozenset()  # op_key()s; one of them must have run
    before_fix: bool = False  # a process whose version has the fix for its release line is not this crash

    def matches(self, facts: CrashFacts) -> bool:
        if self.fault_kinds and facts.fault_kind not in self.fault_kinds:
            return False
        if self.ops and not self.ops & facts.ops:
            return False
        if self.before_fix and any(release_fix(facts.versions.get(normalize_package(p)), v)[1] for p, v in self.fixed_in.items()):
            return False
        for name, pattern in self.texts.items():
            value = getattr(facts, name)
            if not value or not pattern.search(value):
                return False
        return all(any(p.search(f) for f in facts.frames if f) for p in self.frames)

    def verdict(self, facts: CrashFacts) -> dict[str, Any]:
        """classification.known: the entry, and what this core's versions say about its fix."""
        fixed, fixed_in = [], {}
        for package, versions in self.fixed_in.items():
            ran = facts.versions.get(normalize_package(package))
            if len(versions) == 1 and not self.before_fix:
                fixed.append(fixed_note(package, versions[0], ran))
                fixed_in[package] = versions[0]
                continue
            fix, _ = release_fix(ran, versions)
            fixed_in[package] = fix or ", ".join(versions)
            fixed.append(
                f"{self.id}, fixed in {fix}; this process ran {ran}" if fix else f"{self.id}, fixed in {fixed_in[package]}"
            )
        return {
            "id": self.id,
            "title": self.title,
            "url": self.url,
            "fixed_in": fixed_in,
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


def release_fix(ran: str | None, patched: Iterable[str]) -> tuple[str | None, bool]:
    """(the release that has the fix for the release line of `ran`, whether `ran` has it).

    The patch of ran's own line (2.10.1 for 2.10.0) when the advisory names one; else the first
    patched release of a later line (ran's line never got it); a line newer than every patched
    one was made with the fix. (None, False) when ran's version is unknown or unreadable."""
    have = version_key(ran) if ran else None
    if have is None:
        return None, False
    releases = sorted((k, v) for v in patched if (k := version_key(v)) is not None)
    for key, version in releases:
        if key[:2] == have[:2]:
            return version, have >= key
    later = [(key, version) for key, version in releases if key[:2] > have[:2]]
    if later:
        return later[0][1], False
    return (releases[-1][1] if releases else None), True


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
    return KnownCrashes(entries, [*parse_file(SHIPPED, origin="shipped"), *parse_file(ADVISORIES, origin="shipped")])


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
    fixed_in = {p: (v,) if isinstance(v, str) else tuple(v) for p, v in table.get("fixed_in", {}).items()}
    if not all(fixed_in.values()) or not all(all(v) for v in fixed_in.values()):
        raise KnownProblem('fixed_in must be a table of package = "version" (or a list of versions, one per release line)')
    ops = match.get("ops", [])
    ops = [ops] if isinstance(ops, str) else ops
    if match.get("before_fix") and not fixed_in:
        raise KnownProblem("match.before_fix needs fixed_in")
    return KnownCrash(
        id=_text(table, "id", required=True),
        title=_text(table, "title", required=True),
        origin=origin,
        url=_text(table, "url"),
        advice=_text(table, "advice"),
        fixed_in=fixed_in,
        texts={name: _regex(match[name], name) for name in _TEXT_FIELDS if name in match},
        frames=tuple(_regex(f, "frames") for f in frames),
        fault_kinds=frozenset(kinds),
        ops=frozenset(op_key(o) for o in ops if o.strip()),
        before_fix=bool(match.get("before_fix")),
    )
