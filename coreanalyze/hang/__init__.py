"""Hangs and deadlocks: snapshots of stuck processes (gcore, `--pid`, a watchdog's signal).

detect (is the core a snapshot?) -> waits (each thread's wait state, the object, its owner)
-> graph (wait-for edges, the deadlock cycle) -> tensorflow (named TensorFlow hangs) ->
verdict (classification with fault kind `hang`). snapshot takes a core of a live process.
The rules are data: hang/rules.toml.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coreanalyze.base.model import Classification, Report
from coreanalyze.hang.detect import snapshot_reason
from coreanalyze.hang.rules import hang_rules

if TYPE_CHECKING:
    from coreanalyze.process.process import Process


def classify_hang(report: Report, process: Process | None, classify_rules=None, reason: str | None = None) -> Classification | None:
    """The hang verdict when the core is a snapshot, else None (a crash: classify as one).
    reason: why the report is a snapshot, when the caller knows (a pasted text says so).

    Points report.crashing_thread at the thread the verdict is about (the first thread of a
    deadlock, the one a TensorFlow rule names, else the main thread)."""
    from coreanalyze.hang.verdict import hang_classification

    rules = hang_rules()
    reason = reason or snapshot_reason(report, rules)
    if reason is None:
        return None
    classification = hang_classification(report, process, reason, rules, classify_rules)
    tid = classification.hang.thread if classification.hang is not None else None
    if tid is not None:
        report.crashing_thread = tid
        for thread in report.threads:
            thread.crashed = thread.tid == tid
    return classification


__all__ = ["classify_hang", "hang_rules", "snapshot_reason"]
