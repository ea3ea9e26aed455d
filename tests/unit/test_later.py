"""Work for later analyses: queued while the command line defers it, then done by a detached
process after the report, which whoever needs the cache whole can wait for."""

from __future__ import annotations

import os
import time
from pathlib import Path

from coreanalyze.base import later


def _write_when_allowed(gate: str, target: str) -> None:
    # The detached process may go on only once the test, whose call to detach() has returned,
    # opens the gate: the work cannot be the caller's own.
    deadline = time.monotonic() + 60
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)
    Path(target).write_text(str(os.getpid()))


def test_deferred_work_is_done_by_a_detached_process_after_the_caller_returns(tmp_path):
    gate, target = tmp_path / "gate", tmp_path / "done"
    with later.deferring():
        later.add("write", _write_when_allowed, str(gate), str(target))
        later.add("write", _write_when_allowed, str(gate), str(target))  # the same work once
        assert later.deferred() and not target.exists()
    later.detach(str(tmp_path / "cache"))
    assert not target.exists()
    gate.touch()
    later.wait_for_detached(str(tmp_path / "cache"))
    assert target.exists() and int(target.read_text()) != os.getpid()
    later.run_queued()  # nothing is left queued here


def test_without_deferring_the_work_runs_in_a_thread_waited_for(tmp_path):
    target = tmp_path / "done"
    (tmp_path / "gate").touch()
    later.add("write", _write_when_allowed, str(tmp_path / "gate"), str(target))
    later.wait()
    assert int(target.read_text()) == os.getpid()


def test_failing_work_is_no_error_of_the_caller(tmp_path):
    def fail() -> None:
        raise OSError("disk full")

    later.add("fail", fail)
    later.wait()
    with later.deferring():
        later.add("fail", fail)
    later.detach(None)  # no cache to lock: still detached, still quiet
    later.wait_for_detached(str(tmp_path / "nowhere"))
