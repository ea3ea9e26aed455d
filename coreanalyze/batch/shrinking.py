"""`batch --shrink`: each crash group's example core shrunk to attach to a ticket
(coreanalyze.shrink), written to OUT/shrunk/ and named in the example's record; where the example
is a job's root cause, every other rank of that job too (each one's part is in the job's verdict).

Shrinking analyzes a core again, several times over (shrink/run.py), so it runs once the
batch's analyses are done and only for one core per group (and a job's other ranks), each in a child process of its own
(up to --jobs at once) that is stopped when it overruns its limit. A core that cannot be shrunk
is a warning; the batch stands. A group whose example already has its shrunk core (--resume) is
left as it is.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import deque
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for

from coreanalyze.base.errors import AnalysisFailed
from coreanalyze.batch.jobs import other_ranks
from coreanalyze.batch.options import BatchOptions, default_jobs
from coreanalyze.batch.store import ANALYZED, BatchStore, CoreRecord, report_stem
from coreanalyze.batch.summary import group_examples
from coreanalyze.batch.worker import become_worker, death_reason, end_child
from coreanalyze.pipeline.analyze import AnalyzeOptions

# A shrink analyzes its core about three times and lets gdb print every backtrace a few rounds
# (shrink/run.py), each bounded by --timeout; past this many of them it is stopped.
TIMEOUTS_PER_SHRINK = 8
STOP_SECONDS = 5.0  # how long a stopped child gets to end its gdb before SIGKILL
POLL_SECONDS = 1.0
MAX_REASON_CHARS = 300


def _shrink_main(conn, core: str, output: str, options: AnalyzeOptions, parent_pid: int) -> None:
    """Entry point of the child process that shrinks one core."""
    become_worker(parent_pid)
    from coreanalyze.base.errors import CoreAnalyzeError
    from coreanalyze.shrink import shrink_core

    try:
        result = shrink_core(core, output, options, compress=True)
        conn.send(("done", result.written))
    except CoreAnalyzeError as e:
        conn.send(("failed", str(e)))
    except Exception as e:  # noqa: BLE001
        # A core can break the shrinking in ways nobody foresaw; the batch goes on without it.
        conn.send(("failed", f"internal error: {type(e).__name__}: {e}"))


@dataclass
class _Job:
    record: CoreRecord
    relative: str  # the shrunk core's path in the output directory
    process: multiprocessing.process.BaseProcess
    conn: Connection
    deadline: float
    limit: float

    def outcome(self) -> int | str | None:
        """The shrunk core's size, why it failed, or None while it runs."""
        try:
            if self.conn.poll():
                message = self.conn.recv()
                self.process.join(STOP_SECONDS)  # it has said all; let it end by itself
                return message[1] if message[0] == "done" else str(message[1])
        except (EOFError, OSError):
            self.process.join(STOP_SECONDS)
        if not self.process.is_alive():
            return death_reason(self.process.exitcode, "the shrinking process")
        if time.monotonic() >= self.deadline:
            return f"timed out: not done within {self.limit:g} s"
        return None

    def stop(self) -> None:
        end_child(self.process, self.conn, STOP_SECONDS)


def _start(ctx, store: BatchStore, record: CoreRecord, options: AnalyzeOptions, limit: float) -> _Job:
    target, relative = store.shrunk_path(report_stem(record.path, record.identity))
    parent_end, child_end = ctx.Pipe(duplex=False)
    process = ctx.Process(
        target=_shrink_main, args=(child_end, record.path, str(target), options, os.getpid()),
        name="coreanalyze-batch-shrink", daemon=True,
    )  # fmt: skip
    try:
        process.start()
    except OSError as e:
        raise AnalysisFailed(f"cannot start a process to shrink cores: {e.strerror or e}") from None
    child_end.close()
    return _Job(record, relative, process, parent_end, time.monotonic() + limit, limit)


def shrink_examples(store: BatchStore, options: BatchOptions, warnings: list[str]) -> int:
    """Shrink every group's example, and every other rank of a job it stands for, that has no
    shrunk core yet; returns how many were written."""
    records = store.load()
    chosen = group_examples(records)
    chosen += other_ranks([r for r in records if r.status in ANALYZED], chosen)
    examples = [r for r in chosen if not (r.shrunk and (store.out / r.shrunk).is_file())]
    return len(shrink_records(store, examples, options, warnings))


def shrink_records(store: BatchStore, records: list[CoreRecord], options: BatchOptions, warnings: list[str]) -> list[CoreRecord]:
    """Shrink each record's core into OUT/shrunk/ (`watch` shrinks the cores its policy keeps
    small); the records written with their shrunk core, each already stored."""
    todo = deque(records)
    if not todo:
        return []
    try:
        store.shrunk.mkdir(exist_ok=True)
    except OSError as e:
        raise AnalysisFailed(f"cannot create {store.shrunk}: {e.strerror or e}") from None
    ctx = multiprocessing.get_context("spawn")
    limit = options.timeout * TIMEOUTS_PER_SHRINK + options.grace
    analyze = replace(options.analyze, timeout=options.timeout)
    jobs = min(options.jobs or default_jobs(), len(todo))
    running: list[_Job] = []
    written: list[CoreRecord] = []
    try:
        while todo or running:
            while todo and len(running) < jobs:
                running.append(_start(ctx, store, todo.popleft(), analyze, limit))
            wait_for([j.conn for j in running] + [j.process.sentinel for j in running], timeout=POLL_SECONDS)
            for job in list(running):
                outcome = job.outcome()
                if outcome is None:
                    continue
                running.remove(job)
                job.stop()
                if isinstance(outcome, int):
                    written.append(replace(job.record, shrunk=job.relative, shrunk_size=outcome))
                    store.write(written[-1])
                else:
                    warnings.append(f"{job.record.path}: not shrunk: {outcome[:MAX_REASON_CHARS]}")
    finally:
        for job in running:
            job.stop()
    return written

