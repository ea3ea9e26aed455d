"""The helper an armed process starts (coreanalyze.capture.guard): `python -m
coreanalyze.capture.helper --pid PID --out DIR`.

It detaches itself (a second fork; the first exits, so the armed process reaps it at once and
the helper is nobody's child to wait for), tells its pid, waits until the armed process has
allowed it to trace, seizes every thread, says "ready", and serves until the armed process and
everything it started have ended. Its lines go to the armed process's stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="coreanalyze.capture.helper")
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--by", default="guard")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    if os.fork() != 0:
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    talk = sys.stdout
    print(f"pid {os.getpid()}", file=talk, flush=True)
    if sys.stdin.readline().strip() != "go":
        return 1
    try:
        from coreanalyze.capture import ptrace
        from coreanalyze.capture.loop import block_wake_signals, watch_until_done
        from coreanalyze.capture.reporter import Reporter, ReporterOptions
        from coreanalyze.capture.watcher import Watcher
    except ImportError as e:
        print(f"the helper cannot import what it needs under {sys.executable} ({e})", file=talk, flush=True)
        return 1

    block_wake_signals()
    reporter = Reporter(ReporterOptions(by=args.by, timeout=args.timeout))

    def say(line: str) -> None:
        try:
            print(f"coreanalyze: {line}", file=sys.stderr, flush=True)
        except OSError:
            pass

    watcher = Watcher(out_dir=Path(args.out), request=reporter.ask, say=say)
    try:
        watcher.seize_process(args.pid)
    except (ptrace.PtraceError, ProcessLookupError) as e:
        print(f"cannot trace process {args.pid}: {getattr(e, 'strerror', None) or e}", file=talk, flush=True)
        reporter.close()
        return 1
    print("ready", file=talk, flush=True)
    talk.close()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    watch_until_done(watcher, reporter, say)
    reporter.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
