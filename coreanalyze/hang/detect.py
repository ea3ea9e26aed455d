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


# gdb's name for the frame of a signal trampoline: above it, a handler ran.
SIGNAL_TRAMPOLINE = "<signal handler called>"


def _crashing_on_its_own(thread: Thread | None, rules: HangRules, reraised: bool = False) -> bool:
    """reraised: the signal is the one a handler caught and raised again (coreanalyze.reraise),
    so the handler's raise() says nothing: only the frames it interrupted count."""
    if thread is None:
        return False
    frames = thread.frames[: rules.window]
    if reraised:
        last = max((i for i, f in enumerate(frames) if f.function == SIGNAL_TRAMPOLINE), default=-1)
        frames = thread.frames[last + 1 : last + 1 + rules.window]
    for frame in frames:
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
    if (
        name in rules.watchdog_signals
        and sent_by_other
        and not _crashing_on_its_own(report.crashed_thread, rules, reraised=bool(signal.reraised_by))
    ):
        return (
            f"{name} was sent by pid {signal.sender_pid} while no thread was crashing: "
            "a watchdog's or a person's snapshot of a process that stopped making progress"
        )
    return None
