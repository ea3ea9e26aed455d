"""Is this core a snapshot of a live (stuck) process rather than the record of a crash?

A core with no fatal signal (gcore and `coreanalyze --pid` name SIGSTOP or nothing), or one
whose fatal signal another process sent (a watchdog's SIGABRT, `kill -QUIT`) while no thread
was crashing on its own, shows a process that was alive and stuck: a hang.
"""

from __future__ import annotations

from coreanalyze.hang.rules import HangRules
from coreanalyze.hang.waits import frame_name
from coreanalyze.model import Report, Thread

# si_code values of a signal sent with kill / tgkill / sigqueue (siginfo carries the sender).
SENT_CODES = frozenset({0, -1, -6})


def _crashing_on_its_own(thread: Thread | None, rules: HangRules) -> bool:
    if thread is None:
        return False
    for frame in thread.frames[: rules.window]:
        name = frame_name(frame)
        if name and any(p.search(name) for p in rules.faulting_frames):
            return True
    return False


def snapshot_reason(report: Report, rules: HangRules) -> str | None:
    """Why the core is a snapshot (one sentence for the evidence), or None for a crash."""
    core = report.core
    if core is None or report.source != "core":
        return None
    signal = core.signal
    if not signal.number:
        return "the core names no signal: it was written from a live process (gcore, coreanalyze --pid)"
    name = signal.name or ""
    if name in rules.stop_signals:
        return (
            f"the core names {name}, which only stops a process: it is a snapshot of a live process "
            "(gcore, coreanalyze --pid, a debugger), not the record of a crash"
        )
    sent_by_other = signal.code in SENT_CODES and signal.sender_pid not in (None, core.pid)
    if name in rules.watchdog_signals and sent_by_other and not _crashing_on_its_own(report.crashed_thread, rules):
        return (
            f"{name} was sent by pid {signal.sender_pid} while no thread was crashing: "
            "a watchdog's or a person's snapshot of a process that stopped making progress"
        )
    return None
