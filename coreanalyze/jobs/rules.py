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


@dataclass(frozen=True)
class JobRules:
    collectives: tuple[CollectiveRule, ...]
    peer_failure: tuple[re.Pattern[str], ...]


def _pattern(text: str | None) -> re.Pattern[str] | None:
    return re.compile(text) if text else None


@lru_cache(maxsize=1)
def job_rules(path: Path = RULES_FILE) -> JobRules:
    data = rulesdata.shipped(path, JOB_RULES)
    collectives = tuple(
        CollectiveRule(name=c["name"], python=_pattern(c.get("python")), file=_pattern(c.get("file")), native=_pattern(c.get("native")),
                       fallback=bool(c.get("fallback", False)))
        for c in data.get("collective", [])
    )
    peer = tuple(re.compile(p, re.IGNORECASE) for p in data.get("peer_failure", {}).get("patterns", []))
    return JobRules(collectives=collectives, peer_failure=peer)
