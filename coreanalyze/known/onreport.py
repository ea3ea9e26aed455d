"""A known crash recognized on one report: classification.known, and the advice line it puts
first. The batch's workers, `coreanalyze CORE`, `triage` and `watch` all recognize it here."""

from __future__ import annotations

from typing import Any

from coreanalyze.base.model import Report
from coreanalyze.known import CrashFacts, KnownCrashes


def known_advice(known: dict[str, Any]) -> str:
    """The line a report's advice starts with when its crash is a known one."""
    text = f"Known crash: {known['title']}"
    if known.get("url"):
        text += f" ({known['url']})"
    if known.get("note"):
        text += f"; {known['note']}"
    return text + (f". {known['advice']}" if known.get("advice") else ".")


def recognize(report: Report, known: KnownCrashes, facts: CrashFacts | None = None) -> dict[str, Any] | None:
    """Match the report (or `facts`, a batch record's view of it) against the database; a match
    becomes classification.known and the first advice. None when no known crash matched."""
    if facts is None:
        from coreanalyze.known.facts import report_facts

        facts = report_facts(report)
    entry = known.match(facts)
    verdict = entry.verdict(facts) if entry is not None else None
    report.classification.known = verdict
    if verdict is not None:
        report.classification.advice.insert(0, known_advice(verdict))
    return verdict
