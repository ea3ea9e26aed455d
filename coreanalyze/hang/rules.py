"""The hang rules (hang/rules.toml) as typed, compiled data."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from coreanalyze import rulesdata
from coreanalyze.rulesdata.kinds import HANG_RULES

RULES_FILE = Path(__file__).resolve().parent / "rules.toml"


@dataclass(frozen=True)
class SyscallTable:
    register: str  # holds the system call number of a thread that sleeps in the kernel
    argument: str  # holds its first argument (the futex word's address)
    states: dict[int, str]  # syscall number -> wait state
    names: dict[int, str]


@dataclass(frozen=True)
class WaitRule:
    state: str
    function: re.Pattern[str]
    object_kind: str | None = None
    object: str | None = None  # "futex-word": the futex syscall's address argument


@dataclass(frozen=True)
class ThreadPattern:
    """What one thread must look like for a TensorFlow hang rule (see rules.toml)."""

    role: str = ""
    state: tuple[str, ...] = ()
    frames: tuple[re.Pattern[str], ...] = ()
    holds_gil: bool | None = None
    main: bool | None = None


@dataclass(frozen=True)
class TensorFlowHangRule:
    name: str
    category: str
    summary: str
    evidence: str
    advice: tuple[str, ...]
    roles: tuple[ThreadPattern, ...]
    max_threads: int | None = None
    idle_threads: re.Pattern[str] | None = None  # every thread with such a frame ...
    idle_state: tuple[str, ...] = ()  # ... must be in one of these states


@dataclass(frozen=True)
class HangRules:
    stop_signals: frozenset[str]
    watchdog_signals: frozenset[str]
    faulting_frames: tuple[re.Pattern[str], ...]
    reraise_frames: re.Pattern[str]  # what a handler that raises its signal again leaves above the signal frame
    window: int
    syscalls: dict[str, SyscallTable]
    waits: tuple[WaitRule, ...]
    primitives: tuple[re.Pattern[str], ...]
    tensorflow: tuple[TensorFlowHangRule, ...] = field(default_factory=tuple)
    advice: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def is_primitive(self, function: str) -> bool:
        return any(p.search(function) for p in self.primitives)


def _patterns(values: Any) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(v) for v in (values or []))


def _syscall_table(raw: dict[str, Any]) -> SyscallTable:
    states: dict[int, str] = {}
    for state in ("futex", "io", "sleep", "join", "signal"):
        for number in raw.get(state, []):
            states[int(number)] = state
    return SyscallTable(raw["register"], raw["argument"], states, {int(k): v for k, v in raw.get("names", {}).items()})


def _thread_pattern(raw: dict[str, Any]) -> ThreadPattern:
    return ThreadPattern(
        role=raw.get("role", ""),
        state=tuple(raw.get("state", ())),
        frames=_patterns(raw.get("frames")),
        holds_gil=raw.get("holds_gil"),
        main=raw.get("main"),
    )


def _tensorflow_rule(raw: dict[str, Any]) -> TensorFlowHangRule:
    idle = raw.get("idle") or {}
    return TensorFlowHangRule(
        name=raw["name"],
        category=raw["category"],
        summary=raw["summary"],
        evidence=raw.get("evidence", ""),
        advice=tuple(raw.get("advice", ())),
        roles=tuple(_thread_pattern(r) for r in raw.get("roles", ())),
        max_threads=raw.get("max_threads"),
        idle_threads=re.compile(idle["threads"]) if idle.get("threads") else None,
        idle_state=tuple(idle.get("state", ())),
    )


@lru_cache(maxsize=1)
def hang_rules() -> HangRules:
    raw = rulesdata.shipped(RULES_FILE, HANG_RULES)
    snapshot = raw["snapshot"]
    return HangRules(
        stop_signals=frozenset(snapshot["stop_signals"]),
        watchdog_signals=frozenset(snapshot["watchdog_signals"]),
        faulting_frames=_patterns(snapshot["faulting_frames"]),
        reraise_frames=re.compile(snapshot.get("reraise_frames", "$^")),
        window=int(raw["threads"]["window"]),
        syscalls={arch: _syscall_table(table) for arch, table in raw["syscalls"].items()},
        waits=tuple(
            WaitRule(w["state"], re.compile(w["function"]), w.get("object_kind"), w.get("object")) for w in raw["wait"]
        ),
        primitives=_patterns(raw["primitives"]["function"]),
        tensorflow=tuple(_tensorflow_rule(r) for r in raw.get("tensorflow", ())),
        advice={k: tuple(v) for k, v in raw.get("advice", {}).items()},
    )
