"""coreanalyze.process.forked: work done in a forked child when the process has no other thread, else
in a thread; a failure is a None result either way (the caller does the work again)."""

from __future__ import annotations

import os
import threading

from coreanalyze.base import background
from coreanalyze.corefile import memory
from coreanalyze.process import forked


def _square_beside(n: int, _memory: object) -> int:
    return n * n


def _pid_and_square(n: int) -> tuple[int, int]:
    return os.getpid(), n * n


def _niceness() -> int:
    return os.nice(0)


def _fails() -> None:
    raise ValueError("a damaged core")


def test_alone_the_work_runs_in_a_child_and_its_answer_comes_back():
    assert threading.active_count() == 1
    job = forked.start("square", _pid_and_square, 12)
    assert isinstance(job, forked.ForkedJob)
    pid, square = job.result()
    assert square == 144 and pid != os.getpid()
    assert job.done and job.result() == (pid, 144)  # read once, kept


def test_the_child_yields_the_cpu_to_the_debugger_the_analysis_waits_for():
    assert threading.active_count() == 1
    job = forked.start("niceness", _niceness)
    assert isinstance(job, forked.ForkedJob)
    assert job.result() == min(19, os.nice(0) + forked.CHILD_NICENESS)


def test_a_child_that_fails_answers_none_and_is_not_done():
    job = forked.start("fails", _fails)
    assert job.result() is None and not job.done  # as a failed background.Job: the caller recomputes


def test_with_another_thread_or_an_observer_of_reads_the_work_runs_in_a_thread():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        job = forked.start("square", _pid_and_square, 3)
        assert isinstance(job, background.Job) and job.result() == (os.getpid(), 9)
    finally:
        stop.set()
        other.join()
    # A core's memory whose reads are recorded (coreanalyze.shrink) is read in this process.
    recorded = memory.BytesMemory({0x1000: b"\0" * 8})
    recorded.observer = lambda *a: None
    assert isinstance(forked.start("square", _square_beside, 3, recorded), background.Job)
