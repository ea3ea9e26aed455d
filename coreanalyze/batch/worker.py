"""One worker process of a batch: analyzes the cores it is sent, one at a time, for its life.

A worker keeps what is worth keeping between cores — a pool of warm gdb processes, when this
installation has one, so that the next core of the same build opens in milliseconds — and
turns every outcome of one core into a CoreRecord: a broken core is a record with its reason,
never an exception that reaches the batch.

Protocol over the worker's pipe (tuples):
    batch -> worker   ("analyze", CoreInput) | ("claim-answer", bool) | ("none",) | ("stop",)
    worker -> batch   ("claim", identity) | ("next",) | ("done", record dict)
The claim asks the batch, which alone knows every core in flight, whether this content was
already analyzed (a plain core and its compressed copy share an identity). "next" says that
gdb is done with the core in hand: the batch sends the next core ("analyze"), or "none". A
forked child finishes the first core (the stages after gdb, its reports) while this process has
gdb load and unwind the second: a worker has at most two cores, and their records come in the
order they were sent.
"""

from __future__ import annotations

import gc
import os
import signal
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable

from coreanalyze.base import cachesize, filefacts, later
from coreanalyze.base.errors import CoreAnalyzeError
from coreanalyze.base.model import Report, to_jsonable
from coreanalyze.base.signals import SIGNAL_NAMES
from coreanalyze.batch.facts import crash_facts, fill_facts, hostname_from_core
from coreanalyze.batch.identity import content_identity
from coreanalyze.batch.inputs import MAX_CORE_BYTES, CoreInput, materialized
from coreanalyze.batch.store import BatchStore, CoreRecord, job_fields, report_stem
from coreanalyze.corefile.apportcrash import read_crash_fields
from coreanalyze.gpu.stage import name_as_given
from coreanalyze.known import KnownCrashes, load_known
from coreanalyze.known.onreport import recognize
from coreanalyze.pipeline.analyze import AnalyzeOptions
from coreanalyze.process import forked

MAX_FIELD_CHARS = 2000  # bound on one text field copied from a report into a record
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class WorkerConfig:
    out: str
    options: AnalyzeOptions
    tmp_dir: str | None = None
    max_core_bytes: int = MAX_CORE_BYTES
    parent_pid: int = 0
    known_files: tuple[str, ...] = ()  # --known: the user's known-crash files (checked by the batch)


def _clip(text: str | None) -> str | None:
    if text is None:
        return None
    return text if len(text) <= MAX_FIELD_CHARS else text[:MAX_FIELD_CHARS] + "…"


def _signal_name(number: str | None) -> str | None:
    if not number or not number.isdigit():
        return None
    return SIGNAL_NAMES.get(int(number), f"signal {number}")


def base_record(core: CoreInput) -> CoreRecord:
    """What is known before analysis: names, systemd's attributes, the file's own facts."""
    when, source = core.timestamp
    host, host_source = core.host
    return CoreRecord(
        identity=core.file_identity,
        file_identity=core.file_identity,
        path=core.path,
        status="failed",
        compression=core.compression,
        size=core.size,
        timestamp=when,
        timestamp_source=source,
        host=host,
        host_source=host_source,
        pid=core.pid,
        executable=core.xattrs.get("exe") or None,
        signal=_signal_name(core.xattrs.get("signal")),
        xattrs=dict(core.xattrs),
    )


def fill_from_report(record: CoreRecord, report: Report) -> None:
    cls = report.classification
    record.signature = _clip(cls.signature) or None
    record.category = cls.category
    record.fault_kind = cls.fault_kind
    record.culprit = {"function": _clip(cls.culprit.function), "module": _clip(cls.culprit.module)}
    record.summary = _clip(cls.summary) or None
    record.confidence = cls.confidence
    if report.core is not None:
        record.pid = report.core.pid if report.core.pid is not None else record.pid
        record.executable = _clip(report.core.executable) or record.executable
        record.signal = report.core.signal.name or record.signal
    gpu = cls.gpu
    if gpu is not None and gpu.gpu_core_status == "read" and report.core is not None and report.core.arch != "cuda":
        record.gpu_core = _clip(gpu.gpu_core)
    if report.job is not None:
        job = to_jsonable(report.job)
        job.pop("verdict", None)
        job.pop("variables", None)
        record.job = job_fields(job)
    if report.core is not None:
        record.ppid = report.core.ppid
        record.sender_pid = report.core.signal.sender_pid
    attempts = report.environment.get("fetch_attempts") or []
    record.wheels_downloaded = [_clip(a["wheel"]) for a in attempts if a.get("downloaded") and a.get("wheel")]


@lru_cache(maxsize=4)
def known_crashes(files: tuple[str, ...]) -> KnownCrashes:
    """Loaded once per worker; the batch checked the files before it started."""
    return load_known(files)


def analyze_one(
    core: CoreInput,
    config: WorkerConfig,
    claim: Callable[[str], bool],
    gdb_pool: Any = None,
    write_report: Callable[[str, str, str], str] | None = None,
) -> CoreRecord:
    """Analyze one core and write its reports; every failure becomes the record's reason.

    `write_report(stem, extension, text)` -> path relative to the output directory; by default
    the reports go straight into `config.out` (a cluster worker hands them back instead)."""
    return begin_one(core, config, claim, gdb_pool, write_report).finish()


class CoreWork:
    """One core's work begun (begin_one): finish() completes it once and returns its record."""

    def __init__(self, record: CoreRecord, started: float, held: ExitStack, rest: Callable[[], None] | None) -> None:
        self.record = record
        self._started = started
        self._held = held  # the core's materialized copy and its analysis
        self._rest = rest
        self._finished = False

    @property
    def complete(self) -> bool:
        """Nothing is left to do (a duplicate, a core that failed before its debugger)."""
        return self._rest is None

    def finish_beside(self, worker_pid: int) -> Callable[[], CoreRecord]:
        """finish() in a forked child, on another CPU while this process goes on with the next
        core (its gdb work); the returned function waits for the child's record. Where forking
        is not safe (threads still running), finish() here and now."""

        def in_child() -> CoreRecord:
            record = self.finish()
            _before_os_exit()
            return record

        def before() -> None:
            _die_with_parent(worker_pid)  # a child of a worker the batch kills goes with it
            forked.lower_priority()  # the next core's gdb work is what the batch waits for

        job = forked.fork(in_child, before=before)
        if job is None:
            record = self.finish()
            return lambda: record

        def collect() -> CoreRecord:
            record = job.result()
            if record is None:  # the child died or failed: its files may be half written
                record = self.record
                record.status, record.reason = "failed", "the process finishing the analysis ended without a result"
                record.seconds = round(time.monotonic() - self._started, 3)
            self.release()
            return record

        return collect

    def release(self) -> None:
        """Close this process's copies of what a child finished with (the files it removed are
        gone already)."""
        self._rest = None
        try:
            self._held.close()
        except Exception:  # noqa: BLE001, S110 - the child did the work; this is only closing
            pass

    def finish(self) -> CoreRecord:
        if not self._finished:
            self._finished = True
            try:
                with self._held:
                    if self._rest is not None:
                        self._rest()
            except Exception as e:  # noqa: BLE001 - see _failed
                _failed(self.record, e)
            finally:
                self.record.seconds = round(time.monotonic() - self._started, 3)
        return self.record


def begin_one(
    core: CoreInput,
    config: WorkerConfig,
    claim: Callable[[str], bool],
    gdb_pool: Any = None,
    write_report: Callable[[str, str, str], str] | None = None,
) -> CoreWork:
    """A core's analysis up to the end of its debugger's work (see analyze_one); the returned
    CoreWork does the rest."""
    from coreanalyze.pipeline.analyze import begin_analysis

    started = time.monotonic()
    record = base_record(core)
    store = write_report if write_report is not None else BatchStore(config.out).write_report
    held = ExitStack()
    try:
        local = held.enter_context(materialized(core, config.tmp_dir, config.max_core_bytes))
        if core.compression is not None:
            record.identity = content_identity(local)
        if not claim(record.identity):
            record.status = "duplicate"
            return CoreWork(record, started, held.pop_all(), None)
        options = replace(config.options, gpu_core_beside=core.path)  # not beside a decompressed copy
        if core.compression == "crash":  # apport's report names the program that dumped it
            options = replace(options, python=options.python or read_crash_fields(core.path).program)
        analysis = begin_analysis(local, options, gdb_pool=gdb_pool)
        held.callback(analysis.abandon)  # after finish(): nothing left to release

        def rest() -> None:
            _report_and_record(analysis.finish(), record, core, local, config, store)

        return CoreWork(record, started, held.pop_all(), rest)
    except Exception as e:  # noqa: BLE001 - see _failed
        _failed(record, e)
        return CoreWork(record, started, held.pop_all(), None)
    finally:
        held.close()


def _report_and_record(result, record: CoreRecord, core: CoreInput, local: str, config: WorkerConfig, store) -> None:
    from coreanalyze.render import render
    from coreanalyze.render.jsonout import render as render_json

    report = result.report
    name_as_given(report, local, core.path)  # not the temporary decompressed copy
    stem = report_stem(core.path, record.identity)
    fill_from_report(record, report)
    fill_facts(record, report)
    if record.host_source != "xattr":
        hostname = hostname_from_core(local, report)
        if hostname:
            record.host, record.host_source = hostname, "environment"
    # classification.known: null when no known crash matched
    record.known = recognize(report, known_crashes(config.known_files), crash_facts(record))
    record.report_json = store(stem, ".json", render_json(report))
    record.report_html = store(stem, ".html", render(report, "html"))
    record.status = "ok" if result.exit_code == 0 else "partial"
    record.reason = _clip(result.failure)


def _before_os_exit() -> None:
    """What a normal exit would do and os._exit does not (a worker, a child finishing a core):
    wait for the cache entries under way for later analyses and the cache's trim, and keep the
    file facts learnt."""
    later.wait()
    cachesize.wait()
    filefacts.save_all()


def _failed(record: CoreRecord, error: Exception) -> None:
    """A core can break a parser in ways nobody foresaw; the batch goes on without it."""
    record.status = "failed"
    if isinstance(error, CoreAnalyzeError):
        record.reason = _clip(str(error)) or type(error).__name__
    else:
        record.reason = _clip(f"internal error: {type(error).__name__}: {error}")


# ---------------------------------------------------------------------------------- process


def _terminate(signum, frame) -> None:  # noqa: ARG001
    # Unwinds through the gdb session's context manager, which kills gdb's process group.
    raise SystemExit(128 + signum)


def _die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGTERM this worker when the batch process dies (even by SIGKILL),
    so that no worker or gdb outlives it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if parent_pid and os.getppid() != parent_pid:
        raise SystemExit(0)  # the batch died before the request above took effect


def open_gdb_pool(config: WorkerConfig) -> Any:
    """This worker's pool of warm gdb processes, held for the worker's whole life, or None when
    none can start (each core then gets a fresh gdb, as `coreanalyze CORE` does).

    Cores of the same build are sent to the same worker (see runner._Queue), so its pool finds
    the program and libraries already loaded."""
    from coreanalyze.gdb.opening import warm_pool

    return warm_pool(config.options)


def close_gdb_pool(gdb_pool: Any) -> None:
    close = getattr(gdb_pool, "close", None)
    if callable(close):
        close()


def death_reason(exitcode: int | None, what: str = "the analysis process") -> str:
    """Why a child process of the batch ended without a result, from its exit code."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return f"{what} died by {name}{hint}"
    return f"{what} exited unexpectedly (status {exitcode})"


def end_child(process, conn, wait: float) -> None:
    """SIGTERM (a child kills its gdb on the way out), then SIGKILL; its pipe closed."""
    if process.is_alive():
        process.terminate()
        process.join(wait)
    if process.is_alive():
        process.kill()
        process.join(wait)
    conn.close()


def become_worker(parent_pid: int) -> None:
    """Signals of a batch's child process: Ctrl-C reaches the whole process group, but the batch
    alone decides how to stop; SIGTERM unwinds (and so ends its gdb); it dies with the batch."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminate)
    _die_with_parent(parent_pid)


def worker_main(conn, config: WorkerConfig) -> None:
    """Entry point of a worker process."""
    become_worker(config.parent_pid)
    gdb_pool = open_gdb_pool(config)

    def claim(identity: str) -> bool:
        conn.send(("claim", identity))
        answer = conn.recv()
        return bool(answer[0] == "claim-answer" and answer[1])

    def receive() -> tuple:
        try:
            return conn.recv()
        except (EOFError, OSError):
            return ("stop",)

    try:
        message = receive()
        previous: Callable[[], CoreRecord] | None = None  # the record of a core being finished beside
        while message[0] == "analyze":
            work = begin_one(message[1], config, claim, gdb_pool)
            if previous is not None:  # its child had this core's gdb work to finish it in
                conn.send(("done", previous()))
                previous = None
            if work.complete:
                conn.send(("done", work.finish()))
                message = receive()
                continue
            # gdb is done with this core: it is finished beside while the next one loads.
            previous = work.finish_beside(os.getpid())
            conn.send(("next",))
            message = receive()
            if message[0] != "analyze":
                conn.send(("done", previous()))
                previous = None
                if message[0] == "none":  # no core for now
                    message = receive()
    finally:
        close_gdb_pool(gdb_pool)
        _before_os_exit()  # a multiprocessing child leaves with os._exit
        gc.freeze()  # the exit's last garbage collection would walk every object for nothing
