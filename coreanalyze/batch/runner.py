"""Running a batch: find the cores, skip those already done, feed worker processes, keep every
result the moment it exists.

The batch process alone decides: which core goes to which worker (cores that look like the
same program go to the worker that just had one, whose warm gdb holds its libraries), whether a
core's content was already analyzed (claims), when a worker has overrun its time (it is killed
and the core recorded as timed out), and when to stop (Ctrl-C or SIGTERM: workers are ended,
what is done is kept, the summary is written).
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

from coreanalyze.batch.inputs import CoreInput, discover
from coreanalyze.batch.options import BatchOptions, default_jobs
from coreanalyze.batch.progress import Progress
from coreanalyze.batch.records import RecordKeeper
from coreanalyze.batch.since import BASELINE_FILE, baseline_from_summary
from coreanalyze.batch.store import BatchStore, CoreRecord
from coreanalyze.batch.summary import write_outputs
from coreanalyze.batch.worker import WorkerConfig, base_record, death_reason, end_child, worker_main
from coreanalyze.errors import AnalysisFailed, BadInput
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

    def pop(self, hint: str | None) -> CoreInput:
        key = hint if hint is not None and hint in self._groups else next(iter(self._groups))
        group = self._groups[key]
        core = group.popleft()
        if not group:
            del self._groups[key]
        return core


class _Worker:
    def __init__(self, ctx, config: WorkerConfig):
        parent_end, child_end = ctx.Pipe()
        self.process = ctx.Process(target=worker_main, args=(child_end, config), name="coreanalyze-batch-worker", daemon=True)
        try:
            self.process.start()
        except OSError as e:
            raise AnalysisFailed(f"cannot start a worker process: {e.strerror or e}") from None
        child_end.close()
        self.conn = parent_end
        self.task: CoreInput | None = None
        self.identity: str | None = None  # the content identity it claimed for its task
        self.duplicate_of: str | None = None  # when the claim was refused: the core it repeats
        self.deadline = float("inf")
        self.hint: str | None = None

    def assign(self, core: CoreInput, limit: float) -> None:
        self.task, self.identity, self.duplicate_of, self.hint = core, None, None, core.build_hint
        self.deadline = time.monotonic() + limit
        self.conn.send(("analyze", core))

    def finish(self) -> None:
        self.task, self.identity, self.deadline = None, None, float("inf")

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

    def _failed(self, worker: _Worker, reason: str) -> CoreRecord:
        assert worker.task is not None
        record = base_record(worker.task)
        record.identity = worker.identity or record.identity
        record.reason = reason
        return record

    def _service(self, worker: _Worker) -> CoreRecord | None:
        """Answer the worker's claims; its record once it is done (or dead)."""
        try:
            while worker.conn.poll():
                message = worker.conn.recv()
                if message[0] == "claim":
                    identity = message[1]
                    holder = self.claimed.get(identity)
                    owner = self.owners.get(identity)
                    # A plain file with this content is analyzed in its own right, whatever
                    # finishes decompressing first: the outcome never depends on timing.
                    fresh = holder is None and owner in (None, worker.task.path)
                    worker.duplicate_of = None if fresh else (holder or owner)
                    if fresh:
                        self.claimed[identity] = worker.task.path
                        worker.identity = identity
                        # Decompression had its own time; the analysis gets the full limit.
                        worker.deadline = time.monotonic() + self.limit
                    worker.conn.send(("claim-answer", fresh))
                elif message[0] == "done":
                    record = message[1]
                    if record.status == "duplicate":
                        record.duplicate_of = worker.duplicate_of
                    return record
        except (EOFError, OSError):
            worker.process.join(STOP_SECONDS)
        if not worker.process.is_alive():
            return self._failed(worker, death_reason(worker.process.exitcode))
        return None

    def _replace(self, index: int) -> None:
        self.workers[index].kill()
        self.workers[index] = _Worker(self.ctx, self.config)

    def run(self, pending: list[CoreInput], progress: Progress) -> None:
        self.note_owners(pending)
        queue = _Queue(pending)
        self.workers = [_Worker(self.ctx, self.config) for _ in range(min(self.options.jobs or default_jobs(), len(pending)))]
        while queue or any(w.task for w in self.workers):
            for w in self.workers:
                if w.task is None and queue:
                    w.assign(queue.pop(w.hint), self.limit)
            busy = [w for w in self.workers if w.task is not None]
            soonest = min(w.deadline for w in busy)
            waitables = [w.conn for w in busy] + [w.process.sentinel for w in busy]
            wait_for(waitables, timeout=min(POLL_SECONDS, max(0.0, soonest - time.monotonic())))
            now = time.monotonic()
            for index, w in enumerate(self.workers):
                if w.task is None:
                    continue
                record = self._service(w)
                if record is None and now >= w.deadline:
                    record = self._failed(w, f"timed out: no result within {self.options.timeout:g} s (+{self.options.grace:g} s grace)")
                    self._replace(index)
                elif record is not None and not w.process.is_alive():
                    self._replace(index)
                if record is not None:
                    self.workers[index].finish()
                    self.keep(record)
                    progress.advance(record)

    def shut_down(self) -> None:
        busy = [w for w in self.workers if w.task is not None]
        for w in busy:  # all at once: each gets its few seconds in parallel
            if w.process.is_alive():
                w.process.terminate()
        for w in self.workers:
            if w.task is not None:
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
    known = load_known(options.known_files, result.warnings)  # a damaged file: a warning, the batch goes on
    done = store.load(result.warnings)
    by_file = {r.file_identity: r for r in done}
    done_paths = {r.path for r in done}
    claimed = {r.identity: r.path for r in done if r.status != "duplicate"}
    pending: list[CoreInput] = []
    batch = _engine(options, store, claimed, on_record)
    for core in inputs:
        earlier = by_file.get(core.file_identity)
        if earlier is None:
            pending.append(core)
            continue
        result.skipped += 1
        if core.path not in done_paths:
            # The same bytes under a new name: recorded, never counted again.
            record = base_record(core)
            record.identity, record.status = earlier.identity, "duplicate"
            batch.keep(record)

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
