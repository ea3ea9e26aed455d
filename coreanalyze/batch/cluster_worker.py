"""The Dask side of a cluster batch: what a Dask worker holds for its life, and the task that
analyzes one core there.

A worker joins a batch through BatchWorkerPlugin, which the batch's client registers with the
scheduler; the scheduler hands it to every worker, those that join later included. The plugin
holds what a local batch worker process holds for its life — a pool of warm gdb processes
(one per thread that runs tasks) — and what every task needs: the analysis options and the
contents already taken by another core. A task carries the PATH of a core, which the worker
reads from storage it shares with the client, and returns the core's record and its report
texts: never core bytes, and nothing is written on the worker; the client writes the batch.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from distributed import WorkerPlugin, get_worker

from coreanalyze import __version__
from coreanalyze.base.errors import BadInput
from coreanalyze.batch.inputs import CoreInput
from coreanalyze.batch.store import REPORTS_DIR
from coreanalyze.batch.worker import WorkerConfig, analyze_one, close_gdb_pool, open_gdb_pool
from coreanalyze.pipeline.analyze import AnalyzeOptions

# After telling the client that a core overran its time, how long the worker waits for the
# analysis to come back by itself before ending the worker process (its only way out of a hang).
OVERRUN_EXIT_SECONDS = 2.0
OVERRUN_EXIT_STATUS = 70
# A pool not used for this long is closed: a client killed without unregistering its plugin
# must not leave warm gdb processes (GiBs with TensorFlow loaded) on every worker for ever.
IDLE_POOL_SECONDS = 600.0
REAPER_PERIOD = 60.0


class WorkerUnfit(Exception):
    """This worker cannot analyze the core (it does not see the file, lacks gdb ...): Dask
    retries the task, with luck on another worker."""


def worker_problem(options: AnalyzeOptions) -> str | None:
    """What makes this machine unable to analyze any core with these options, or None."""
    from coreanalyze.classify import load_rules

    if shutil.which(options.gdb) is None:
        return f"gdb not found: {options.gdb} (install gdb or pass --gdb PATH)"
    if options.python and not os.path.isfile(options.python):
        return f"--python {options.python}: no such file here (it must be at the same path on every worker)"
    if options.sysroot and not os.path.exists(options.sysroot):
        return f"--sysroot {options.sysroot}: no such directory or image here (it must be at the same path on every worker)"
    try:
        load_rules(options.rules_files)
    except BadInput as e:
        return str(e)
    return None


def worker_facts(options: AnalyzeOptions) -> dict[str, Any]:
    """Run on every worker before a batch starts (Client.run): its version and any problem."""
    return {"version": __version__, "problem": worker_problem(options)}


class BatchWorkerPlugin(WorkerPlugin):
    """One batch's state on one Dask worker, from the batch's start to its end."""

    idempotent = False

    def __init__(self, name: str, config: WorkerConfig, taken: dict[str, str], limit: float):
        self.name = name  # unique per batch run; also the topic of its events
        self.config = config
        # Content identity -> the core that has it: claimed by an earlier run (--resume) or by
        # the plain file that owns it. The client settles the rest as records arrive.
        self.taken = taken
        self.limit = limit  # --timeout plus grace: beyond it the worker gives up on itself

    # ------------------------------------------------------------------ worker lifetime

    def setup(self, worker) -> None:
        self._worker = worker
        self._lock = threading.Lock()
        self._pools: dict[int, Any] = {}  # thread id -> its gdb pool (or None: none here)
        self._last_used: dict[int, float] = {}
        self._busy: set[int] = set()
        self._stop = threading.Event()
        reaper = threading.Thread(target=self._reap_idle_pools, name=f"{self.name}-reaper", daemon=True)
        reaper.start()

    def teardown(self, worker) -> None:  # noqa: ARG002
        self._stop.set()
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            close_gdb_pool(pool)

    def _pool(self) -> Any:
        thread = threading.get_ident()
        with self._lock:
            self._busy.add(thread)
            if thread in self._pools:
                return self._pools[thread]
        pool = open_gdb_pool(self.config)
        with self._lock:
            self._pools[thread] = pool
        return pool

    def _release(self) -> None:
        thread = threading.get_ident()
        with self._lock:
            self._busy.discard(thread)
            self._last_used[thread] = time.monotonic()

    def _reap_idle_pools(self) -> None:
        while not self._stop.wait(REAPER_PERIOD):
            now = time.monotonic()
            with self._lock:
                idle = [t for t in self._pools if t not in self._busy and now - self._last_used.get(t, now) > IDLE_POOL_SECONDS]
                pools = [self._pools.pop(t) for t in idle]
            for pool in pools:
                close_gdb_pool(pool)

    # ------------------------------------------------------------------ one core

    def analyze(self, core: CoreInput) -> dict[str, Any]:
        if not os.path.isfile(core.path):
            raise WorkerUnfit(f"{core.path}: not readable on {self._worker.address} (the cores must be on storage every worker mounts at the same path)")
        problem = worker_problem(self.config.options)
        if problem:
            raise WorkerUnfit(f"{self._worker.address}: {problem}")

        reports: dict[str, str] = {}

        def keep_report(stem: str, extension: str, text: str) -> str:
            relative = f"{REPORTS_DIR}/{stem}{extension}"
            reports[relative] = text
            return relative

        def claim(identity: str) -> bool:
            return self.taken.get(identity) in (None, core.path)

        try:
            with self._watchdog(core):
                record = analyze_one(core, self.config, claim, self._pool(), write_report=keep_report)
        finally:
            self._release()
        if record.status == "duplicate":
            record.duplicate_of = self.taken.get(record.identity)
        return {"record": record.to_dict(), "reports": reports}

    @contextmanager
    def _watchdog(self, core: CoreInput) -> Iterator[None]:
        """gdb's own limit (the same --timeout) ends a slow analysis first and still yields a
        partial report; this catches a hang anywhere else, as the local batch's watchdog does."""
        finished = threading.Event()
        timer = threading.Timer(self.limit, self._overran, args=(core, finished))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            finished.set()
            timer.cancel()

    def _overran(self, core: CoreInput, finished: threading.Event) -> None:
        if finished.is_set():
            return
        # The client records the core as timed out and cancels its task, so that the worker's
        # death below does not send the core to another worker to hang there too.
        self._worker.log_event(self.name, {"overran": core.path})
        if finished.wait(OVERRUN_EXIT_SECONDS):
            return
        _end_this_process()


def _end_this_process() -> None:
    """A thread stuck in a core cannot be stopped; the worker process can. Its gdb processes
    (each in its own process group) go first; the nanny starts a fresh worker."""
    try:
        import psutil

        for child in psutil.Process().children(recursive=True):
            try:
                child.kill()
            except psutil.Error:
                pass
    except ImportError:
        pass
    os._exit(OVERRUN_EXIT_STATUS)


def analyze_task(batch: str, core: CoreInput) -> dict[str, Any]:
    """The task a cluster batch submits for each core: {"record": dict, "reports": {path: text}}."""
    worker = get_worker()
    plugin = worker.plugins.get(batch)
    if not isinstance(plugin, BatchWorkerPlugin):
        raise WorkerUnfit(f"{worker.address} has not joined batch {batch}")
    return plugin.analyze(core)


def dask_setup(worker) -> None:  # noqa: ARG001
    """Preload of the workers of a cluster started by the batch (--cluster local:N): Ctrl-C
    reaches the whole process group, and the batch alone decides how to stop, as it does with
    its own worker processes. A worker restarted by its nanny runs this again."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
