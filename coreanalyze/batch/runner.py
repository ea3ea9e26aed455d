"""Running a batch: find the cores, skip those already done, feed worker processes, keep every
result the moment it exists.

The batch process alone decides: which core goes to which worker (cores that look like the
same program go to the worker that just had one, whose warm gdb holds its libraries), whether a
core's content was already analyzed (claims), when a worker has overrun its time (it is killed
and the core recorded as timed out; a core it had besides is analyzed again), what becomes of
the cores of a worker that died (each is analyzed again, once), and when to stop (Ctrl-C or
SIGTERM: workers are ended, what is done is kept, the summary is written). A worker holds at
most two cores: it finishes one while its gdb loads the next (worker.py).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import threading
import time
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait as wait_for
from pathlib import Path
from typing import Any, Callable

from coreanalyze.base.errors import AnalysisFailed, BadInput
from coreanalyze.batch.inputs import CoreInput, discover
from coreanalyze.batch.options import BatchOptions, default_jobs
from coreanalyze.batch.progress import Progress
from coreanalyze.batch.records import RecordKeeper
from coreanalyze.batch.since import BASELINE_FILE, baseline_from_summary
from coreanalyze.batch.store import BatchStore, CoreRecord
from coreanalyze.batch.summary import write_outputs
from coreanalyze.batch.worker import WorkerConfig, base_record, death_reason, end_child, worker_main
from coreanalyze.known import load_known

STOP_SECONDS = 5.0  # how long a worker gets to clean up (its gdb) before SIGKILL
POLL_SECONDS = 1.0


@dataclass
class BatchResult:
    out: Path
    found: int  # cores found (in this shard)
    skipped: int  # done by an earlier run (--resume)
    this_run: Counter = field(default_factory=Counter)  # status -> cores finished now
    interrupted: bool = False
    summary: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    shrunk: int = 0  # --shrink: groups' examples shrunk in this run


class _Queue:
    """Pending cores grouped by their build hint, each group in discovery order."""

    def __init__(self, cores: list[CoreInput]):
        self._groups: OrderedDict[str | None, deque[CoreInput]] = OrderedDict()
        for core in cores:
            self._groups.setdefault(core.build_hint, deque()).append(core)

    def __bool__(self) -> bool:
        return bool(self._groups)

    def push_front(self, core: CoreInput) -> None:
        """A core to analyze again before the others of its group (its worker was lost)."""
        self._groups.setdefault(core.build_hint, deque()).appendleft(core)

    def pop(self, hint: str | None) -> CoreInput:
        key = hint if hint is not None and hint in self._groups else next(iter(self._groups))
        group = self._groups[key]
        core = group.popleft()
        if not group:
            del self._groups[key]
        return core


@dataclass
class _Task:
    core: CoreInput
    deadline: float
    identity: str | None = None  # the content identity it claimed
    duplicate_of: str | None = None  # when the claim was refused: the core it repeats


class _Worker:
    """A worker process and the cores it has: at most two, the first being finished while gdb
    loads the second (see worker.py's protocol); their records come in that order."""

    def __init__(self, ctx, config: WorkerConfig):
        parent_end, child_end = ctx.Pipe()
        self.process = ctx.Process(target=worker_main, args=(child_end, config), name="coreanalyze-batch-worker", daemon=True)
        try:
            self.process.start()
        except OSError as e:
            raise AnalysisFailed(f"cannot start a worker process: {e.strerror or e}") from None
        child_end.close()
        self.conn = parent_end
        self.tasks: deque[_Task] = deque()
        self.hint: str | None = None

    @property
    def busy(self) -> bool:
        return bool(self.tasks)

    @property
    def deadline(self) -> float:
        return min((t.deadline for t in self.tasks), default=float("inf"))

    def assign(self, core: CoreInput, limit: float) -> None:
        self.tasks.append(_Task(core, time.monotonic() + limit))
        self.hint = core.build_hint
        self.conn.send(("analyze", core))

    def stop(self) -> None:
        """An idle worker: ask it to leave."""
        try:
            self.conn.send(("stop",))
        except OSError:
            pass
        self.process.join(STOP_SECONDS)
        self.kill()

    def kill(self) -> None:
        end_child(self.process, self.conn, STOP_SECONDS)


class LocalBatch(RecordKeeper):
    """The cores analyzed by worker processes of this machine."""

    def __init__(self, options: BatchOptions, store: BatchStore, claimed: dict[str, str], on_record):
        super().__init__(options, store, claimed, on_record)
        self.ctx = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []
        self.lost_once: set[str] = set()  # cores whose worker died under them once

    def _failed(self, task: _Task, reason: str) -> CoreRecord:
        record = base_record(task.core)
        record.identity = task.identity or record.identity
        record.reason = reason
        return record

    def _service(self, worker: _Worker, queue: _Queue) -> tuple[list[CoreRecord], bool]:
        """Answer the worker's claims and requests for a next core; the records it finished,
        and whether it is dead (see _lost for its cores)."""
        records: list[CoreRecord] = []
        try:
            while worker.busy and worker.conn.poll():
                message = worker.conn.recv()
                if message[0] == "claim":
                    task = worker.tasks[-1]  # a core claims its content as it starts
                    identity = message[1]
                    holder = self.claimed.get(identity)
                    owner = self.owners.get(identity)
                    # A plain file with this content is analyzed in its own right, whatever
                    # finishes decompressing first: the outcome never depends on timing.
                    fresh = holder is None and owner in (None, task.core.path)
                    task.duplicate_of = None if fresh else (holder or owner)
                    if fresh:
                        self.claimed[identity] = task.core.path
                        task.identity = identity
                        # Decompression had its own time; the analysis gets the full limit.
                        task.deadline = time.monotonic() + self.limit
                    worker.conn.send(("claim-answer", fresh))
                elif message[0] == "next":
                    if queue:
                        self._assign(worker, queue.pop(worker.hint))
                    else:
                        worker.conn.send(("none",))
                elif message[0] == "done":
                    task = worker.tasks.popleft()
                    record = message[1]
                    if record.status == "duplicate":
                        record.duplicate_of = task.duplicate_of
                    records.append(record)
        except (EOFError, OSError):
            worker.process.join(STOP_SECONDS)
        return records, not worker.process.is_alive()

    def _lost(self, worker: _Worker, queue: _Queue, reason: str) -> list[CoreRecord]:
        """A worker that died: each core it had is analyzed again, once. A core under which a
        worker died twice is recorded with the reason: which of a worker's two cores killed it
        cannot be told, and the other one deserves its analysis."""
        records = []
        for task in reversed(worker.tasks):
            if task.core.path in self.lost_once:
                records.append(self._failed(task, reason))
            else:
                self.lost_once.add(task.core.path)
                queue.push_front(task.core)
        worker.tasks.clear()
        return records[::-1]

    def _assign(self, worker: _Worker, core: CoreInput) -> None:
        worker.assign(core, self.limit)
        self.started(core)

    def started(self, core: CoreInput) -> None:
        """A core was handed to a worker (`watch` counts its attempts across restarts here)."""

    def _replace(self, index: int) -> None:
        self.workers[index].kill()
        self.workers[index] = _Worker(self.ctx, self.config)

    def run(self, pending: list[CoreInput], progress: Progress) -> None:
        self.note_owners(pending)
        queue = _Queue(pending)
        # Workers of an earlier run() are kept (`watch` calls it for each arrival): their warm gdb
        # still holds the libraries.
        wanted = min(self.options.jobs or default_jobs(), len(pending))
        self.workers += [_Worker(self.ctx, self.config) for _ in range(wanted - len(self.workers))]
        for index, w in enumerate(self.workers):
            if not w.process.is_alive():  # died while idle (the OOM killer takes idle ones too)
                self._replace(index)
        while queue or any(w.busy for w in self.workers):
            for w in self.workers:
                if not w.busy and queue:
                    self._assign(w, queue.pop(w.hint))
            busy = [w for w in self.workers if w.busy]
            soonest = min(w.deadline for w in busy)
            waitables = [w.conn for w in busy] + [w.process.sentinel for w in busy]
            wait_for(waitables, timeout=min(POLL_SECONDS, max(0.0, soonest - time.monotonic())))
            for index, w in enumerate(self.workers):
                if not w.busy:
                    continue
                records, dead = self._service(w, queue)
                if dead:
                    records += self._lost(w, queue, death_reason(w.process.exitcode))
                    self._replace(index)
                elif w.busy and time.monotonic() >= w.deadline:
                    records += self._timed_out(w, queue)
                    self._replace(index)
                for record in records:
                    self.keep(record)
                    progress.advance(record)

    def _timed_out(self, worker: _Worker, queue: _Queue) -> list[CoreRecord]:
        """The cores past their time are recorded as timed out (the worker is then killed); a
        core it had besides goes back to the queue."""
        now = time.monotonic()
        reason = f"timed out: no result within {self.options.timeout:g} s (+{self.options.grace:g} s grace)"
        late = [t for t in worker.tasks if now >= t.deadline]
        for task in reversed([t for t in worker.tasks if now < t.deadline]):
            queue.push_front(task.core)
        worker.tasks.clear()
        return [self._failed(t, reason) for t in late]

    def shut_down(self) -> None:
        busy = [w for w in self.workers if w.busy]
        for w in busy:  # all at once: each gets its few seconds in parallel
            if w.process.is_alive():
                w.process.terminate()
        for w in self.workers:
            if w.busy:
                w.kill()
            else:
                w.stop()
        self.workers = []


def _engine(options: BatchOptions, store: BatchStore, claimed: dict[str, str], on_record) -> RecordKeeper:
    """Worker processes of this machine, or a Dask cluster's workers (--cluster)."""
    if options.cluster is None:
        return LocalBatch(options, store, claimed, on_record)
    from coreanalyze.batch.cluster import ClusterBatch

    return ClusterBatch(options, store, claimed, on_record)


def _interrupt_on_sigterm():
    """SIGTERM (a service stop, a scheduler's kill) ends the batch like Ctrl-C: cleanly."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def check_options(options: BatchOptions) -> None:
    """Mistakes that would fail every core fail the batch instead, before any work."""
    from coreanalyze.classify import load_rules

    if options.jobs is not None and options.jobs < 1:
        raise BadInput("--jobs must be at least 1")
    if options.since is not None and os.path.realpath(options.since) == os.path.realpath(options.out):
        raise BadInput("--since names --out itself: give the previous batch's output directory")
    if options.shrink and shutil.which(options.analyze.gdb) is None:
        # Shrinking runs here, whichever engine analyzes the cores.
        raise BadInput(f"--shrink needs gdb here: {options.analyze.gdb} not found (install gdb or pass --gdb PATH)")
    if options.cluster is not None:
        from coreanalyze.batch.cluster import check_cluster_options

        # --python, gdb and the rules must exist where the cores are analyzed: on the workers.
        check_cluster_options(options)
        return
    analyze = options.analyze
    if analyze.python and not os.path.isfile(analyze.python):
        raise BadInput(f"--python {analyze.python}: no such file")
    if shutil.which(analyze.gdb) is None:
        raise BadInput(f"gdb not found: {analyze.gdb} (install gdb or pass --gdb PATH)")
    load_rules(analyze.rules_files)  # a bad rules file is bad input


def run_batch(paths: list[str], options: BatchOptions, on_record: Callable[[CoreRecord], None] | None = None) -> BatchResult:
    """Analyze every core under `paths` into `options.out`; see the module docstring."""
    check_options(options)
    known = load_known(options.known_files)  # a file that cannot be used: one line, exit 2, before any work
    baseline = baseline_from_summary(options.since) if options.since is not None else None
    store = BatchStore(options.out)
    store.prepare(options.resume)
    if baseline is not None:
        store.write_output(BASELINE_FILE, json.dumps(baseline, indent=1, sort_keys=True) + "\n")
    inputs = discover(paths, exclude=[str(options.out)])
    if not inputs:
        raise BadInput(f"no core files found in {', '.join(paths)}")
    if options.shard is not None:
        inputs = [c for c in inputs if options.shard.owns(c.file_identity)]

    result = BatchResult(out=Path(options.out), found=len(inputs), skipped=0)
    done = store.load(result.warnings)
    claimed = {r.identity: r.path for r in done if r.status != "duplicate"}
    batch = _engine(options, store, claimed, on_record)
    pending, result.skipped = batch.sort_out(inputs, done)

    progress = Progress(len(inputs), result.skipped, options.progress)
    previous_sigterm = _interrupt_on_sigterm()
    try:
        try:
            if pending:
                batch.run(pending, progress)
        finally:
            try:
                batch.shut_down()
            finally:
                progress.close()
        if options.shrink:
            from coreanalyze.batch.shrinking import shrink_examples

            result.shrunk = shrink_examples(store, options, result.warnings)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        if previous_sigterm is not None:
            signal.signal(signal.SIGTERM, previous_sigterm)
    result.this_run = batch.counts
    records = store.load(result.warnings)
    result.summary = write_outputs(store, records, shard=options.shard, known=known)
    return result
