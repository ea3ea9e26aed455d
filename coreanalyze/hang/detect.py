"""Is this core a snapshot of a live (stuck) process rather than the record of a crash?

A core with no fatal signal (gcore and `coreanalyze --pid` name SIGSTOP or nothing), or one
whose fatal signal another process sent (a watchdog's SIGABRT, `kill -QUIT`) while no thread
was crashing on its own, shows a process that was alive and stuck: a hang. So does a
watchdog's signal from within the process to a thread that waits for the GPU. A handler that
caught the signal and raised it again (faulthandler) is not the thread crashing: its frames
above the signal frame are left out.
"""

from __future__ import annotations

from coreanalyze.base.model import Report, Thread
from coreanalyze.hang.rules import HangRules
from coreanalyze.hang.waits import frame_name, gpu_wait

# si_code values of a signal sent with kill / tgkill / sigqueue (siginfo carries the sender).
SENT_CODES = frozenset({0, -1, -6})
TRAMPOLINE = "<signal handler called>"
# A re-raising handler's frames above its signal frame: faulthandler's are a handful.
MAX_HANDLER_FRAMES = 40


def _reraised_by_a_handler(thread: Thread | None, rules: HangRules) -> bool:
    """A signal frame with nothing above it but the raising of a signal: a handler (faulthandler,
    a crash reporter) caught the signal and raised it again (the core then names the thread
    itself as the sender)."""
    if thread is None:
        return False
    for frame in thread.frames[:MAX_HANDLER_FRAMES]:
        if frame.function == TRAMPOLINE:
            return True
        name = frame_name(frame)
        if frame.kind != "native" or (name and not rules.reraise_frames.search(name)):
            return False
    return False


def _own_frames(thread: Thread, reraised: bool) -> list:
    """The thread's frames as they were when the signal came: for a signal a handler caught
    and raised again (faulthandler), those below the handler's signal frame."""
    frames = thread.frames
    if reraised:
        # The last one: a handler may have re-raised into the handler it replaced.
        trampoline = max((i for i, f in enumerate(frames[:MAX_HANDLER_FRAMES]) if f.function == TRAMPOLINE), default=None)
        if trampoline is not None:
            return frames[trampoline + 1:]
    return frames


def _crashing_on_its_own(thread: Thread | None, rules: HangRules, reraised: bool = False) -> bool:
    if thread is None:
        return False
    for frame in _own_frames(thread, reraised)[: rules.window]:
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
    # A handler installed without SA_SIGINFO (faulthandler) leaves no siginfo in its frame: who
    # sent the signal it re-raised is unknown, so the frames it interrupted decide.
    origin_unknown = bool(signal.reraised_by) and signal.code is None
    sent = signal.code in SENT_CODES or origin_unknown
    sent_by_other = sent and signal.sender_pid not in (None, core.pid)
    crashed = report.crashed_thread
    reraised = bool(signal.reraised_by) or _reraised_by_a_handler(crashed, rules)
    if name not in rules.watchdog_signals or not sent or _crashing_on_its_own(crashed, rules, reraised):
        return None
    if sent_by_other:
        return (
            f"{name} was sent by pid {signal.sender_pid} while no thread was crashing: "
            "a watchdog's or a person's snapshot of a process that stopped making progress"
        )
    gpu = gpu_wait(crashed) if crashed is not None else None
    if gpu is not None:
        # A watchdog thread of the process itself (a collective's timeout, a framework's
        # hang detector) signalled the thread that waits for the GPU.
        return (
            f"{name} was sent to thread {crashed.tid} while it waited for the GPU in {gpu.api}: "
            "a watchdog's snapshot of a process stuck on the GPU"
        )
    if origin_unknown:
        return (
            f"{name} was caught and raised again by {signal.reraised_by}, and the code it interrupted was "
            "waiting, not crashing: a watchdog's or a person's snapshot of a process that stopped making progress"
        )
    return None
