"""Hang facts in words, for the verdict and every report format."""

from __future__ import annotations

from coreanalyze.base.model import DeadlockStep, ThreadWait
from coreanalyze.hang.graph import lock_name

STATE_WORDS = {
    "running": "running (on a CPU)",
    "mutex": "waiting on a lock",
    "condition": "waiting on a condition",
    "futex": "waiting on a futex",
    "gil": "waiting for the GIL",
    "join": "waiting for a thread or child to end",
    "io": "waiting for I/O",
    "sleep": "sleeping",
    "signal": "waiting for a signal",
    "gpu": "waiting for the GPU",
    "other-syscall": "in a system call",
    "unknown": "in an unknown state",
}


def _where(function: str | None, file: str | None, line: int | None) -> str:
    text = function or "??"
    if file:
        text += f" ({file.rsplit('/', 1)[-1]}{f':{line}' if line else ''})"
    return text


def describe_wait(w: ThreadWait) -> str:
    """'thread 12 waiting on a lock (mutex 0x55..., held by thread 13) in post_transfer (x.c:14)'."""
    text = f"thread {w.tid} {STATE_WORDS.get(w.state, w.state)}"
    detail = []
    if w.state in ("mutex", "gil", "futex", "condition") and (w.object is not None or w.state == "gil"):
        detail.append(lock_name(w))
    elif w.object_kind and w.state not in ("running",):
        detail.append(w.object_kind)
    if w.owner is not None:
        detail.append(f"held by thread {w.owner}")
    if w.syscall and w.state in ("io", "sleep", "other-syscall", "signal"):
        detail.append(w.syscall)
    if detail:
        text += f" ({', '.join(detail)})"
    if w.holds_gil:
        text += ", holding the GIL"
    if w.function:
        text += f" in {_where(w.function, w.file, w.line)}"
    return text


def describe_step(step: DeadlockStep) -> str:
    return (
        f"thread {step.tid} holds {step.holds} and waits for {step.wants}, held by thread {step.waits_for}, "
        f"in {_where(step.function, step.file, step.line)}"
    )
