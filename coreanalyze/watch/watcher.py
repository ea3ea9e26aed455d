"""The watch loop: scan the watched directories, hand the cores that are complete to batch's
worker (one at a time, under the limits), then per record: systemd-coredump's metadata, the keep
policy, the record written for good, the original removed when asked; the summary and index
rewritten after each round.

Stopping (SIGTERM, Ctrl-C) interrupts whatever runs - an analysis, a shrink, a wait - except the
few steps that must not be cut (a record and the removal of its original): the cores in hand get
no record and are analyzed at the next start. A restart resumes from the records (results/) and
OUT/watch-state.json (state.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from coreanalyze.base.errors import AnalysisFailed, BadInput
from coreanalyze.batch.inputs import SYSTEMD_NAME, CoreInput, describe
from coreanalyze.batch.options import BatchOptions
from coreanalyze.batch.progress import Progress
from coreanalyze.batch.runner import LocalBatch, check_options
from coreanalyze.batch.store import BatchStore, CoreRecord
from coreanalyze.batch.summary import write_outputs
from coreanalyze.batch.worker import base_record
from coreanalyze.known import load_known
from coreanalyze.render.view import one_line
from coreanalyze.watch import journal, limits
from coreanalyze.watch.arrival import Arrivals
from coreanalyze.watch.coredump import fill_record, metadata
from coreanalyze.watch.keep import Keeper, KeepPolicy, may_remove
from coreanalyze.watch.state import MAX_ATTEMPTS, WatchState

DEFAULT_POLL = 2.0
DEFAULT_SETTLE = 30.0
DEFAULT_NICE = 10
DEFAULT_MIN_FREE = 64 << 20
# Cores handed to the worker at a time: the worker overlaps two cores (batch's pipelining), and
# each few are kept, recorded and their originals removed before the next are taken.
ROUND_CORES = 4


@dataclass
class WatchOptions:
    directories: list[str]
    batch: BatchOptions  # out, analysis options, --timeout, --known; one worker
    keep: KeepPolicy = field(default_factory=KeepPolicy)
    poll: float = DEFAULT_POLL  # seconds between scans
    settle: float = DEFAULT_SETTLE  # unchanged this long, a file that is not a whole ELF core is taken
    nice: int = DEFAULT_NICE
    memory_limit: int | None = None  # bytes of address space (soft RLIMIT_AS)
    journal: str | None = None  # a journal dump (export or JSON); None: journalctl when there is one
    once: bool = False  # analyze what is complete now, then stop
    min_free: int = DEFAULT_MIN_FREE  # below this free space in OUT's file system, wait


@dataclass
class WatchResult:
    out: Path
    analyzed: int = 0  # records written in this run
    removed: int = 0  # originals removed (--delete-analyzed)
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)


class _Engine(LocalBatch):
    """Batch's local engine, its cores' attempts counted across restarts."""

    def __init__(self, options: BatchOptions, store: BatchStore, claimed: dict[str, str], on_record, state: WatchState):
        super().__init__(options, store, claimed, on_record)
        self.state = state

    def started(self, core: CoreInput) -> None:
        self.state.started(core.file_identity, core.path)


class _Stop:
    """SIGTERM and Ctrl-C: interrupt now, or at the end of a step that must not be cut."""

    def __init__(self) -> None:
        self.requested = False
        self.critical = 0

    def handler(self, signum, frame) -> None:  # noqa: ARG002
        self.requested = True
        if not self.critical:
            raise KeyboardInterrupt

    @contextmanager
    def uncut(self) -> Iterator[None]:
        self.critical += 1
        try:
            yield
        finally:
            self.critical -= 1
        if not self.critical and self.requested:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[None]:
        previous = {s: signal.signal(s, self.handler) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, h in previous.items():
                signal.signal(s, h)


class Watcher:
    def __init__(self, options: WatchOptions, say: Callable[[str], None]):
        self.options = options
        self.say = say
        self.store = BatchStore(options.batch.out)
        self.result = WatchResult(out=Path(options.batch.out))
        self.stop = _Stop()
        self.arrived: list[CoreRecord] = []
        self.paused = False

    # ------------------------------------------------------------------ set-up

    def _prepare(self) -> None:
        options = self.options
        check_options(options.batch)
        for d in options.directories:
            if not os.path.isdir(d):
                raise BadInput(f"{d}: not a directory")
            if os.path.realpath(d) == os.path.realpath(options.batch.out):
                raise BadInput(f"--out {options.batch.out} is a watched directory: choose another")
        if options.journal is not None and not os.path.isfile(options.journal):
            raise BadInput(f"--journal {options.journal}: no such file")
        self.store.prepare(resume=True)  # a restart continues where the last run stopped
        limits.lower_priority(options.nice)
        limits.limit_memory(options.memory_limit)
        self.known = load_known(options.batch.known_files)  # a file that cannot be used: one line, exit 2
        self.state = WatchState(self.store.out)
        records = self.store.load(self.result.warnings)
        self.records = {r.key: r for r in records}
        claimed = {r.identity: r.path for r in records if r.status != "duplicate"}
        self.engine = _Engine(options.batch, self.store, claimed, self._on_record, self.state)
        self.keeper = Keeper(self.store, options.keep, options.batch, records, self.result.warnings)
        self.arrivals = Arrivals(options.directories, [str(options.batch.out)], options.settle)
        self.journal = journal.JournalFile(options.journal) if options.journal else None

    def _on_record(self, record: CoreRecord) -> None:
        # On disk from now on: a round cut short (OUT full, a stop) finds it again (_again).
        self.records[record.key] = record
        self.state.finished(record.file_identity)
        self.arrived.append(record)

    # ------------------------------------------------------------------ the loop

    def run(self) -> WatchResult:
        self._prepare()
        self.say(f"watching {', '.join(self.options.directories)}; reports and index in {self.store.out}")
        with self.stop.installed():
            try:
                while True:
                    ready = self.arrivals.scan()
                    changed = False
                    if ready:
                        try:
                            changed = self._round(ready)
                        except AnalysisFailed as e:  # OUT cannot be written (full, removed)
                            self._pause(str(e))
                    if changed:
                        self._summarize()
                    if self.options.once and not ready and not self.arrivals.waiting:
                        break
                    time.sleep(self.options.poll)
            except KeyboardInterrupt:
                self.result.interrupted = True
            finally:
                self._shut_down()
        return self.result

    def _shut_down(self) -> None:
        with self._ignoring_signals():
            self.engine.shut_down()
            try:
                self.state.interrupted()
            except AnalysisFailed as e:
                self.result.warnings.append(str(e))
            self._summarize()

    @contextmanager
    def _ignoring_signals(self) -> Iterator[None]:
        self.stop.critical += 1  # a second SIGTERM while stopping waits for the stop
        try:
            yield
        finally:
            self.stop.critical -= 1

    def _pause(self, why: str) -> None:
        """OUT is full or cannot be written: the cores in hand wait in the watched directories."""
        self.engine.shut_down()
        try:
            self.state.interrupted()
        except AnalysisFailed:
            pass
        if not self.paused:
            self.say(f"waiting: {why}")
        self.paused = True

    def _room(self) -> bool:
        try:
            free = shutil.disk_usage(self.store.out).free
        except OSError as e:
            self._pause(f"cannot read {self.store.out}: {e.strerror or e}")
            return False
        if free < self.options.min_free:
            self._pause(f"{self.store.out} has {free >> 10} KiB free, under --min-free {self.options.min_free >> 10} KiB")
            return False
        if self.paused:
            self.say("resuming: space in the output directory again")
            self.paused = False
        return True

    def _summarize(self) -> None:
        with self.stop.uncut():
            try:
                write_outputs(self.store, list(self.records.values()), known=self.known)
            except AnalysisFailed as e:
                self.result.warnings.append(str(e))

    # ------------------------------------------------------------------ one round

    def _round(self, ready: list[tuple[str, str]]) -> bool:
        """The cores complete now: analyzed, kept, recorded. Whether any record changed."""
        self.arrived = []  # a round cut short left its records to _again
        cores: dict[str, CoreInput] = {}
        for path, under in ready:
            try:
                cores[path] = describe(path, under)
            except OSError:
                continue  # removed meanwhile
        by_path = {r.path: r for r in self.records.values()}
        fresh = []
        for core in cores.values():
            earlier = by_path.get(core.path)
            if earlier is not None and earlier.file_identity == core.file_identity:
                self._again(earlier, core)
            else:
                fresh.append(core)
        pending, _ = self.engine.sort_out(fresh, list(self.records.values()))
        todo = []
        for core in pending:
            tries = self.state.count(core.file_identity)
            if tries >= MAX_ATTEMPTS:
                record = base_record(core)
                record.reason = f"not analyzed again: the watcher ended {tries} times with this core in hand (killed, out of memory?)"
                self.engine.keep(record)
            else:
                todo.append(core)
        early, self.arrived = self.arrived, []  # duplicates, cores given up on: no analysis
        for record in early:
            self._finish(record, cores.get(record.path))
        changed = bool(early)
        for start in range(0, len(todo), ROUND_CORES):
            if not self._room():
                break
            self.keeper.measure()
            self.engine.run(todo[start:start + ROUND_CORES], Progress(len(todo), start, False))
            arrived, self.arrived = self.arrived, []
            for record in arrived:
                self._finish(record, cores.get(record.path))
            changed = changed or bool(arrived)
        return changed

    def _again(self, record: CoreRecord, core: CoreInput) -> None:
        """A core with a record from an earlier run: its keeping was cut short, or its original
        still waits to be removed."""
        if record.kept is None:
            self._finish(record, core)
            return
        with self.stop.uncut():
            if self.options.keep.delete_analyzed and may_remove(record, self.store):
                self._remove(record.path)
            self.arrivals.finished(core.path)

    def _finish(self, record: CoreRecord, core: CoreInput | None) -> None:
        if core is None:
            return  # not one of this round's (cannot happen: records come for cores sent)
        if record.status == "failed" and f"cannot write {self.store.out}" in (record.reason or ""):
            # Its report could not be written (OUT is full): not a verdict on the core.
            self._unrecord(record)
            self._pause(record.reason or "")
            return
        fill_record(record, metadata(core, self._journal_entry(core)))
        record, honoured = self.keeper.keep(record, core)
        with self.stop.uncut():
            self.store.write(record)
            self.records[record.key] = record
            removed = self.options.keep.delete_analyzed and record.status != "failed" and (honoured or may_remove(record, self.store))
            if removed:
                self._remove(core.path)
            self.arrivals.finished(core.path)
        self.result.analyzed += 1
        self.say(_line(record, removed))

    def _unrecord(self, record: CoreRecord) -> None:
        try:
            (self.store.results / f"{record.key}.json").unlink()
        except OSError:
            pass
        if self.engine.claimed.get(record.identity) == record.path:
            del self.engine.claimed[record.identity]

    def _remove(self, path: str) -> None:
        try:
            os.unlink(path)
            self.result.removed += 1
        except FileNotFoundError:
            pass
        except OSError as e:
            self.result.warnings.append(f"{path}: not removed: {e.strerror or e}")

    def _journal_entry(self, core: CoreInput) -> dict[str, str] | None:
        pid = core.pid
        usec = core.systemd.usec if core.systemd else None
        if (core.xattrs.get("timestamp") or "").isdigit():
            usec = int(core.xattrs["timestamp"])
        if self.journal is not None:
            return journal.entry_for(self.journal.current(), core.path, pid, usec)
        if core.xattrs or SYSTEMD_NAME.match(core.name):  # only systemd's cores are in its journal
            return journal.entry_for(journal.from_journalctl(core.path), core.path, pid, usec)
        return None


def _line(record: CoreRecord, removed: bool) -> str:
    """One line per core for the service's log (names and signatures come from the cores)."""
    what = one_line(record.signature or record.reason or "", 160)
    kept = f" [kept {record.kept}{', original removed' if removed else ''}]" if record.kept else ""
    seconds = f" ({record.seconds:.1f} s)" if record.seconds is not None else ""
    return f"{record.status:<9} {one_line(record.path, 300)}: {what}{kept}{seconds}"


def run_watch(options: WatchOptions, say: Callable[[str], None]) -> WatchResult:
    return Watcher(options, say).run()
