"""The background scheduler: a job's value where it is awaited, its error kept, not raised."""

from __future__ import annotations

import threading

from coreanalyze.base import background


def test_a_job_runs_in_its_own_thread_and_gives_its_value():
    job = background.start("sum", lambda a, b: (a + b, threading.current_thread().name), 2, 3)
    assert job.result() == (5, "sum") and job.done and job.error is None


def test_a_failing_job_keeps_its_error_for_the_caller():
    def fail():
        raise ValueError("broken core")

    job = background.start("fails", fail)
    assert job.result() is None and not job.done
    assert isinstance(job.error, ValueError)
