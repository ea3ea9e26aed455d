"""The reporter: a process beside the watcher that turns each held or dead process into its
report (HTML and JSON in the output directory) and one line for stderr.

It is a child of the watcher made before anything is watched, so it is never traced itself and
the gdb it starts are its own children, not the watcher's. The watcher hands it a request and
goes on serving the watched processes; the answer comes back with a SIGUSR2.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from coreanalyze.capture.context import capture_info
from coreanalyze.capture.requests import CrashReply, CrashRequest


@dataclass
class ReporterOptions:
    by: str  # "run", "guard": how the crash was caught
    timeout: float = 300.0
    keep_core: bool = True


class Reporter:
    """The watcher's side: start the reporter process, ask, read answers."""

    def __init__(self, options: ReporterOptions):
        self.options = options
        self.outstanding = 0
        requests_r, self._requests = os.pipe()
        self._replies, replies_w = os.pipe()
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:  # the reporter
            os.close(self._requests)
            os.close(self._replies)
            code = 0
            try:
                _serve(requests_r, replies_w, parent, options)
            except BaseException:  # noqa: BLE001 - a child of a fork never returns into its parent's code
                code = 1
            os._exit(code)
        os.close(requests_r)
        os.close(replies_w)
        os.set_blocking(self._replies, False)
        self._buffer = b""
        self.alive = True

    def ask(self, request: CrashRequest) -> None:
        if not self.alive:
            raise BrokenPipeError("the reporter is gone")
        os.write(self._requests, request.to_line())
        self.outstanding += 1

    def answers(self) -> list[CrashReply]:
        replies = []
        while True:
            try:
                chunk = os.read(self._replies, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            replies.append(CrashReply.from_line(line))
            self.outstanding -= 1
        return replies

    def close(self) -> None:
        if self.alive:
            os.close(self._requests)
            self.alive = False


def _serve(requests_fd: int, replies_fd: int, parent: int, options: ReporterOptions) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the watched program
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    with os.fdopen(requests_fd, "rb") as requests:
        for line in requests:
            request = CrashRequest.from_line(line)
            try:
                reply = report_crash(request, options)
            except Exception as e:  # noqa: BLE001 - the watcher must get an answer to let the process go
                reply = CrashReply(request.pid, error=f"{type(e).__name__}: {e}")
            os.write(replies_fd, reply.to_line())
            try:
                os.kill(parent, signal.SIGUSR2)
            except OSError:
                return


def report_crash(request: CrashRequest, options: ReporterOptions) -> CrashReply:
    """Analyze the request's core (or say what is known of a process that left none) and write
    its HTML and JSON reports beside the core."""
    from coreanalyze.base.atomicfile import write_atomically
    from coreanalyze.render import render, verdict

    out = Path(request.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if request.core is not None:
        report, failure = _analyzed(request.core, options)
        stem = Path(request.core).name
    else:
        from coreanalyze.capture.killed import report_without_core

        report, failure = report_without_core(request), None
        from coreanalyze.capture.watcher import process_name

        stem = f"{'killed' if request.killed else 'crashed'}.{process_name(request.argv)}.{request.pid}"
    report.capture = capture_info(request, options.by, report.modules)
    if failure:
        report.warnings.append(failure)
    html_path, json_path = out / f"{stem}.html", out / f"{stem}.json"
    problem = None
    for attempt in range(2):
        try:
            write_atomically(html_path, render(report, "html"))
            write_atomically(json_path, render(report, "json"))
            break
        except OSError as e:
            if attempt == 0 and request.core is not None and request.core_problem and os.path.exists(request.core):
                # The core filled the disk and is incomplete: the report matters more.
                os.unlink(request.core)
                problem = "the incomplete core was removed to make room for the report"
                report.capture.core = None
                report.capture.problem = f"{request.core_problem}; {problem}"
                continue
            # The verdict still goes to stderr.
            problem = f"the report could not be written to {out} ({e.strerror or e})"
            html_path = json_path = None
    if request.core is not None and not options.keep_core:
        os.unlink(request.core)
    if request.core is None:
        line = report.classification.summary  # no frames: what is known is the whole verdict
    else:
        line = verdict(report, color=False).splitlines()[0]
    if request.core_problem:
        line += f" [{request.core_problem}]"
    if problem:
        line += f" [{problem}]"
    return CrashReply(request.pid, verdict=line, html=str(html_path) if html_path else None, json=str(json_path) if json_path else None)


def _analyzed(core: str, options: ReporterOptions):
    from coreanalyze.pipeline.analyze import AnalyzeOptions, analyze_core

    result = analyze_core(core, AnalyzeOptions(timeout=options.timeout))
    return result.report, result.failure
