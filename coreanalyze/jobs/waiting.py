"""One rank's part in its job's failure, from its own report: it crashed on its own, it was
blocked waiting for its peers (and in what), or someone ended it while it ran.

A core of a rank that waited is a hang snapshot (classification.hang: a watchdog's or a
launcher's signal found every thread waiting) or a rank that aborted itself because of its
peers (NCCL's watchdog timeout, a closed connection: jobs/rules.toml's peer_failure). The
collective it waited in is the first frame, innermost first, any thread, that a [[collective]]
rule names; its Python line is the program's own innermost line on the waiting thread.
"""

from __future__ import annotations

import re

from coreanalyze.base.model import Frame, JobWait, Report, Thread
from coreanalyze.base.vocabulary import FaultKind, FrameKind
from coreanalyze.jobs.rules import CollectiveRule, JobRules, job_rules

MAX_FRAMES = 200  # per thread, innermost first: a collective is never deeper
MAX_MESSAGE_CHARS = 300
# A Python frame in these is a library's, not the program's line.
_LIBRARY_FILE = re.compile(r"/(site|dist)-packages/|/lib/python3\.\d+/|^<frozen ")


def _own_name(function: str) -> str:
    """`c10d::ProcessGroupGloo::runLoop()` -> `runLoop`; `all_reduce` stays."""
    name = function.split("(", 1)[0].split("<", 1)[0]
    return name.rsplit("::", 1)[-1] or function


def _collective_of(frame: Frame, rules: tuple[CollectiveRule, ...]) -> str | None:
    function = frame.function or ""
    if not function:
        return None
    for rule in rules:
        if frame.kind == FrameKind.PYTHON:
            if rule.python is None or not rule.python.search(function):
                continue
            if rule.file is not None and not rule.file.search(frame.file or ""):
                continue
        elif rule.native is None or not rule.native.search(function):
            continue
        return rule.name.replace("{function}", _own_name(function))
    return None


def collective_in(threads: list[Thread], first: Thread | None, rules: JobRules) -> tuple[str | None, Thread | None]:
    """The collective named by the first matching frame: the waiting thread's first, then the others'."""
    ordered = ([first] if first is not None else []) + [t for t in threads if t is not first]
    present = [r for r in rules.collectives if r.with_native is None or _any_native(threads, r.with_native)]
    main = tuple(r for r in present if not r.fallback)
    fallback = tuple(r for r in present if r.fallback)
    # Python frames name the call as the program made it: they go first on each thread; a
    # transport's wait comes last, under whatever collective called it.
    for kinds, tried in (((FrameKind.PYTHON,), main), ((FrameKind.NATIVE,), main), ((FrameKind.PYTHON, FrameKind.NATIVE), fallback)):
        for thread in ordered:
            for frame in thread.frames[:MAX_FRAMES]:
                if frame.kind in kinds:
                    name = _collective_of(frame, tried)
                    if name:
                        return name, thread
    return None, None


def _any_native(threads: list[Thread], pattern: re.Pattern[str]) -> bool:
    """Whether some thread is in a native frame the pattern names (a rule's `with`)."""
    return any(f.kind != FrameKind.PYTHON and f.function and pattern.search(f.function) for t in threads for f in t.frames[:MAX_FRAMES])


def program_line(thread: Thread | None, own_only: bool = False) -> Frame | None:
    """The innermost Python frame of the program itself (else, unless own_only, the innermost
    Python frame)."""
    if thread is None:
        return None
    python = [f for f in thread.frames[:MAX_FRAMES] if f.kind == FrameKind.PYTHON]
    own = [f for f in python if f.file and not _LIBRARY_FILE.search(f.file)]
    return (own or ([] if own_only else python) or [None])[0]


def peer_failure_message(texts: list[str | None], rules: JobRules | None = None) -> str | None:
    """The first text that says the rank's peers failed or stopped answering."""
    rules = rules or job_rules()
    for text in texts:
        if text and any(p.search(text) for p in rules.peer_failure):
            return text[:MAX_MESSAGE_CHARS]
    return None


def _main_thread(report: Report) -> Thread | None:
    pid = report.core.pid if report.core is not None else None
    return report.thread(pid) or (report.threads[0] if report.threads else None)


def rank_state(report: Report, rules: JobRules | None = None) -> tuple[str, JobWait | None]:
    """(state, what it waited in): crashed, waiting, killed (ended while running) or stuck
    (a snapshot whose threads wait, but in no collective: what the others may wait for)."""
    rules = rules or job_rules()
    cls = report.classification
    if cls.fault_kind == FaultKind.HANG:
        hang = cls.hang
        waiting = report.thread(hang.thread) if hang is not None and hang.thread is not None else None
        waiting = _main_thread(report) if waiting is None else waiting
        name, thread = collective_in(report.threads, waiting, rules)
        wait = _wait(name, thread or waiting, report, rules)
        return ("waiting" if name else "stuck"), wait
    message = peer_failure_message([cls.abort_message, cls.summary, cls.detail], rules)
    if message is not None:
        thread = report.crashed_thread
        name, found = collective_in(report.threads, thread, rules)
        wait = _wait(name, found or thread, report, rules)
        wait.message = message
        return "waiting", wait
    if cls.fault_kind == FaultKind.SENT_SIGNAL:
        return "killed", None
    return "crashed", None


def _wait(collective: str | None, thread: Thread | None, report: Report, rules: JobRules) -> JobWait:
    wait = JobWait(collective=collective, serving=rules.serves(collective))
    hang = report.classification.hang
    if hang is not None and thread is not None:
        state = next((t for t in hang.threads if t.tid == thread.tid), None)
        wait.function = state.function if state is not None else None
    # The program's own line: on the waiting thread, else on the main thread (a library's
    # thread, such as a coordinator's, runs no line of the program), else a library's line.
    main = _main_thread(report)
    line = program_line(thread, own_only=True) or program_line(main, own_only=True) or program_line(thread) or program_line(main)
    if line is not None:
        wait.file, wait.line, wait.python_function = line.file, line.line, line.function
    return wait


def sender_of(report: Report) -> str | None:
    """Who sent the signal that ended the process, in words, as far as the core alone tells."""
    core = report.core
    if core is None or core.signal.sender_pid is None:
        return None
    pid = core.signal.sender_pid
    if core.ppid is not None and pid == core.ppid:
        return f"its parent process (pid {pid})"
    if core.pid is not None and pid == core.pid:
        return None  # the process's own raise/abort
    return f"pid {pid}"
