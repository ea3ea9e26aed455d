"""The watcher: every thread of every process it watches is a ptrace tracee; a fatal signal is
held at its first delivery, the process's core is written, the report made, and the signal let
through, so that the process dies of it as it would have.

One loop serves everything (coreanalyze.capture.events): the watched processes' stops, their
children's deaths, the reporter's answers and the watcher's own signals all wake it, so a held
process never waits on a busy watcher and a healthy one is never stopped by it but for the
kernel's events (a new thread, a fork, an exec, a signal), each let through at once.

The decisions, signal by signal (docs/capture.md):
- a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS) whose disposition
  is the default one: the process is held, its core written and analyzed, then the signal goes;
- the same signal where the program has a handler (faulthandler, absl's, TensorFlow's): the
  core is written at this first delivery, where the fault is, and the handler runs; when the
  process then dies (the handler re-raises, or exits non-zero) that core is reported. A process
  that handled its fault and lived on, or exited 0, recovered: its core is removed;
- an ignored, sent (not kernel-raised) signal, and every other signal: let through untouched.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from coreanalyze.capture import procfs, ptrace
from coreanalyze.capture.corewriter import HeldThread, read_thread, write_core
from coreanalyze.capture.requests import CrashRequest

# How long the threads of a crashed process may take to stop before the core is written
# without the ones that did not (a thread in uninterruptible sleep on a hung file system).
STOP_DEADLINE = 3.0


@dataclass
class WatchedProcess:
    tgid: int
    argv: list[str] = field(default_factory=list)
    core: str | None = None  # written at its first fatal signal
    signal: int | None = None
    siginfo: bytes = b""
    core_problem: str | None = None
    handler_ran: bool = False  # the program's own handler got the first delivery
    requested: bool = False  # its report is asked for (or written)
    peak_rss: int | None = None
    held: list[tuple[int, int]] = field(default_factory=list)  # (tid, signal to deliver) while a report is made


@dataclass
class Watcher:
    """Watches processes and reports their crashes. `request` hands a CrashRequest to the
    reporter (returns at once); the watcher is told of the answer through `reported()`."""

    out_dir: Path
    request: Callable[[CrashRequest], None]
    say: Callable[[str], None]
    threads: dict[int, int] = field(default_factory=dict)  # tid -> tgid
    processes: dict[int, WatchedProcess] = field(default_factory=dict)
    exits: dict[int, int] = field(default_factory=dict)  # tgid -> wait status, of processes that ended
    memory: procfs.MemoryCgroup | None = None
    oom_kills_before: int | None = None
    command: int | None = None  # the process `run` started: its own SIGKILL is always reported

    # --- tracees in and out --------------------------------------------------------------------

    def adopt(self, tid: int, tgid: int | None = None) -> None:
        """A tracee the kernel attached for us (a new thread, a forked child) or we seized."""
        tgid = tgid or procfs.thread_group(tid) or tid
        self.threads[tid] = tgid
        if tgid not in self.processes:
            self.processes[tgid] = WatchedProcess(tgid, procfs.cmdline(tgid))
            if self.memory is None:
                self.memory = procfs.memory_cgroup(tgid)
                self.oom_kills_before = self.memory.oom_kills()

    def seize_process(self, pid: int) -> None:
        """Seize every thread of a running process; threads started meanwhile are seized by the
        kernel for us (PTRACE_O_TRACECLONE) or found by listing again."""
        seized: set[int] = set()
        while True:
            fresh = [t for t in procfs.thread_ids(pid) if t not in seized]
            if not fresh:
                break
            for tid in fresh:
                try:
                    ptrace.seize(tid)
                except ptrace.PtraceError as e:
                    if ptrace.gone(e):
                        continue
                    raise
                seized.add(tid)
                self.adopt(tid, pid)
        if not seized:
            raise ProcessLookupError(pid)

    def release_all(self) -> None:
        """Let every watched thread go (the watch steps aside): each is stopped first, as
        PTRACE_DETACH asks, and detached with any signal it was about to get."""
        for tid in list(self.threads):
            try:
                ptrace.interrupt(tid)
            except OSError:
                pass
        deadline = time.monotonic() + STOP_DEADLINE
        pending = set(self.threads)
        while pending and time.monotonic() < deadline:
            stop = ptrace.wait(block=False)
            if stop is None:
                time.sleep(0.005)
                continue
            pending.discard(stop.tid)
            if stop.exited or stop.tid not in self.threads:
                continue
            sig = stop.signal if stop.signal_delivery else 0
            try:
                ptrace.detach(stop.tid, sig)
            except OSError:
                pass
        for process in self.processes.values():
            for tid, sig in process.held:
                try:
                    ptrace.detach(tid, sig)
                except OSError:
                    pass
        self.threads.clear()

    # --- the loop's one step -----------------------------------------------------------------

    def handle(self, stop: ptrace.Stop) -> None:
        tid = stop.tid
        if stop.exited:
            self._gone(stop)
            return
        if tid not in self.threads:
            self.adopt(tid)  # its parent's clone/fork event is still on its way
        try:
            if stop.event in ptrace.NEW_TRACEE_EVENTS:
                self.adopt(ptrace.event_message(tid))  # a thread, or a process of its own (its Tgid says)
                ptrace.cont(tid)
            elif stop.event == ptrace.EVENT_EXEC:
                self._exec(tid)
                ptrace.cont(tid)
            elif stop.event == ptrace.EVENT_STOP:
                if stop.group_stop:
                    ptrace.listen(tid)
                else:
                    ptrace.cont(tid)
            elif stop.signal_delivery and stop.signal in ptrace.FATAL_SIGNALS:
                self._fatal(tid, stop.signal)
            elif stop.signal_delivery:
                ptrace.cont(tid, stop.signal)
            else:
                ptrace.cont(tid)
        except ptrace.PtraceError as e:
            if not ptrace.gone(e):
                raise

    def _exec(self, tid: int) -> None:
        """After exec only the exec'ing thread is left, under the leader's id."""
        tgid = self.threads[tid]
        former = ptrace.event_message(tid)
        for other, group in list(self.threads.items()):
            if group == tgid and other != tid:
                del self.threads[other]
        if former != tid:
            self.threads.pop(former, None)
        process = self.processes.get(tgid)
        if process is not None:
            process.argv = procfs.cmdline(tgid)

    def _gone(self, stop: ptrace.Stop) -> None:
        tgid = self.threads.pop(stop.tid, None)
        if tgid is None:
            tgid = stop.tid
        if stop.tid != tgid and any(g == tgid for g in self.threads.values()):
            return  # one thread of a live process
        for other, group in list(self.threads.items()):
            if group == tgid:
                del self.threads[other]
        self.exits[tgid] = stop.status
        process = self.processes.pop(tgid, None)
        if process is None:
            return
        if process.core is not None and not process.requested:
            if stop.killed_by is None and stop.exit_code == 0:
                # It handled its fault and exited cleanly: it recovered, there is nothing to report.
                _remove(process.core)
                return
            self._ask(process, died=stop.status)
        elif process.core is None and stop.killed_by == signal.SIGKILL and (tgid == self.command or self._oom_kills() > 0):
            # SIGKILL is also how launchers and kernel managers stop their processes: a report
            # for the command itself, and for any process when the memory cgroup counted an OOM kill.
            self._ask(process, died=stop.status, killed=True)

    # --- a fatal signal ------------------------------------------------------------------------

    def _fatal(self, tid: int, sig: int) -> None:
        tgid = self.threads[tid]
        process = self.processes[tgid]
        info = ptrace.siginfo(tid)
        _signo, _errno, code = ptrace.unpack_siginfo(info)
        raised_by_kernel = code > 0  # SI_USER, SI_TKILL and SI_QUEUE are <= 0
        how = procfs.dispositions(tgid)
        caught = how.catches(sig)
        if not caught and how.ignores(sig) and not raised_by_kernel:
            ptrace.cont(tid, sig)  # ignored and sent: nothing happens to the process
            return
        if process.core is None:
            process.signal, process.siginfo, process.handler_ran = sig, info, caught
            process.peak_rss = procfs.peak_rss(tgid)
            others = self._hold_others(tid, tgid)
            try:
                self._write_core(process, tid, others)
            finally:
                if caught:
                    self._release(others)
            if not caught:
                process.held = [(tid, sig), *others]
                self._ask(process)
                return
        elif not caught and not process.requested:
            # The handler gave the signal back (faulthandler, absl): the process dies now, and
            # the core of the first delivery is its report's.
            process.held = [(tid, sig)]
            self._ask(process)
            return
        ptrace.cont(tid, sig)

    def _hold_others(self, tid: int, tgid: int) -> list[tuple[int, int]]:
        """Stop every other thread of the process; (tid, signal to give back when it goes)."""
        others = [t for t, g in self.threads.items() if g == tgid and t != tid]
        for other in others:
            try:
                ptrace.interrupt(other)
            except ptrace.PtraceError:
                pass
        held: list[tuple[int, int]] = []
        deadline = time.monotonic() + STOP_DEADLINE
        waiting = set(others)
        while waiting and time.monotonic() < deadline:
            progressed = False
            for other in list(waiting):
                stop = ptrace.wait(other, block=False)
                if stop is None:
                    continue
                progressed = True
                waiting.discard(other)
                if stop.exited:
                    self.threads.pop(other, None)
                    continue
                if stop.event in ptrace.NEW_TRACEE_EVENTS:
                    self.adopt(ptrace.event_message(other))
                # A signal on its way to this thread (a second thread crashing at the same time)
                # is given back when the thread goes.
                held.append((other, stop.signal if stop.signal_delivery else 0))
            if not progressed:
                time.sleep(0.002)
        if waiting:
            self.say(f"{len(waiting)} thread(s) of process {tgid} did not stop in time; the core has the others")
        return held

    def _write_core(self, process: WatchedProcess, tid: int, others: list[tuple[int, int]]) -> None:
        threads: list[HeldThread] = []
        for t in [tid, *(o for o, _ in others)]:
            held = read_thread(t)
            if held is not None:
                threads.append(held)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        name = process_name(process.argv)
        path = self.out_dir / f"core.{name}.{process.tgid}"
        try:
            written = write_core(process.tgid, threads, process.signal or 0, process.siginfo, str(path))
        except OSError as e:
            self.say(f"could not write the core of process {process.tgid} to {path}: {e.strerror or e}")
            process.core_problem = f"the core could not be written: {e.strerror or e}"
            _remove(str(path))
            return
        process.core = written.path
        process.core_problem = written.problem

    def _release(self, held: list[tuple[int, int]]) -> None:
        for tid, sig in held:
            try:
                ptrace.cont(tid, sig)
            except ptrace.PtraceError:
                pass

    # --- reports ---------------------------------------------------------------------------------

    def _oom_kills(self) -> int:
        """OOM kills the memory cgroup counted since the watch began."""
        now = self.memory.oom_kills() if self.memory else None
        return now - self.oom_kills_before if now is not None and self.oom_kills_before is not None else 0

    def _ask(self, process: WatchedProcess, died: int | None = None, killed: bool = False) -> None:
        process.requested = True
        self.request(
            CrashRequest(
                pid=process.tgid,
                argv=process.argv,
                core=process.core,
                signal=process.signal,
                handler_ran=process.handler_ran,
                core_problem=process.core_problem,
                died=died,
                killed=killed,
                oom_kills=self._oom_kills() if self.memory and self.memory.events else None,
                cgroup_peak=self.memory.peak_bytes() if self.memory else None,
                cgroup_limit=self.memory.limit_bytes() if self.memory else None,
                peak_rss=process.peak_rss,
                out_dir=str(self.out_dir),
            )
        )
        if process.held:
            self.processes[process.tgid] = process  # still alive until its held threads go

    def reported(self, pid: int) -> None:
        """The report of `pid` is written: its held threads go, with their signals."""
        process = self.processes.get(pid)
        if process is None:
            return
        held, process.held = process.held, []
        # The others first: the signalled thread's signal ends them all.
        self._release(list(reversed(held)))

    @property
    def holding(self) -> bool:
        return any(p.held for p in self.processes.values())


def process_name(argv: list[str]) -> str:
    """A short, file-name-safe name: the script of `python script.py`, the module of `python -m
    module`, else the program."""
    from coreanalyze.base.safenames import safe_stem

    name = os.path.basename(argv[0]) if argv else "process"
    if name.startswith("python") and len(argv) > 1:
        if argv[1] == "-m" and len(argv) > 2:
            name = argv[2]
        elif not argv[1].startswith("-"):
            name = os.path.basename(argv[1])
    return safe_stem(name, "process")[:40]


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
