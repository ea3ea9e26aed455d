"""The watcher's one loop: wait for anything (a tracee's stop or death, the reporter's answer,
a signal to the watcher), handle it, repeat until everything watched has ended.

The signals that wake it are blocked and taken with sigtimedwait, never by handlers: nothing
interrupts the watcher in the middle of a decision, and a stop that comes while it works leaves
SIGCHLD pending, so the next wait returns at once.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

from coreanalyze.capture import ptrace
from coreanalyze.capture.reporter import Reporter
from coreanalyze.capture.watcher import Watcher

# SIGUSR1 asks the watcher to step aside (a debugger wants the process); SIGTERM and SIGHUP
# are passed on to the command `run` started, as a shell would have it receive them.
WAKE_SIGNALS = (signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGHUP)
FORWARDED = (signal.SIGTERM, signal.SIGHUP)


@dataclass
class LoopResult:
    status: int | None  # the wait status of the command `run` started (None: none)
    stepped_aside: bool = False


def block_wake_signals() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, WAKE_SIGNALS)


def watch_until_done(watcher: Watcher, reporter: Reporter, say: Callable[[str], None], command: int | None = None) -> LoopResult:
    """Serve until the command (or, without one, every watched process) has ended and every
    report asked for is written."""
    stepped_aside = False
    while True:
        while (stop := ptrace.wait(block=False)) is not None:
            if stop.tid == reporter.pid:
                if stop.exited:
                    reporter.alive = False
                    say("the reporter ended unexpectedly; held processes are let go")
                    for pid in list(watcher.processes):
                        watcher.reported(pid)
                continue
            if stepped_aside:
                if stop.exited:
                    watcher.exits[stop.tid] = stop.status
                continue
            watcher.handle(stop)
        for reply in reporter.answers():
            if reply.error:
                say(f"process {reply.pid}: the report could not be made ({reply.error}); it is let go")
            else:
                say(f"process {reply.pid}: {reply.verdict}" + (f" -- report: {reply.html}" if reply.html else ""))
            watcher.reported(reply.pid)
        command_done = command is None or command in watcher.exits
        if command_done and reporter.outstanding <= 0 and (command is not None or not watcher.threads):
            return LoopResult(watcher.exits.get(command) if command is not None else None, stepped_aside)
        if not reporter.alive and reporter.outstanding > 0:
            reporter.outstanding = 0
        info = signal.sigtimedwait(WAKE_SIGNALS, 1.0)
        if info is None:
            continue
        if info.si_signo in FORWARDED and command is not None and command not in watcher.exits:
            try:
                os.kill(command, info.si_signo)
            except OSError:
                pass
        elif info.si_signo == signal.SIGUSR1 and not stepped_aside:
            stepped_aside = True
            watcher.release_all()
            say("stepping aside on request: the watched processes run on unwatched")
