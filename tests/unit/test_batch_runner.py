"""The batch's bookkeeping of a worker's two cores (runner.LocalBatch), over a real pipe: the
worker's "next" gets it the next core or "none", records come back in order, a worker that dies
has each of its cores analyzed again once, and one past its time is recorded as timed out while
the core it had besides goes back to the queue. (The batch on real cores and real worker
processes is tests/integration/test_batch.py.)"""

from __future__ import annotations

import multiprocessing
from collections import deque
from pathlib import Path

from coreanalyze.batch.inputs import CoreInput
from coreanalyze.batch.options import BatchOptions
from coreanalyze.batch.runner import LocalBatch, _Queue, _Task, _Worker
from coreanalyze.batch.store import BatchStore
from coreanalyze.batch.worker import base_record


class _Process:
    """Stands for a worker's process: alive until told otherwise."""

    def __init__(self) -> None:
        self.alive = True
        self.exitcode: int | None = None

    def is_alive(self) -> bool:
        return self.alive

    def join(self, timeout: float | None = None) -> None:
        pass

    def die(self, signal_number: int = 9) -> None:
        self.alive, self.exitcode = False, -signal_number


def _core(name: str) -> CoreInput:
    return CoreInput(path=f"/cores/{name}", size=1, mtime=0.0, compression=None, file_identity=name * 8)


def _worker() -> tuple[_Worker, object]:
    """A _Worker over a real pipe, with its far end (the worker's side) and a stand-in process."""
    ours, theirs = multiprocessing.Pipe()
    worker = _Worker.__new__(_Worker)
    worker.process, worker.conn, worker.tasks, worker.hint = _Process(), ours, deque(), None
    return worker, theirs


def _batch(tmp_path: Path) -> LocalBatch:
    out = tmp_path / "out"
    return LocalBatch(BatchOptions(out=out, jobs=1, timeout=60, grace=0), BatchStore(out), {}, None)


def _done(core: CoreInput):
    record = base_record(core)
    record.status = "ok"
    return ("done", record)


def test_next_gets_the_following_core_and_records_come_in_order(tmp_path):
    batch, queue = _batch(tmp_path), _Queue([_core("b"), _core("c")])
    worker, far = _worker()
    worker.assign(_core("a"), batch.limit)
    assert far.recv()[0] == "analyze"
    far.send(("next",))
    assert batch._service(worker, queue) == ([], False)
    assert far.recv() == ("analyze", _core("b"))
    assert [t.core.path for t in worker.tasks] == ["/cores/a", "/cores/b"]
    far.send(("claim", "bb" * 8))  # the newest core claims its content
    far.send(_done(_core("a")))
    records, dead = batch._service(worker, queue)
    assert far.recv() == ("claim-answer", True)
    assert [r.path for r in records] == ["/cores/a"] and not dead
    assert [t.core.path for t in worker.tasks] == ["/cores/b"] and worker.tasks[0].identity == "bb" * 8
    far.send(("next",))
    batch._service(worker, queue)
    assert far.recv() == ("analyze", _core("c"))
    far.send(("next",))
    far.send(_done(_core("b")))
    far.send(_done(_core("c")))
    records, _ = batch._service(worker, queue)
    assert far.recv() == ("none",)  # nothing left to send
    assert [r.path for r in records] == ["/cores/b", "/cores/c"] and not worker.tasks and not queue


def test_a_worker_that_dies_has_each_core_analyzed_again_once(tmp_path):
    batch, queue = _batch(tmp_path), _Queue([])
    worker, _far = _worker()
    worker.tasks.extend([_Task(_core("a"), float("inf")), _Task(_core("b"), float("inf"))])
    worker.process.die()
    records, dead = batch._service(worker, queue)
    assert dead and records == []
    assert batch._lost(worker, queue, "died by SIGKILL") == []
    assert [queue.pop(None).path, queue.pop(None).path] == ["/cores/a", "/cores/b"] and not queue
    again, _far = _worker()  # the replacement dies under "b" a second time
    again.tasks.extend([_Task(_core("c"), float("inf")), _Task(_core("b"), float("inf"))])
    lost = batch._lost(again, queue, "died by SIGKILL")
    assert [(r.path, r.status, r.reason) for r in lost] == [("/cores/b", "failed", "died by SIGKILL")]
    assert queue.pop(None).path == "/cores/c"


def test_a_core_past_its_time_is_timed_out_and_the_other_goes_back(tmp_path):
    batch, queue = _batch(tmp_path), _Queue([_core("z")])
    worker, _far = _worker()
    worker.tasks.extend([_Task(_core("a"), 0.0), _Task(_core("b"), float("inf"))])
    records = batch._timed_out(worker, queue)
    assert [(r.path, r.reason.startswith("timed out")) for r in records] == [("/cores/a", True)]
    assert not worker.tasks
    assert [queue.pop(None).path, queue.pop(None).path] == ["/cores/b", "/cores/z"]
