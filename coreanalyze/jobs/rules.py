"""The job rules (jobs/rules.toml) as typed, compiled data."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coreanalyze import rulesdata
from coreanalyze.rulesdata.kinds import JOB_RULES

RULES_FILE = Path(__file__).resolve().parent / "rules.toml"


@dataclass(frozen=True)
class CollectiveRule:
    name: str  # "{function}" is replaced by the matched function's own name
    python: re.Pattern[str] | None = None
    file: re.Pattern[str] | None = None
    native: re.Pattern[str] | None = None
    fallback: bool = False  # a transport-level wait: names the wait only where nothing above it does
    with_native: re.Pattern[str] | None = None  # a native frame some thread must also be in
    serving: bool = False  # the task serves whoever calls it: it waits for no peer of its own

    def names(self, collective: str) -> bool:
        """Whether `collective` is a name this rule gives ("{function}" standing for any)."""
        head, marker, tail = self.name.partition("{function}")
        return collective == self.name if not marker else collective.startswith(head) and collective.endswith(tail)


@dataclass(frozen=True)
class FailedTaskRule:
    """A TensorFlow runtime line naming the task that failed (groups `job`, `task`), or, for a
    `leader` rule, saying that the coordination service on the job's leader stopped."""

    pattern: re.Pattern[str]
    says: str
    leader: bool = False


@dataclass(frozen=True)
class LoggedWaitRule:
    """A log line printed from inside a wait, and the Python frame that printed it."""

    pattern: re.Pattern[str]
    function: str
    file: str


@dataclass(frozen=True)
class JobRules:
    collectives: tuple[CollectiveRule, ...]
    peer_failure: tuple[re.Pattern[str], ...]
    failed_tasks: tuple[FailedTaskRule, ...] = ()
    # Text a waiting task's memory holds where its runtime kept the error of a call to a task that
    # failed: each hit is read as a line of its log, for the failed_tasks rules.
    memory_needles: tuple[bytes, ...] = ()
    logged_waits: tuple[LoggedWaitRule, ...] = ()

    def serves(self, collective: str | None) -> bool:
        """Whether the wait a collective rule named is a task's serving of the others."""
        return collective is not None and any(r.serving and r.names(collective) for r in self.collectives)


def _pattern(text: str | None) -> re.Pattern[str] | None:
    return re.compile(text) if text else None


@lru_cache(maxsize=1)
def job_rules(path: Path = RULES_FILE) -> JobRules:
    data = rulesdata.shipped(path, JOB_RULES)
    collectives = tuple(
        CollectiveRule(name=c["name"], python=_pattern(c.get("python")), file=_pattern(c.get("file")), native=_pattern(c.get("native")),
                       fallback=bool(c.get("fallback", False)), with_native=_pattern(c.get("with")), serving=bool(c.get("serving", False)))
        for c in data.get("collective", [])
    )
    peer = tuple(re.compile(p, re.IGNORECASE) for p in data.get("peer_failure", {}).get("patterns", []))
    failed = tuple(FailedTaskRule(re.compile(t["pattern"]), t["says"], bool(t.get("leader", False))) for t in data.get("failed_task", []))
    needles = tuple(n.encode() for n in data.get("peer_in_memory", {}).get("needles", []) if n)
    logged = tuple(LoggedWaitRule(re.compile(w["pattern"]), w["function"], w["file"]) for w in data.get("logged_wait", []))
    return JobRules(collectives=collectives, peer_failure=peer, failed_tasks=failed, memory_needles=needles, logged_waits=logged)
