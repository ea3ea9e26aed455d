"""One builder at a time for a cache entry (coreanalyze/base/buildlock.py): a second process waits
for the first and then finds the entry; a wait that runs out builds anyway; a directory that
cannot hold the lock file is no lock, not an error."""

from __future__ import annotations

import multiprocessing
import time

from coreanalyze.base.buildlock import one_builder


def _hold(entry: str, seconds: float, ready) -> None:
    with one_builder(entry) as held:
        assert held
        ready.set()
        time.sleep(seconds)
        with open(entry, "w") as f:
            f.write("built")


def test_a_second_builder_waits_for_the_first_and_finds_the_entry(tmp_path):
    entry = tmp_path / "index" / "ab" / "cdef.idx"
    ready = multiprocessing.Event()
    first = multiprocessing.Process(target=_hold, args=(str(entry), 0.5, ready))
    first.start()
    try:
        assert ready.wait(30)
        with one_builder(entry) as held:
            # Only the first's release lets this one in, and it wrote the entry before that.
            assert held and entry.read_text() == "built"
    finally:
        first.join(30)


def test_a_wait_that_runs_out_builds_anyway(tmp_path):
    entry = tmp_path / "x.idx"
    ready = multiprocessing.Event()
    first = multiprocessing.Process(target=_hold, args=(str(entry), 1.5, ready))
    first.start()
    try:
        assert ready.wait(30)
        with one_builder(entry, wait=0.2) as held:
            assert held is False
    finally:
        first.join(30)


def test_no_room_for_the_lock_file_is_no_lock(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with one_builder(blocker / "sub" / "x.idx") as held:  # its directory cannot be made
        assert held is False
