"""`coreanalyze batch ... --cluster ADDRESS`: the per-core work on the workers of a Dask cluster.

This process (the client) does all a local batch does except the analysis itself: it finds the
cores, skips those already done, writes each record and its reports the moment they arrive and
builds the summary, so the output directory is the same as a local batch's. Each core becomes
one task carrying the core's path (the workers read it from shared storage) that returns the
record and the report texts (cluster_worker.py). Dask places the tasks and survives failures:

- a worker that dies mid-core (SIGKILL, out of memory) makes the scheduler run that core on
  another worker; a core whose analysis has killed `distributed.scheduler.allowed-failures` + 1
  workers comes back as KilledWorker and is recorded as failed;
- a task that raises (a worker that does not see the file or lacks gdb) is retried;
- a core that overruns --timeout plus grace is recorded as timed out, and the worker stuck in it
  restarts (its nanny starts a fresh one).

`--cluster local:N` starts a LocalCluster of N single-threaded worker processes on this machine.
"""

from __future__ import annotations

import logging
import queue
import re
import signal
import threading
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from coreanalyze import __version__
from coreanalyze.base.errors import AnalysisFailed, BadInput
from coreanalyze.batch.inputs import CoreInput
from coreanalyze.batch.options import BatchOptions, default_jobs
from coreanalyze.batch.progress import Progress
from coreanalyze.batch.records import RecordKeeper
from coreanalyze.batch.store import ANALYZED, REPORTS_DIR, CoreRecord, record_from_dict
from coreanalyze.batch.worker import base_record

WORKER_WAIT_SECONDS = 60.0  # for a first worker to join a scheduler that has none
POLL_SECONDS = 1.0
# A result lost with the worker that held it (the worker died after the task finished, before
# the client fetched it) is computed again by the scheduler; how long to wait for that.
RECOMPUTE_WAIT_SECONDS = 300.0
TASK_RETRIES = 2  # for a task that raised (WorkerUnfit): worker deaths are the scheduler's count
MAX_REASON_CHARS = 2000
# A cluster started here: a worker holds one core at a time (worker-saturation 1.0 instead of
# Dask's 1.1, which would queue a second core on a single-threaded worker, where a worker's death
# would count against an innocent core too); a core may kill 3 workers before it is given up.
LOCAL_CLUSTER_CONFIG = {
    "distributed.scheduler.allowed-failures": 3,
    "distributed.scheduler.worker-saturation": 1.0,
}
INSTALL_HINT = "pip install 'coreanalyze[cluster]'"

_LOCAL = re.compile(r"^local(?::(\d{1,4}))?$")
_ADDRESS = re.compile(r"^(?:(tcp|tls)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$")


@dataclass(frozen=True)
class ClusterSpec:
    """Either a running scheduler to connect to, or a cluster to start here."""

    address: str | None = None  # tcp://HOST:PORT
    local_workers: int | None = None  # local:N

    def __str__(self) -> str:
        return self.address or f"local:{self.local_workers}"


def parse_cluster(text: str) -> ClusterSpec:
    text = text.strip()
    m = _LOCAL.match(text)
    if m:
        workers = int(m.group(1)) if m.group(1) else default_jobs()
        if workers < 1:
            raise BadInput(f"--cluster {text}: a local cluster needs at least 1 worker")
        return ClusterSpec(local_workers=workers)
    m = _ADDRESS.match(text)
    if not m or not 0 < int(m.group(3)) < 65536:
        raise BadInput(f"--cluster {text!r}: expected a Dask scheduler's address (tcp://HOST:PORT) or local:N")
    return ClusterSpec(address=f"{m.group(1) or 'tcp'}://{m.group(2)}:{m.group(3)}")


def require_distributed() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise BadInput(f"--cluster needs Dask distributed, which is not installed: {INSTALL_HINT}") from None


def check_cluster_options(options: BatchOptions) -> None:
    """What can be checked before any work; the workers are checked once connected."""
    parse_cluster(options.cluster or "")
    if options.jobs is not None:
        raise BadInput("--jobs applies to a local batch; with --cluster every worker thread analyzes one core at a time")
    require_distributed()


def _clip(text: str) -> str:
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS] + "…"


def _grouped(pending: list[CoreInput]) -> list[CoreInput]:
    """Cores that look like the same program next to each other (discovery order otherwise):
    the workers take tasks in this order, so their warm gdb finds the libraries loaded."""
    first_seen: dict[str | None, int] = {}
    for core in pending:
        first_seen.setdefault(core.build_hint, len(first_seen))
    return sorted(pending, key=lambda c: first_seen[c.build_hint])


class ClusterBatch(RecordKeeper):
    """A batch whose cores are analyzed by a Dask cluster's workers."""

    def __init__(self, options: BatchOptions, store, claimed: dict[str, str], on_record):
        super().__init__(options, store, claimed, on_record)
        self.spec = parse_cluster(options.cluster or "")
        self.client = None
        self.local_cluster = None
        self.name = f"coreanalyze-batch-{uuid.uuid4().hex[:16]}"
        self.registered = False
        self.quieted: list[tuple[logging.Logger, int]] = []  # loggers' levels to restore
        self.inflight: dict[str, tuple[Any, CoreInput]] = {}  # task key -> (future, core)
        self.key_of: dict[str, str] = {}  # core path -> task key
        self.lost: list[CoreInput] = []
        self.recomputing: dict[str, float] = {}  # task key -> when its result was found lost
        self.mailbox: queue.Queue = queue.Queue()  # finished tasks and workers' events

    # ------------------------------------------------------------------ connecting

    def connect(self) -> None:
        import dask
        from distributed import Client, LocalCluster

        if self.spec.local_workers is not None:
            # Worker processes inherit an ignored SIGINT (see cluster_worker.dask_setup).
            previous = _ignore_sigint()
            try:
                with dask.config.set(LOCAL_CLUSTER_CONFIG):
                    self.local_cluster = LocalCluster(
                        n_workers=self.spec.local_workers,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=None,
                        memory_limit=0,  # as in a local batch: no memory bound of Dask's own
                        silence_logs=logging.CRITICAL,  # the batch reports failures itself
                        preload=["coreanalyze.batch.cluster_worker"],
                    )
                    self.client = Client(self.local_cluster, set_as_default=False)
            except OSError as e:
                raise AnalysisFailed(f"cannot start a local Dask cluster: {e.strerror or e}") from None
            finally:
                if previous is not None:
                    signal.signal(signal.SIGINT, previous)
            return
        # Dask's client logs a lost scheduler with tracebacks; the batch says it in one line.
        self.quieted = _quiet_loggers("distributed")
        try:
            # Gives up after distributed.comm.timeouts.connect (Dask's setting; 30 s by default).
            self.client = Client(self.spec.address, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as e:
            raise BadInput(f"--cluster {self.spec}: cannot reach a Dask scheduler there: {_one_line(e)}") from None
        try:
            self.client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
        except TimeoutError:
            raise BadInput(
                f"--cluster {self.spec}: the scheduler has no workers (waited {WORKER_WAIT_SECONDS:g} s); "
                f"start some with `dask worker {self.spec.address} --nthreads 1`"
            ) from None

    def check_workers(self) -> None:
        """Every worker runs this version of coreanalyze and can analyze with these options."""
        from coreanalyze.batch.cluster_worker import worker_facts

        try:
            facts = self.client.run(worker_facts, self.config.options)
        except (OSError, TimeoutError):
            raise
        except Exception as e:  # noqa: BLE001 — whatever a worker without coreanalyze raises
            raise BadInput(f"--cluster {self.spec}: the workers cannot run coreanalyze ({_one_line(e)}); {INSTALL_HINT} on every worker") from None
        for address, fact in sorted(facts.items()):
            if fact["version"] != __version__:
                raise BadInput(f"worker {address} runs coreanalyze {fact['version']}, this machine {__version__}: install the same version everywhere")
            if fact["problem"]:
                raise BadInput(f"worker {address}: {fact['problem']}")

    # ------------------------------------------------------------------ running

    def run(self, pending: list[CoreInput], progress: Progress) -> None:
        self.note_owners(pending)
        self.connect()
        try:
            self._run(pending, progress)
        except (OSError, TimeoutError) as e:  # CommClosedError is an OSError
            raise AnalysisFailed(
                f"--cluster {self.spec}: lost the scheduler ({_one_line(e)}); what is done is kept: rerun with --resume"
            ) from None

    def _run(self, pending: list[CoreInput], progress: Progress) -> None:
        from coreanalyze.batch.cluster_worker import BatchWorkerPlugin, analyze_task

        self.check_workers()
        taken = {**self.owners, **self.claimed}
        plugin = BatchWorkerPlugin(self.name, replace(self.config, parent_pid=0), taken, self.limit)
        self.client.register_plugin(plugin, name=self.name)
        self.registered = True
        self.client.subscribe_topic(self.name, lambda event: self.mailbox.put(("event", event[1])))

        ordered = _grouped(pending)
        for index, core in enumerate(ordered):
            key = f"{self.name}-{index:07d}"
            future = self.client.submit(
                analyze_task, self.name, core, key=key, retries=TASK_RETRIES, priority=len(ordered) - index, pure=False
            )
            self.inflight[key] = (future, core)
            self.key_of[core.path] = key
            future.add_done_callback(lambda f: self.mailbox.put(("done", f.key)))

        while self.inflight:
            try:
                kind, message = self.mailbox.get(timeout=POLL_SECONDS)
            except queue.Empty:
                self._recomputed()
                continue
            record = self._overran(message) if kind == "event" else self._finished(message)
            if record is not None:
                self.keep(record)
                progress.advance(record)
        if self.lost:
            raise AnalysisFailed(
                f"the cluster lost {len(self.lost)} cores before analyzing them (first: {self.lost[0].path}); "
                f"what is done is kept: rerun with --resume"
            )

    def _finished(self, key: str) -> CoreRecord | None:
        entry = self.inflight.pop(key, None)
        if entry is None:
            return None  # already recorded (timed out)
        future, core = entry
        if future.status == "finished":
            return self._received(core, future.result())
        if future.status == "error":
            return self._failed_on_cluster(core, future.exception())
        if future.status in ("lost", "pending") and key not in self.recomputing:
            # Finished on a worker that died before the result was fetched: the scheduler runs
            # the task again for the future still held here.
            self.inflight[key] = entry
            self.recomputing[key] = time.monotonic()
            return None
        self.recomputing.pop(key, None)
        self.lost.append(core)  # cancelled or lost without our asking: not a fact about the core
        return None

    def _recomputed(self) -> None:
        """Futures whose lost results were computed again (or given up on) go back to _finished."""
        now = time.monotonic()
        for key, since in list(self.recomputing.items()):
            entry = self.inflight.get(key)
            if entry is None:
                self.recomputing.pop(key, None)
                continue
            status = entry[0].status
            if status in ("finished", "error", "cancelled"):
                self.recomputing.pop(key, None)
                self.mailbox.put(("done", key))
            elif now - since > RECOMPUTE_WAIT_SECONDS:
                self.mailbox.put(("done", key))  # still lost: _finished records it as lost

    def _overran(self, message: Any) -> CoreRecord | None:
        path = message.get("overran") if isinstance(message, dict) else None
        key = self.key_of.get(path) if isinstance(path, str) else None
        entry = self.inflight.pop(key, None) if key else None
        if entry is None:
            return None
        future, core = entry
        future.cancel()  # before its worker ends: no retry for a core that hangs
        record = base_record(core)
        record.reason = f"timed out: no result within {self.options.timeout:g} s (+{self.options.grace:g} s grace)"
        return record

    def _failed_on_cluster(self, core: CoreInput, error: BaseException | None) -> CoreRecord:
        from distributed.scheduler import KilledWorker

        record = base_record(core)
        if isinstance(error, KilledWorker):
            last = getattr(error.last_worker, "address", None) or "?"
            record.reason = (
                f"the analysis process died on {error.allowed_failures + 1} Dask workers (the last: {last}); "
                "not tried again (distributed.scheduler.allowed-failures)"
            )
        else:
            record.reason = _clip(f"not analyzed on the cluster: {_one_line(error)}")
        return record

    def _received(self, core: CoreInput, payload: Any) -> CoreRecord:
        """A worker's answer: checked like a record read from disk, reports written here."""
        try:
            record = record_from_dict(payload["record"])
            reports = payload["reports"]
            if record.path != core.path or record.file_identity != core.file_identity or not isinstance(reports, dict):
                raise ValueError("the answer is not about this core")
        except (TypeError, KeyError, ValueError) as e:
            failed = base_record(core)
            failed.reason = f"internal error: a worker's answer was unusable: {e}"
            return failed
        if record.status not in ANALYZED:
            return record
        holder = self.claimed.get(record.identity)
        if holder is not None and holder != record.path:
            # Two compressed files with the same content, neither known before decompression:
            # the first answer owns it, as the first claim does in a local batch.
            duplicate = base_record(core)
            duplicate.identity, duplicate.status, duplicate.duplicate_of = record.identity, "duplicate", holder
            duplicate.seconds = record.seconds
            return duplicate
        for relative in (record.report_json, record.report_html):
            if relative is not None:
                name = relative[len(REPORTS_DIR) + 1:]
                stem, extension = name[: name.rindex(".")], name[name.rindex("."):]
                text = reports.get(relative)
                if not isinstance(text, str):
                    failed = base_record(core)
                    failed.identity, failed.reason = record.identity, f"internal error: a worker's answer lacks {relative}"
                    return failed
                self.store.write_report(stem, extension, text)
        return record

    # ------------------------------------------------------------------ stopping

    def shut_down(self) -> None:
        """Cancel what is left, let the workers close their gdb pools, leave the cluster (and
        stop it when it was started here). Each step may fail when the scheduler is gone."""
        client, self.client = self.client, None
        local_cluster, self.local_cluster = self.local_cluster, None
        steps = []
        if client is not None:
            futures = [future for future, _ in self.inflight.values()]
            steps += [
                lambda: client.cancel(futures, force=True) if futures else None,
                lambda: client.unsubscribe_topic(self.name),
                lambda: client.unregister_worker_plugin(self.name) if self.registered else None,
                client.close,
            ]
        if local_cluster is not None:
            steps.append(local_cluster.close)
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001 — leaving a broken cluster must not hide the batch's outcome
                pass
        self.inflight.clear()
        for logger, level in self.quieted:
            logger.setLevel(level)
        self.quieted = []


def _quiet_loggers(prefix: str) -> list[tuple[logging.Logger, int]]:
    """Raise every logger under `prefix` to CRITICAL (Dask's logging configuration gives some
    of its children their own level); returns what to restore."""
    names = [prefix, *(n for n in list(logging.root.manager.loggerDict) if n.startswith(prefix + "."))]
    saved = []
    for name in names:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        logger.setLevel(logging.CRITICAL)
    return saved


def _ignore_sigint():
    """Ignore SIGINT for now; the handler to restore, or None off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.SIG_IGN)


def _one_line(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text}" if not isinstance(error, (OSError, TimeoutError)) else text
