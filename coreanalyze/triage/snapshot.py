"""A pasted stack of a stuck process rather than a crashed one: `thread apply all bt` of a
gcore or of a live process, where no signal is named and every thread waits.

Such a text gets the hang verdict a snapshot core gets (fault kind `hang`, who waits on whom,
the named TensorFlow hangs such as a fork()ed child waiting for pool threads it does not have).
"""

from __future__ import annotations

import re
from typing import Sequence

from coreanalyze.base.model import Report, Thread
from coreanalyze.hang.rules import HangRules
from coreanalyze.hang.waits import waiting_frame
from coreanalyze.triage import findings as fd

# What a user writes about a process that stopped making progress.
_WORDS = re.compile(r"(?i)\b(?:gcore|hangs?|hanging|hung|stuck|deadlock(?:s|ed)?|freez(?:e|es|ing)|frozen|not responding)\b")


def _waits(thread: Thread, rules: HangRules) -> bool:
    """Its innermost frames are waiting primitives (futex, a condition variable, a barrier)."""
    position = waiting_frame(thread, rules)
    return position is not None and position > 0 and thread.frames[0].kind == "native"


def snapshot_reason(report: Report, context: Sequence[tuple[int, str, bool]], rules: HangRules) -> str | None:
    """Why the text shows a stuck process (one sentence for the evidence), or None."""
    if report.core is None or report.core.signal.name is not None:
        return None
    threads = [t for t in report.threads if t.frames]
    if not threads or not all(_waits(t, rules) for t in threads):
        return None
    if any(f.function == fd.SIGNAL_HANDLER_FRAME for t in threads for f in t.frames):
        return None  # a crash handler ran (KCrash waiting for its helper): a crash, not a snapshot
    said = next((line for _, line, _ in context if _WORDS.search(line)), None)
    reason = "the text names no signal and every thread it shows waits: a snapshot of a live process, not a crash"
    if said is not None:
        reason += f" (the report says: {' '.join(said.split())[:160]})"
    return reason
